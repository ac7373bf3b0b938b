//! A FIFO where a file beside the weights is read (config.json, a
//! tokenizer file, the index, a shard the index names, a split of a GGUF
//! model): said to be no regular file, never waited on (a FIFO's `open`
//! waits for a writer that never comes).

use std::path::Path;
use std::time::Duration;

use crate::common::{embscope, fixture_copy};

/// Replaces `dir/name` by a FIFO; false where `mkfifo` is not there.
fn fifo_for(dir: &Path, name: &str) -> bool {
    let path = dir.join(name);
    std::fs::remove_file(&path).unwrap();
    std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `args` with a time limit; expects the FIFO at `path` named on
/// stderr as no regular file. A command that needs the file stops there,
/// with exit code 2 and that one line; one that does not goes on, with a
/// note naming it.
fn names_the_fifo(args: &[&str], path: &Path) {
    let out = embscope()
        .args(args)
        .timeout(Duration::from_secs(20))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let said = format!("`{}` is not a regular file (a FIFO)", path.display());
    let noted = format!(
        "note: `{}` is unreadable (not a regular file (a FIFO)",
        path.display()
    );
    assert!(
        err.contains(&said) || err.contains(&noted),
        "{args:?}: {err}"
    );
    assert!(matches!(out.status.code(), Some(0..=2)), "{args:?}: {err}");
    if out.status.code() == Some(2) {
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn side_files_index_and_shards() {
    for name in [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "generation_config.json",
        "model.safetensors.index.json",
        "model-00002-of-00002.safetensors",
    ] {
        let tmp = fixture_copy("llama-sharded");
        if !fifo_for(tmp.path(), name) {
            return;
        }
        let model = tmp.path().display().to_string();
        let path = tmp.path().join(name);
        names_the_fifo(&["info", &model], &path);
        names_the_fifo(&["lookup", &model, "--token", "Ġking"], &path);
    }
}

#[test]
fn a_split_of_a_gguf_model() {
    let tmp = fixture_copy("gguf/split");
    if !fifo_for(tmp.path(), "llama-00002-of-00002.gguf") {
        return;
    }
    let first = tmp.path().join("llama-00001-of-00002.gguf");
    names_the_fifo(
        &["info", &first.display().to_string()],
        &tmp.path().join("llama-00002-of-00002.gguf"),
    );
}
