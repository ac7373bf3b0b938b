//! Human output as snapshots, one per command on the fixtures: a change to
//! what users read shows up as a diff in `tests/snapshots/` to review
//! (`INSTA_UPDATE=always cargo test` rewrites them; review with git diff).

use crate::common::text;

#[test]
fn info() {
    insta::assert_snapshot!(text(&["info", "fixtures/llama-sharded"], 0));
}

#[test]
fn tensors() {
    insta::assert_snapshot!(text(
        &["tensors", "fixtures/llama-sharded", "--sort", "size"],
        0
    ));
}

#[test]
fn size() {
    insta::assert_snapshot!(text(
        &["size", "fixtures/llama-sharded", "--dtype", "f32", "--tie"],
        0
    ));
}

#[test]
fn lookup() {
    insta::assert_snapshot!(text(
        &[
            "lookup",
            "fixtures/llama-sharded",
            "--token",
            " Paris",
            "Ġking"
        ],
        0
    ));
}

#[test]
fn neighbors() {
    insta::assert_snapshot!(text(
        &[
            "neighbors",
            "fixtures/llama-sharded",
            "Paris",
            "king - man + woman",
            "#2",
            "-k",
            "3"
        ],
        0
    ));
}

#[test]
fn check() {
    insta::assert_snapshot!(text(&["check", "fixtures/defects/vocab-padding"], 0));
    insta::assert_snapshot!(text(
        &["check", "fixtures/defects/tokenizer-larger-than-matrix"],
        1
    ));
}
