//! A GGUF file of no tensors, as llama.cpp ships for its tokenizer tests
//! (`models/ggml-vocab-*.gguf`, ending where the metadata ends):
//! `info`, `tensors` and `size` show what it holds, and the commands that
//! read a matrix say in one line that it holds a vocabulary only.

use crate::common::{fails, fixture, json, text};

const VOCAB_ONLY: &str = "gguf/vocab-only.gguf";

#[test]
fn info_shows_the_metadata_and_the_tokenizer() {
    let bytes = std::fs::metadata(fixture(VOCAB_ONLY)).unwrap().len();
    assert_ne!(bytes % 32, 0, "the fixture must end off the alignment");
    let v = json(&["info", &fixture(VOCAB_ONLY)]);
    assert_eq!(v["tensor_count"], 0);
    assert_eq!(v["files"][0]["tensors"], 0);
    assert_eq!(v["config"]["model_type"], "llama");
    assert_eq!(v["config"]["name"], "embscope llama vocabulary");
    assert_eq!(v["tokenizer"]["model"], "llama");
    assert_eq!(v["tokenizer"]["size"], 373);
    assert!(v["embedding"].is_null() && v["head"].is_null());
    assert_eq!(v["tie"]["status"], "vocab-only");
    let shown = text(&["info", "fixtures/gguf/vocab-only.gguf"], 0);
    assert!(
        shown.contains("tie         none: the file holds a vocabulary only (no tensors)"),
        "{shown}"
    );
    assert!(shown.contains("tokenizer   llama, 373 ids"), "{shown}");
}

#[test]
fn tensors_and_size_show_none() {
    let v = json(&["tensors", &fixture(VOCAB_ONLY)]);
    assert_eq!(
        (v["count"].as_u64(), v["total"].as_u64()),
        (Some(0), Some(0))
    );
    let shown = text(&["tensors", "fixtures/gguf/vocab-only.gguf"], 0);
    assert_eq!(shown, "0 tensors, 0 parameters, 0 B\n");
    let v = json(&["size", &fixture(VOCAB_ONLY)]);
    assert_eq!(v["total_params"], 0);
    assert_eq!(v["tie_status"], "vocab-only");
    assert!(v["tying"].is_null());
}

#[test]
fn commands_that_read_a_matrix_say_there_is_none() {
    let model = fixture(VOCAB_ONLY);
    let said =
        "holds a vocabulary only (a GGUF file with no tensors), so there is no matrix to read";
    for args in [
        &["lookup", &model, "--id", "5"][..],
        &["lookup", &model, "--token", "▁king"],
        &["neighbors", &model, "#5"],
        &["neighbors", &model, "king", "--matrix", "head"],
        &["check", &model],
        &["undertrained", &model],
        &["size", &model, "--vocab", "500"],
    ] {
        fails(args, said);
    }
}
