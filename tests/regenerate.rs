//! The committed fixtures are exactly what the generator makes.

#[path = "../fixtures/gen/chat.rs"]
mod chat;
#[path = "../fixtures/gen/checkpoints.rs"]
#[allow(dead_code)]
pub mod checkpoints;
#[path = "../fixtures/gen/defects.rs"]
mod defects;
#[path = "../fixtures/gen/finetune.rs"]
pub mod finetune;
#[path = "../fixtures/gen/gguf.rs"]
pub mod gguf;
#[path = "../fixtures/gen/gguf_iq.rs"]
mod gguf_iq;
#[path = "../fixtures/gen/mismatch.rs"]
mod mismatch;
#[path = "../fixtures/gen/pieces.rs"]
mod pieces;
#[path = "../fixtures/gen/reach.rs"]
pub mod reach;
#[path = "../fixtures/gen/side_files.rs"]
mod side_files;
#[path = "../fixtures/gen/tokenizer_files.rs"]
pub mod tokenizer_files;
#[path = "../fixtures/gen/untrained.rs"]
pub mod untrained;
#[path = "../fixtures/gen/vocab.rs"]
#[allow(dead_code)]
pub mod vocab;
#[path = "../fixtures/gen/writer.rs"]
#[allow(dead_code)]
mod writer;

use std::path::Path;

fn files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn committed_fixtures_match_the_generator() {
    let tmp = tempfile::tempdir().unwrap();
    checkpoints::write_all(tmp.path()).unwrap();
    let committed = crate::common::fixtures();
    let made = files(tmp.path());
    assert!(!made.is_empty());
    for f in &made {
        let a = std::fs::read(tmp.path().join(f)).unwrap();
        let b = std::fs::read(committed.join(f)).unwrap_or_else(|_| {
            panic!("fixtures/{f} is missing: run `cargo run --example gen-fixtures`")
        });
        assert!(
            a == b,
            "fixtures/{f} differs from the generator: run `cargo run --example gen-fixtures`"
        );
    }
    // Nothing committed beside them that the generator no longer makes.
    let stale: Vec<String> = files(&committed)
        .into_iter()
        .filter(|f| !f.starts_with("gen/") && !made.contains(f))
        .collect();
    assert!(
        stale.is_empty(),
        "fixtures the generator does not make (delete them): {stale:?}"
    );
}
