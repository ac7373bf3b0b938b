//! `undertrained`: the planted untrained rows of `fixtures/untrained` rank
//! first by every indicator, clean fixtures have no strong candidate,
//! `--reference` is parsed strictly, `check` points to the command, and
//! `-v` times each stage.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{embscope, fails, fixture, ids, json, text};

/// The planted untrained rows: the bytes 0xF8..=0xFB and ` Hello`.
const PLANTED: [u64; 5] = [180, 181, 182, 183, 338];
/// The reference rows: four reserved tokens, then two rows past the tokenizer.
const REFERENCE: [u64; 6] = [339, 340, 341, 342, 343, 344];

fn candidate(v: &Value, id: u64) -> &Value {
    v["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no candidate {id} in {v}"))
}

#[test]
fn planted_rows_rank_first_by_every_indicator() {
    let model = fixture("untrained");
    for (matrix, indicators, component) in [
        (None, vec!["head_cosine", "embed_distance"], true),
        (Some("head"), vec!["head_cosine"], true),
        (Some("embed"), vec!["embed_distance"], false),
    ] {
        let mut args = vec!["undertrained", &model, "--top", "12", "--include-reference"];
        if let Some(m) = matrix {
            args.extend(["--matrix", m]);
        }
        let v = json(&args);
        // The 12 best rows outside the reference set, then its 6 rows.
        let ranked = ids(&v["candidates"]);
        assert_eq!(ranked.len(), 18, "{matrix:?}");
        let first: BTreeSet<u64> = ranked[..5].iter().copied().collect();
        assert_eq!(first, PLANTED.into(), "{matrix:?}: {ranked:?}");
        let last: BTreeSet<u64> = ranked[12..].iter().copied().collect();
        assert_eq!(last, REFERENCE.into(), "{matrix:?}: {ranked:?}");
        assert_eq!(v["strong"], 11, "{matrix:?}");
        assert_eq!(v["strong_outside_reference"], 5, "{matrix:?}");
        assert_eq!(v["reference"]["strong"], 6, "{matrix:?}");
        let strong: Vec<bool> = v["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["strong"].as_bool().unwrap())
            .collect();
        assert_eq!(
            strong,
            [vec![true; 5], vec![false; 7], vec![true; 6]].concat()
        );
        let refs: Vec<bool> = v["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["reference"].as_bool().unwrap())
            .collect();
        assert_eq!(refs, [vec![false; 12], vec![true; 6]].concat());
        // Without the flag: the rows outside the set only.
        args.retain(|a| *a != "--include-reference");
        let outside = ids(&json(&args)["candidates"]);
        assert_eq!(outside, ranked[..12], "{matrix:?}");
        assert_eq!(v["indicators"], serde_json::json!(indicators));
        let passes = v["passes"].as_u64().unwrap();
        let component_rows = v["component_rows"].as_u64().unwrap();
        // The fixture is smaller than the sample: every row is in it.
        assert_eq!(
            component_rows,
            if component { 345 } else { 0 },
            "{matrix:?}"
        );
        let iterations = v["component_iterations"].as_u64().unwrap();
        assert_eq!(iterations > 0, component, "{matrix:?}");
        assert_eq!(passes, 1 + u64::from(matrix.is_none()), "{matrix:?}");
    }
}

#[test]
fn json_has_every_field() {
    let v = json(&[
        "undertrained",
        &fixture("untrained"),
        "--top",
        "12",
        "--include-reference",
    ]);
    assert_eq!(v["embedding"], "model.embed_tokens.weight");
    assert_eq!(v["head"], "lm_head.weight");
    assert_eq!(v["rows"], 345);
    assert_eq!(v["scored"], 345);
    assert_eq!(v["threshold"], 5.0);
    assert_eq!(
        v["reference"],
        serde_json::json!({
            "source": "auto", "rows": 6, "placeholders": 4, "unreachable": 2,
            "identical": 0, "strong": 6, "fallback": false,
        })
    );
    assert_eq!(v["histogram"]["counts"].as_array().unwrap().len(), 48);
    let total: u64 = v["histogram"]["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(total, 345);
    // The fixture's head is noise around its planted rows: no direction
    // stands out, and the note says so. The planted bytes no UTF-8 text
    // holds are listed, and no text reaches them: a note names them.
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .starts_with("no direction of `lm_head.weight` stands out"),
        "{notes:?}"
    );
    assert_eq!(
        notes[1],
        "4 listed token(s) that no text reaches are not in the reference set (reserved placeholders and rows without a token): 180 \"<0xF8>\", 182 \"<0xFA>\", 181 \"<0xF9>\", 183 \"<0xFB>\""
    );
    assert_eq!(v["component_iterations"], 3);
    let c = candidate(&v, 339);
    assert_eq!(c["token"], "<|reserved_special_token_0|>");
    assert_eq!(c["kind"], "special");
    assert_eq!(c["reference"], true);
    assert_eq!(c["reachable"], true);
    let c = candidate(&v, 180);
    assert_eq!(c["token"], "<0xF8>");
    assert_eq!(c["kind"], "byte");
    assert_eq!(c["reference"], false);
    assert_eq!(c["reachable"], false);
    let c = candidate(&v, 344);
    assert_eq!(c["token"], Value::Null);
    assert_eq!(c["kind"], Value::Null);
    assert_eq!(candidate(&v, 338)["kind"], "normal");
    for c in v["candidates"].as_array().unwrap() {
        for key in ["head_cosine", "head_norm", "embed_norm", "embed_distance"] {
            assert!(c[key].as_f64().is_some(), "{key} in {c}");
        }
        assert!(c["score"].as_f64().is_some() && c["rank"].as_u64().is_some());
    }
    // Untrained rows: head cosine near 1, embedding rows small and close
    // to the reference mean.
    let c = candidate(&v, 181);
    assert!(c["head_cosine"].as_f64().unwrap() > 0.8, "{c}");
    assert!(c["embed_norm"].as_f64().unwrap() < 0.1, "{c}");
    assert!(c["embed_distance"].as_f64().unwrap() < 0.05, "{c}");
}

#[test]
fn clean_fixtures_have_no_strong_candidate() {
    for model in ["llama-sharded", "gpt2-tied", "bert", "qwen-f16-tied"] {
        let out = embscope()
            .args(["--json", "undertrained", &fixture(model)])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{model}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["strong"], 0, "{model}: {}", v["candidates"][0]);
        assert_eq!(v["reference"]["rows"], 0, "{model}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("note: no reference rows") && err.contains("row norms only"),
            "{model}: {err}"
        );
    }
}

#[test]
fn explicit_reference_ids() {
    let v = json(&[
        "undertrained",
        &fixture("untrained"),
        "--reference",
        "180-183, 338",
        "--top",
        "11",
        "--include-reference",
    ]);
    assert_eq!(v["reference"]["source"], "ids");
    assert_eq!(v["reference"]["rows"], 5);
    // The best rows outside the given set (the six auto ones first), then
    // the set.
    let listed = ids(&v["candidates"]);
    let first: BTreeSet<u64> = listed[..6].iter().copied().collect();
    assert_eq!(first, REFERENCE.into());
    let last: BTreeSet<u64> = listed[11..].iter().copied().collect();
    assert_eq!(last, PLANTED.into());
    assert_eq!(candidate(&v, 180)["reference"], true);
    assert_eq!(candidate(&v, 339)["reference"], false);
    assert_eq!(v["strong_outside_reference"], 6);
    // The same set written as lookup --id takes it: spaces, repeats and
    // overlapping ranges name each row once.
    let same = json(&[
        "undertrained",
        &fixture("untrained"),
        "--reference",
        "180 - 183 338 181-182,180",
        "--top",
        "11",
        "--include-reference",
    ]);
    assert_eq!(same["reference"]["rows"], 5);
    assert_eq!(same["candidates"], v["candidates"]);
}

#[test]
fn many_repeated_reference_ranges_stay_within_the_matrix() {
    // 20,000 copies of every row: bounded by the 345 rows, not multiplied.
    let all = vec!["0-344"; 20_000].join(",");
    let v = json(&[
        "undertrained",
        &fixture("untrained"),
        "--reference",
        &all,
        "--top",
        "1",
        "--no-reachable",
    ]);
    assert_eq!(v["reference"]["rows"], 345);
}

#[test]
fn added_tokens_after_the_model_give_the_same_answers() {
    // The reference mean is first guessed from the vocab as the load reads
    // it, before the added tokens when a file writes them last: an added
    // token for row 343 (past the model vocab) then proves the guess wrong,
    // and the answers must be those of the file written the usual way.
    let run = |added_last: bool| {
        let dir = crate::common::fixture_copy("untrained");
        let path = dir.path().join("tokenizer.json");
        let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let mut added = file["added_tokens"].take();
        added.as_array_mut().unwrap().push(serde_json::json!(
            {"id": 343, "content": "<extra>", "single_word": false, "lstrip": false,
             "rstrip": false, "normalized": false, "special": false}
        ));
        let object = file.as_object_mut().unwrap();
        object.remove("added_tokens");
        // serde_json writes keys in order: `added_tokens` first, or last.
        let rest = serde_json::to_string(&file).unwrap();
        let text = match added_last {
            false => format!(r#"{{"added_tokens": {added}, {}"#, &rest[1..]),
            true => format!(r#"{}, "added_tokens": {added}}}"#, &rest[..rest.len() - 1]),
        };
        assert_eq!(
            text.find("\"added_tokens\"") > text.find("\"model\""),
            added_last
        );
        std::fs::write(&path, text).unwrap();
        let mut v = json(&["undertrained", dir.path().to_str().unwrap(), "--top", "20"]);
        v["model"] = Value::Null;
        v
    };
    let first = run(false);
    assert_eq!(first["reference"]["rows"], 5);
    assert_eq!(candidate(&first, 343)["reference"], false);
    assert_eq!(candidate(&first, 343)["reachable"], true);
    assert_eq!(run(true), first);
}

#[test]
fn reference_errors_exit_2() {
    let model = fixture("untrained");
    for (value, needle) in [
        ("x", "--reference: `x` is not a non-negative integer id"),
        ("5-2", "--reference: range `5-2` runs backwards"),
        ("1,,2", "--reference: empty item in `1,,2`"),
        ("-1", "--reference: ids are non-negative integers, not `-1`"),
        ("4-", "--reference: `4-` is not an id or a range"),
        (
            "3,345",
            "--reference: id 345 is out of range: `model.embed_tokens.weight` has 345 rows (ids 0..=344)",
        ),
    ] {
        fails(
            &["undertrained", &model, &format!("--reference={value}")],
            needle,
        );
    }
    fails(
        &["undertrained", &fixture("bert"), "--matrix", "head"],
        "has no output head",
    );
}

#[test]
fn text_shows_the_chart_the_cut_and_the_table() {
    let out = text(&["undertrained", "fixtures/untrained", "--top", "3"], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(
            "undertrained  embedding `model.embed_tokens.weight`, head `lm_head.weight`, 345 rows"
        ),
        "{out}"
    );
    assert_eq!(
        lines[1],
        "reference     6 rows (4 reserved placeholders, 2 rows without a token), 6 of them look untrained; candidates are the rows outside it"
    );
    let chart = lines
        .iter()
        .position(|l| l.starts_with("score of 345 rows"))
        .expect("chart");
    assert_eq!(lines[chart + 1].chars().count(), 48, "{out}");
    assert!(
        lines[chart + 2]
            .trim_start()
            .starts_with("^ strong from 5.0: 11 rows (5 outside the reference set)"),
        "{out}"
    );
    assert!(
        out.contains("rank   id  token") && out.contains("head cos") && out.contains("emb dist"),
        "{out}"
    );
    assert_eq!(
        out.matches('*').count(),
        4,
        "three strong rows and the legend: {out}"
    );
    let clean = text(&["undertrained", "fixtures/bert"], 0);
    assert!(
        clean.contains("no row reaches the strong threshold 5.0"),
        "{clean}"
    );
}

#[test]
fn check_points_to_the_command() {
    let run = |model: &str| {
        let out = embscope()
            .args(["--json", "check", &fixture(model)])
            .output()
            .expect("runs");
        serde_json::from_slice::<Value>(&out.stdout).expect("one JSON document")
    };
    let v = run("untrained");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "undertrained-candidates")
        .unwrap_or_else(|| panic!("no finding in {v}"));
    assert_eq!(f["severity"], "info");
    assert_eq!(f["evidence"]["rows"], 11);
    assert_eq!(f["evidence"]["outside_reference"], 5);
    assert_eq!(f["evidence"]["reference_rows"], 6);
    assert_eq!(f["evidence"]["total"], 5);
    assert_eq!(f["evidence"]["truncated"], false);
    let listed: BTreeSet<u64> = f["evidence"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    assert_eq!(listed, PLANTED.into_iter().collect());
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with("11 row(s) of `model.embed_tokens.weight` look untrained")
            && message.contains("embscope undertrained"),
        "{message}"
    );
    for clean in ["llama-sharded", "bert"] {
        let v = run(clean);
        assert!(
            !v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["code"] == "undertrained-candidates"),
            "{clean}: {v}"
        );
    }
}

#[test]
fn verbose_names_each_stage_with_its_time() {
    let model = fixture("untrained");
    let out = embscope()
        .args(["-v", "--no-progress", "undertrained", &model, "--json"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let stages: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("stage: "))
        .map(|l| {
            // `NAME T ms (from S ms)`
            let (name, times) = l.split_once(|c: char| c.is_ascii_digit()).expect(l);
            assert!(
                times.ends_with(" ms)") && times.contains(" ms (from "),
                "{l}"
            );
            name.trim_end()
        })
        .collect();
    for want in [
        "vocabulary",
        "reference guess",
        "reference set",
        "component sample",
        "embedding pass",
        "head pass",
        "scores",
        "reachability",
        "release pages",
    ] {
        assert!(stages.contains(&want), "no stage {want:?} in {err}");
    }
    // The JSON has no timings (they vary run to run), and -q prints none.
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(v.get("stages").is_none());
    let quiet = embscope()
        .args(["-v", "-q", "undertrained", &model])
        .output()
        .expect("runs");
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("stage:"));
}

#[test]
fn the_component_note_is_for_verbose_runs_and_the_json() {
    // The fixture's head has no direction that stands out (see
    // `json_has_every_field`): the note on it is about the method.
    let model = fixture("untrained");
    let said = "no direction of `lm_head.weight` stands out";
    let stderr = |args: &[&str]| {
        let out = embscope().args(args).output().expect("runs");
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let plain = stderr(&["--no-progress", "undertrained", &model]);
    assert!(!plain.contains(said), "{plain}");
    let verbose = stderr(&["-v", "--no-progress", "undertrained", &model]);
    assert!(verbose.contains(&format!("note: {said}")), "{verbose}");
}

#[test]
fn any_top_lists_every_scored_row() {
    // A `--top` past the rows lists them all (it once sized a buffer).
    let v = json(&[
        "undertrained",
        &fixture("untrained"),
        "--top",
        "100000000000",
        "--include-reference",
    ]);
    assert_eq!(v["candidates"].as_array().expect("candidates").len(), 345);
}

#[test]
fn without_placeholders_identical_rows_are_the_reference() {
    // Rows 10 "is" and 11 "was" are byte-identical, and the vocabulary has
    // no placeholder and a token for every row.
    let model = fixture("defects/duplicate-rows");
    let v = json(&["undertrained", &model, "--top", "5"]);
    assert_eq!(
        v["reference"],
        serde_json::json!({
            "source": "auto", "rows": 2, "placeholders": 0, "unreachable": 0,
            "identical": 2, "strong": 2, "fallback": false,
        })
    );
    assert!(!ids(&v["candidates"]).contains(&10));
    let with = json(&["undertrained", &model, "--top", "5", "--include-reference"]);
    let listed = ids(&with["candidates"]);
    assert_eq!(listed[..5], ids(&v["candidates"])[..]);
    let mut tail = listed[5..].to_vec();
    tail.sort_unstable();
    assert_eq!(tail, [10, 11]);
    let out = text(&["undertrained", "fixtures/defects/duplicate-rows"], 0);
    assert!(
        out.contains(
            "reference     2 rows (in groups of byte-identical rows), 2 of them look untrained"
        ),
        "{out}"
    );
}

#[test]
fn the_norm_only_fallback_says_so_and_stars_nothing() {
    // Without a tokenizer and with no identical rows: norms alone.
    let dir = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(&fixture("untrained")).to_path_buf();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let model = dir.path().to_str().unwrap();
    let v = json(&["undertrained", model, "--top", "5"]);
    assert_eq!(v["reference"]["fallback"], true);
    assert_eq!(v["reference"]["rows"], 0);
    let out = text(&["undertrained", model, "--top", "5"], 0);
    assert!(
        out.contains("reference     none: scores from the norms alone"),
        "{out}"
    );
    assert!(out.contains("none is called strong"), "{out}");
    assert!(!out.contains('*'), "{out}");
}
