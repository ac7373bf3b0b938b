//! `lookup`: every dtype, every query form, every output format, bad input.

use crate::common::{embscope, fails, fixture, ids, json, text};
use crate::regenerate::checkpoints::{DTYPE_VALUES, planted_embedding};
use crate::regenerate::vocab::HIDDEN;

fn values(v: &serde_json::Value) -> Vec<Vec<f32>> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

#[test]
fn every_float_dtype_converts_exactly() {
    for dtype in ["f64", "f32", "f16", "bf16", "f8_e4m3", "f8_e5m2"] {
        let v = json(&[
            "lookup",
            &fixture(&format!("dtypes/{dtype}.safetensors")),
            "--id",
            "0",
            "1",
            "2",
            "3",
        ]);
        let got: Vec<f32> = values(&v).concat();
        assert_eq!(got, DTYPE_VALUES, "{dtype}");
        assert_eq!(v["dtype"], dtype.to_uppercase());
        let norm0 = v["rows"][0]["norm"].as_f64().unwrap();
        assert!(
            (norm0 - (1.0f64 + 4.0 + 0.25).sqrt()).abs() < 1e-6,
            "{dtype}: {norm0}"
        );
    }
    fails(
        &["lookup", &fixture("dtypes/i32.safetensors"), "--id", "0"],
        "is I32; a vocabulary layer needs a floating-point matrix",
    );
}

#[test]
fn token_rows_equal_the_generators_values() {
    let (_, planted) = planted_embedding(1);
    let want: Vec<f32> = planted[259 * HIDDEN..260 * HIDDEN]
        .iter()
        .map(|&x| half::bf16::from_f32(x).to_f32())
        .collect();
    let v = json(&["lookup", &fixture("llama-sharded"), "--token", "Ġking"]);
    assert_eq!(v["rows"][0]["id"], 259);
    assert_eq!(v["rows"][0]["token"], " king");
    assert_eq!(values(&v)[0], want);
    assert_eq!(
        json(&["lookup", &fixture("llama-sharded"), "--id", "259"])["rows"],
        v["rows"]
    );
    // The printed form finds the same entry: " king", and a lone byte
    // (Ã, 0xC3) printed as <0xC3>.
    let printed = json(&[
        "lookup",
        &fixture("llama-sharded"),
        "--token",
        " king",
        "<0xC3>",
    ]);
    assert_eq!(printed["rows"][0], v["rows"][0]);
    assert_eq!(printed["rows"][1]["token"], "<0xC3>");
    assert_eq!(
        printed["rows"][1]["id"],
        json(&["lookup", &fixture("llama-sharded"), "--token", "Ã"])["rows"][0]["id"]
    );
}

#[test]
fn text_rows_with_and_without_special_tokens() {
    let row_ids = |v: serde_json::Value| ids(&v["rows"]);
    assert_eq!(
        row_ids(json(&["lookup", &fixture("bert"), "--text", "The king"])),
        [21, 5]
    );
    assert_eq!(
        row_ids(json(&[
            "lookup",
            &fixture("bert"),
            "--text",
            "The king",
            "--add-special-tokens"
        ])),
        [2, 21, 5, 3]
    );
    assert_eq!(
        row_ids(json(&[
            "lookup",
            &fixture("llama-sharded"),
            "--text",
            " king Paris",
            "--add-special-tokens"
        ]))[..2],
        [339, 259]
    );
}

#[test]
fn head_matrix_on_untied_tied_and_encoder() {
    assert_eq!(
        json(&[
            "lookup",
            "--matrix",
            "head",
            &fixture("llama-sharded"),
            "--id",
            "1"
        ])["matrix"],
        "lm_head.weight"
    );
    let tied = json(&[
        "lookup",
        "--matrix",
        "head",
        &fixture("gpt2-tied"),
        "--id",
        "1",
    ]);
    assert_eq!(tied["matrix"], "transformer.wte.weight");
    assert_ne!(
        values(&json(&[
            "lookup",
            "--matrix",
            "head",
            &fixture("llama-sharded"),
            "--id",
            "1"
        ])),
        values(&json(&["lookup", &fixture("llama-sharded"), "--id", "1"]))
    );
    fails(
        &["lookup", "--matrix", "head", &fixture("bert"), "--id", "1"],
        "has no output head",
    );
}

#[test]
fn table_csv_and_npy_outputs() {
    let table = text(
        &["lookup", &fixture("dtypes/f32.safetensors"), "--id", "1"],
        0,
    );
    assert!(table.contains("1.5 -0.25 3 4"), "{table}");
    assert!(!table.contains('…'), "4 values need no ellipsis");
    let csv = text(
        &["lookup", &fixture("bert"), "--id", "5", "--format", "csv"],
        0,
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0].split(',').count(), 3 + HIDDEN);
    assert!(lines[1].starts_with("5,king,"), "{csv}");
    assert_eq!(lines.len(), 2);

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("rows.npy");
    let status = embscope()
        .args([
            "lookup",
            &fixture("dtypes/bf16.safetensors"),
            "--id",
            "3",
            "0",
            "--format",
            "npy",
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(status.status.success());
    let t = candle_core::Tensor::read_npy(&path).unwrap();
    assert_eq!(t.dims(), [2, 4]);
    let got: Vec<Vec<f32>> = t.to_vec2().unwrap();
    assert_eq!(got[0], DTYPE_VALUES[12..16]);
    assert_eq!(got[1], DTYPE_VALUES[0..4]);
    fails(
        &["lookup", &fixture("bert"), "--id", "1", "--format", "npy"],
        "give a file with -o FILE",
    );
}

#[test]
fn full_prints_every_value() {
    assert!(text(&["lookup", &fixture("bert"), "--id", "5"], 0).contains("… (24 more)"));
    assert!(!text(&["lookup", &fixture("bert"), "--id", "5", "--full"], 0).contains('…'));
}

#[test]
fn bad_lookups() {
    fails(
        &["lookup", &fixture("llama-sharded"), "--id", "341"],
        "id 341 is out of range: `model.embed_tokens.weight` has 341 rows (ids 0..=340)",
    );
    fails(
        &["lookup", &fixture("llama-sharded"), "--token", "king"],
        "close entries: `Ġking` (#259)",
    );
    fails(
        &["lookup", &fixture("dtypes/f32.safetensors"), "--text", "hi"],
        "--text needs a tokenizer",
    );
    fails(
        &["lookup", &fixture("bert"), "--text", ""],
        "--text is empty",
    );
    let out = embscope()
        .args(["lookup", &fixture("bert")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a query is required");
}

#[test]
fn ids_take_ranges_commas_and_spaces() {
    let model = fixture("llama-sharded");
    let rows = |args: &[&str]| {
        let mut line = vec!["lookup", model.as_str(), "--id"];
        line.extend(args);
        ids(&json(&line)["rows"])
    };
    assert_eq!(rows(&["0-5"]), [0, 1, 2, 3, 4, 5]);
    assert_eq!(rows(&["9,2-3", "7 1", "340"]), [9, 2, 3, 7, 1, 340]);
    assert_eq!(rows(&["4 - 6, 4"]), [4, 5, 6, 4], "in order, repeats kept");
    // The one syntax of --reference, with the same words for a bad list.
    for (value, needle) in [
        ("-1", "ids are non-negative integers, not `-1`"),
        ("5-2", "range `5-2` runs backwards"),
        ("1,,2", "empty item in `1,,2`"),
        ("x", "`x` is not a non-negative integer id"),
    ] {
        let err = fails(&["lookup", &model, "--id", value], needle);
        assert!(err.contains("see `embscope lookup --help`"), "{err}");
    }
}

#[test]
fn id_ranges_are_bounded_by_the_matrix_before_they_are_listed() {
    let model = fixture("llama-sharded");
    // A hostile range is an error at once, not a list of 10^11 ids.
    fails(
        &["lookup", &model, "--id", "0-99999999999"],
        "id 99999999999 is out of range: `model.embed_tokens.weight` has 341 rows (ids 0..=340)",
    );
    fails(
        &["lookup", &model, "--id", "0-18446744073709551615"],
        "id 18446744073709551615 is out of range",
    );
    // Ranges that repeat may not ask for more rows than the matrix has.
    let err = fails(
        &["lookup", &model, "--id", "0-340", "0-340"],
        "--id names 682 rows, more than the 341 of `model.embed_tokens.weight`",
    );
    assert!(!err.contains("out of range"), "{err}");
    assert_eq!(
        ids(&json(&["lookup", &model, "--id", "0-340"])["rows"]).len(),
        341
    );
}
