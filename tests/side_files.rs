//! One broken side file blocks only what it feeds: `tensors`, rows by id
//! (`lookup --id`, `neighbors '#5'`) and `info` go on without it and say so
//! in a note; `check` reports each as an `unreadable-file` error and audits
//! the rest; a word query, which the tokenizer feeds, stops on a broken
//! tokenizer.json. The broken files are `fixtures/broken/side-files/`'s,
//! all together there, and one at a time beside a sound model.

use std::path::Path;

use serde_json::Value;

use crate::common::{embscope, fails, fixture, fixture_copy, goes_on, json, unreadable_findings};

/// The side files, each broken in `fixtures/broken/side-files/`.
const SIDE_FILES: [&str; 5] = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
];

/// `fixtures/llama-sharded` with the broken `name` copied over its own.
fn one_broken(name: &str) -> tempfile::TempDir {
    let tmp = fixture_copy("llama-sharded");
    let broken = Path::new(&fixture("broken/side-files")).join(name);
    std::fs::copy(broken, tmp.path().join(name)).unwrap();
    tmp
}

/// stdout and stderr of `embscope ARGS`, which must exit with `code`.
fn run(args: &[&str], code: i32) -> (String, String) {
    let out = embscope().args(args).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    (String::from_utf8(out.stdout).unwrap(), err)
}

/// The results of a `neighbors --json` report: ids and scores, tokens apart.
fn results(v: &Value) -> (Vec<(u64, f64)>, Vec<Value>) {
    let rows = v["queries"][0]["results"].as_array().expect("results");
    (
        rows.iter()
            .map(|r| (r["id"].as_u64().unwrap(), r["score"].as_f64().unwrap()))
            .collect(),
        rows.iter().map(|r| r["token"].clone()).collect(),
    )
}

#[test]
fn each_broken_side_file_is_a_note_where_rows_are_read_by_id() {
    let sound = fixture("llama-sharded");
    let tensors = run(&["tensors", &sound], 0).0;
    let row = json(&["lookup", &sound, "--id", "5"]);
    let near = json(&["neighbors", &sound, "#5", "-k", "4"]);
    for name in SIDE_FILES {
        let tmp = one_broken(name);
        let model = tmp.path().display().to_string();
        // `tensors` reads the headers (and, at opening, the config).
        let (out, err) = run(&["tensors", &model], 0);
        assert_eq!(out, tensors, "{name}");
        assert_eq!(err.contains(name), name == "config.json", "{name}: {err}");
        // Rows by id: the same values; token strings unless the tokenizer
        // itself is broken.
        let v: Value = serde_json::from_str(&goes_on(
            &["--json", "lookup", &model, "--id", "5"],
            0,
            name,
        ))
        .unwrap();
        assert_eq!(v["rows"][0]["values"], row["rows"][0]["values"], "{name}");
        let token = &v["rows"][0]["token"];
        match name {
            "tokenizer.json" => assert!(token.is_null(), "{name}: {v}"),
            _ => assert_eq!(token, &row["rows"][0]["token"], "{name}"),
        }
        let v: Value = serde_json::from_str(&goes_on(
            &["--json", "neighbors", &model, "#5", "-k", "4"],
            0,
            name,
        ))
        .unwrap();
        let ((got, tokens), (want, want_tokens)) = (results(&v), results(&near));
        assert_eq!(got, want, "{name}");
        match name {
            "tokenizer.json" => assert!(tokens.iter().all(Value::is_null), "{name}: {v}"),
            _ => assert_eq!(tokens, want_tokens, "{name}"),
        }
        goes_on(&["info", &model], 0, name);
    }
}

#[test]
fn check_reports_each_broken_side_file_and_audits_the_rest() {
    for name in SIDE_FILES {
        let tmp = one_broken(name);
        let model = tmp.path().display().to_string();
        let found = unreadable_findings(&model, name);
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        let f = &found[0];
        assert_eq!(
            f["evidence"]["file"],
            tmp.path().join(name).display().to_string()
        );
        assert!(f["evidence"]["fault"].is_string(), "{f}");
        let (out, err) = run(&["--json", "check", &model], 1);
        // Reported once, as a finding: no note beside it.
        assert!(!err.contains("note:"), "{name}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["counts"]["error"], 1, "{name}: {v}");
        assert_eq!(v["counts"]["warn"], 0, "{name}: {v}");
        // The value pass ran over both matrices.
        let summaries = (v["findings"].as_array().unwrap().iter())
            .filter(|f| f["code"] == "norm-summary")
            .count();
        assert_eq!(summaries, 2, "{name}: {v}");
        // The tokenizer was read unless it is the broken file.
        assert_eq!(
            v["tokenizer_size"].is_null(),
            name == "tokenizer.json",
            "{name}: {v}"
        );
        // A broken config is its finding, not also a missing one.
        assert!(
            !(v["findings"].as_array().unwrap().iter())
                .any(|f| f["code"] == "no-config" || f["code"] == "no-tokenizer"),
            "{name}: {v}"
        );
    }
}

#[test]
fn every_side_file_broken_at_once_blocks_no_row_by_id() {
    let model = fixture("broken/side-files");
    let found = unreadable_findings(&model, "special_tokens_map.json");
    let mut files: Vec<&str> = found
        .iter()
        .map(|f| f["evidence"]["file"].as_str().unwrap())
        .map(|f| f.rsplit('/').next().unwrap())
        .collect();
    files.sort_unstable();
    let mut want = SIDE_FILES;
    want.sort_unstable();
    assert_eq!(files, want, "{found:?}");
    let (out, err) = run(&["--json", "lookup", &model, "--id", "5"], 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][0]["id"], 5);
    // The broken tokenizer.json leaves the special-token files unread.
    for name in ["config.json", "tokenizer.json"] {
        assert!(err.contains(&format!("{name}` is unreadable (")), "{err}");
    }
    assert_eq!(err.lines().count(), 2, "{err}");
    run(&["neighbors", &model, "#5"], 0);
    run(&["tensors", &model], 0);
    run(&["size", &model], 0);
    run(&["undertrained", &model, "--top", "3"], 0);
}

#[test]
fn a_word_query_stops_only_on_the_file_that_feeds_it() {
    let tmp = one_broken("tokenizer.json");
    let model = tmp.path().display().to_string();
    fails(&["neighbors", &model, "Paris"], "tokenizer.json");
    fails(&["lookup", &model, "--token", "ĠParis"], "tokenizer.json");
    // A special-token file feeds no word query.
    let tmp = one_broken("special_tokens_map.json");
    let model = tmp.path().display().to_string();
    let v: Value = serde_json::from_str(&goes_on(
        &["--json", "neighbors", &model, "Paris", "-k", "1"],
        0,
        "special_tokens_map.json",
    ))
    .unwrap();
    assert_eq!(v["queries"][0]["results"][0]["token"], " France");
}

#[test]
fn an_index_given_as_model_reads_the_side_files_beside_it() {
    let tmp = one_broken("config.json");
    let index = tmp.path().join("model.safetensors.index.json");
    let index = index.display().to_string();
    goes_on(&["tensors", &index], 0, "config.json");
    goes_on(&["lookup", &index, "--id", "5"], 0, "config.json");
    unreadable_findings(&index, "config.json");
}
