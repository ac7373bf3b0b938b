//! `check` tells whether a tokenizer belongs to its matrix, on both sides
//! (`fixtures/mismatch`): the own tokenizer of a trained-looking matrix
//! is clean; the same entries at shuffled ids (a foreign tokenizer of the
//! same size) are a `tokenizer-mismatch` by the related tokens; a
//! tokenizer far smaller than the trained rows is one by sizes, with the
//! declared ids it has no token for; random rows are an `untrained-matrix`
//! warning, not an error.

use serde_json::Value;

use crate::common::{embscope, fixture};

/// `check --json MODEL [--fail-on warn]`: the exit code and the report.
fn check(name: &str, fail_on_warn: bool) -> (i32, Value) {
    let mut cmd = embscope();
    cmd.args(["--json", "check", &fixture(&format!("mismatch/{name}"))]);
    if fail_on_warn {
        cmd.args(["--fail-on", "warn"]);
    }
    let out = cmd.output().expect("runs");
    let v = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    (out.status.code().expect("exit code"), v)
}

/// The findings of `v` with `code`.
fn with_code<'a>(v: &'a Value, code: &str) -> Vec<&'a Value> {
    (v["findings"].as_array().expect("findings").iter())
        .filter(|f| f["code"] == code)
        .collect()
}

#[test]
fn the_own_tokenizer_of_a_trained_matrix_is_clean() {
    let (code, v) = check("own", true);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (&v["counts"]["error"], &v["counts"]["warn"]),
        (&0.into(), &0.into())
    );
}

#[test]
fn a_foreign_tokenizer_of_the_same_size_is_an_error_by_its_related_tokens() {
    let (code, v) = check("same-size", false);
    assert_eq!(code, 1, "{v}");
    let found = with_code(&v, "tokenizer-mismatch");
    assert_eq!(found.len(), 1, "{v}");
    let f = found[0];
    assert_eq!(f["severity"], "error");
    let e = &f["evidence"];
    assert_eq!(
        (&e["by_size"], &e["by_related_tokens"]),
        (&false.into(), &true.into())
    );
    assert_eq!(e["rows"], e["tokenizer_size"]);
    // The figures: related pairs no closer than unrelated ones, in a
    // matrix that shows training.
    let related = &e["related"];
    assert!(related["word_pairs"].as_u64().unwrap() >= 100, "{related}");
    let gap = related["related"].as_f64().unwrap()
        - related["random"]
            .as_f64()
            .unwrap()
            .max(related["across"].as_f64().unwrap());
    assert!(gap < 0.1, "{related}");
    assert!(
        related["training"]["common_direction"].as_f64().unwrap() >= 3.0,
        "{related}"
    );
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "tokenizer.json and `embeddings.word_embeddings.weight` do not belong together: in a matrix that shows training, its related tokens"
        ),
        "{message}"
    );
    assert!(with_code(&v, "untrained-matrix").is_empty(), "{v}");
}

#[test]
fn a_tokenizer_far_smaller_than_the_trained_rows_is_an_error_by_sizes() {
    let (code, v) = check("smaller-tokenizer", false);
    assert_eq!(code, 1, "{v}");
    let found = with_code(&v, "tokenizer-mismatch");
    assert_eq!(found.len(), 1, "{v}");
    let e = &found[0]["evidence"];
    assert_eq!(
        (&e["by_size"], &e["by_related_tokens"]),
        (&true.into(), &false.into())
    );
    assert_eq!(
        (&e["rows"], &e["tokenizer_size"]),
        (&2048.into(), &485.into())
    );
    // The rows no token reaches, as the warning it replaces counted them.
    let unreachable = &e["unreachable"];
    assert_eq!(unreachable["unreachable"], 1563, "{e}");
    assert_eq!(unreachable["first_unreachable"], 485, "{e}");
    assert_eq!(
        unreachable["content"]["embeddings.word_embeddings.weight"]["kind"],
        "trained-looking"
    );
    assert!(with_code(&v, "unreachable-rows").is_empty(), "{v}");
    // The model's special id that the tokenizer has no token for.
    assert_eq!(e["declarations"][0]["id"], 2040, "{e}");
    assert_eq!(e["declarations"][0]["source"], "config.json", "{e}");
    let message = found[0]["message"].as_str().unwrap();
    for part in [
        "1563 of its 2048 rows (76%, ids 485-2047) look trained but no token reaches them",
        "config.json bos_token_id 2040",
    ] {
        assert!(message.contains(part), "{message}");
    }
}

#[test]
fn random_rows_are_a_warning_that_says_so_not_an_error() {
    let (code, v) = check("random-rows", false);
    assert_eq!(code, 0, "{v}");
    assert!(with_code(&v, "tokenizer-mismatch").is_empty(), "{v}");
    let found = with_code(&v, "untrained-matrix");
    assert_eq!(found.len(), 1, "{v}");
    assert_eq!(found[0]["severity"], "warn");
    let training = &found[0]["evidence"]["related"]["training"];
    assert!(
        training["common_direction"].as_f64().unwrap() < 3.0,
        "{training}"
    );
    assert!(
        training["norm_spread"].as_f64().unwrap() < 2.0,
        "{training}"
    );
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("shows no sign of training"),
        "{v}"
    );
    assert_eq!(check("random-rows", true).0, 1);
}
