//! A model file truncated by another process while embscope has it mapped:
//! the read that meets the missing bytes ends the process with one line
//! naming the file and exit code 2, not a silent death by SIGBUS.
//!
//! The read has to fault, so it runs in a child: this test binary again,
//! asked for this one test, with the copy to read in [`CHILD`].

#![cfg(unix)]

use std::path::Path;
use std::process::Command;

use embscope::checkpoint::Checkpoint;
use embscope::roles::{Roles, Which};

use crate::common::fixture_copy;

/// Set in the child to the checkpoint directory it reads and truncates.
const CHILD: &str = "EMBSCOPE_TEST_TRUNCATE_UNDER_A_READ";

/// In the child: opens the checkpoint at `dir`, reads a row of its
/// embedding, truncates the shard holding it from another handle, and
/// reads another row, which faults.
fn read_after_truncation(dir: &Path) -> ! {
    let ckpt = Checkpoint::open(dir.to_str().unwrap(), "main").unwrap();
    let roles = Roles::resolve(&ckpt);
    let t = roles.matrix(&ckpt, Which::Embed).unwrap();
    let m = ckpt.matrix(t).unwrap();
    assert!(m.row(0).iter().any(|&x| x != 0.0));
    let shard = std::fs::OpenOptions::new()
        .write(true)
        .open(ckpt.file_of(t))
        .unwrap();
    shard.set_len(0).unwrap();
    let row = m.row(m.rows() - 1);
    panic!("a row was read from a truncated file: {row:?}");
}

#[test]
fn a_file_truncated_under_a_read_is_one_line_and_exit_2() {
    if let Some(dir) = std::env::var_os(CHILD) {
        read_after_truncation(Path::new(&dir));
    }
    let tmp = fixture_copy("llama-sharded");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "sigbus::a_file_truncated_under_a_read_is_one_line_and_exit_2",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let shard = tmp.path().join("model-00001-of-00002.safetensors");
    let line = format!(
        "embscope: `{}` changed while it was read (truncated?)",
        shard.display()
    );
    assert_eq!(err.lines().last(), Some(&*line), "{err}");
}
