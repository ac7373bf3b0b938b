//! Answers a user can trust on real vocabularies: a bare word means the
//! word (`Ġking`) with a note naming the piece (`king`), ` king` and
//! `=king` pick each form; a shard opens its indexed checkpoint; every
//! printed token reads back through `--token`; whitespace texts are text;
//! malformed queries are refused; `check` says how much evidence it lists.

use std::process::Output;

use serde_json::Value;

use crate::common::{embscope, fails, fixture, fixture_copy, json, text, write_f32_embedding};

/// Runs `embscope --json ARGS`, expects exit 0; returns stdout parsed and stderr.
fn json_and_notes(args: &[&str]) -> (Value, String) {
    let out: Output = embscope().arg("--json").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

fn query_ids(v: &Value) -> Vec<Vec<u64>> {
    v["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            q["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn bare_word_takes_the_word_and_notes_the_piece() {
    // (fixture, marker, word id, piece id, queen id)
    for (model, marker, word, piece, queen) in [
        ("pieces-byte-level", "Ġ", 259, 341, 264),
        ("pieces-sentencepiece", "▁", 292, 374, 297),
    ] {
        let m = fixture(model);
        let (v, err) = json_and_notes(&[
            "neighbors",
            &m,
            "king",
            " king",
            "=king",
            "king - man + woman",
            "-k",
            "1",
        ]);
        assert_eq!(
            query_ids(&v)[..3],
            [vec![word], vec![word], vec![piece]],
            "{model}: king, ' king', =king"
        );
        assert_eq!(v["queries"][3]["results"][0]["id"], queen, "{model}");
        let note = format!(
            "note: \"king\" resolved to \"{marker}king\" (#{word}, the word); for the piece \"king\" (#{piece}) write \"=king\""
        );
        assert!(err.contains(&note), "{model}: {err}");
        assert!(
            v["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| format!("note: {}", n.as_str().unwrap()) == note),
            "{model}: the JSON notes hold it too"
        );
        assert!(!err.contains("\"=king\" resolved"), "{model}: {err}");
        // ` king` is the text of the word's entry: nothing to say.
        assert!(!err.contains("\" king\" resolved"), "{model}: {err}");
    }
    // WordPiece words are bare: `king` is the word, no note; `##` pieces by `=`.
    let (v, err) = json_and_notes(&["neighbors", &fixture("bert"), "king", "=##ing", "-k", "1"]);
    assert_eq!(query_ids(&v), [vec![5], vec![30]]);
    assert!(!err.contains("the word"), "{err}");
}

#[test]
fn an_equals_word_is_exact_and_names_an_entry_spelled_with_equals() {
    // Entry 339 (`ki`) renamed `==`: `==` asks for `=`, `===` for `==`.
    let tmp = fixture_copy("pieces-byte-level");
    let tok = tmp.path().join("tokenizer.json");
    let json_text = std::fs::read_to_string(&tok).unwrap();
    std::fs::write(&tok, json_text.replace("\"ki\": 339", "\"==\": 339")).unwrap();
    let m = tmp.path().display().to_string();
    let (v, err) = json_and_notes(&["neighbors", &m, "==", "===", "-k", "1"]);
    assert_eq!(query_ids(&v), [vec![28], vec![339]]);
    assert!(
        err.contains(
            "note: \"==\" is the entry \"=\" (#28); for the entry \"==\" (#339) write \"===\""
        ),
        "{err}"
    );
    fails(
        &["neighbors", &fixture("bert"), "=King"],
        "token `King` is not in the vocabulary",
    );
}

#[test]
fn leading_space_is_kept_on_the_first_term() {
    let v = json(&[
        "neighbors",
        &fixture("pieces-byte-level"),
        " king - man + woman",
        "-k",
        "1",
    ]);
    let terms = &v["queries"][0]["terms"];
    assert_eq!(terms[0]["text"], " king");
    assert_eq!(terms[0]["ids"][0], 259);
    // Only a piece: the bare word takes it, a spaced query does not.
    let v = json(&["neighbors", &fixture("pieces-byte-level"), "\\n", "-k", "1"]);
    assert_eq!(query_ids(&v), [vec![342]]);
    fails(
        &["neighbors", &fixture("pieces-byte-level"), " \\n"],
        "` \\n` is not one vocabulary entry",
    );
}

#[test]
fn a_shard_opens_its_indexed_checkpoint() {
    let shard = fixture("llama-sharded/model-00001-of-00002.safetensors");
    let (v, err) = json_and_notes(&["check", &shard]);
    assert!(
        err.contains(
            "note: model-00001-of-00002.safetensors is a shard of model.safetensors.index.json; opening the whole checkpoint"
        ),
        "{err}"
    );
    assert_eq!(v["head"], "lm_head.weight");
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(!codes.contains(&"untied-head-missing"), "{codes:?}");
    // Every command, and -q keeps stderr quiet.
    let out = embscope().args(["-q", "tensors", &shard]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty());
    assert!(String::from_utf8_lossy(&out.stdout).contains("lm_head.weight"));
    // An index that cannot be opened is an error, after the note says why
    // it was read at all.
    let out = embscope()
        .args([
            "info",
            &fixture("broken/missing-shard/model-00001-of-00002.safetensors"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("note: model-00001-of-00002.safetensors is a shard of"));
    assert!(
        lines[1].starts_with("embscope: ")
            && lines[1]
                .contains("names shard `model-00002-of-00002.safetensors`, which does not exist")
    );
    // A shard without its index opens alone, without a note.
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("model-00001-of-00002.safetensors");
    std::fs::copy(&shard, &alone).unwrap();
    let (v, err) = json_and_notes(&["tensors", alone.to_str().unwrap()]);
    assert!(err.is_empty(), "{err}");
    assert_eq!(v["tensors"].as_array().unwrap().len(), 10);
}

/// Ids 0..rows of `model` and their printed tokens, from `lookup --json`.
fn printed_tokens(model: &str) -> Vec<(u64, String)> {
    let rows = json(&["info", model])["embedding"]["shape"][0]
        .as_u64()
        .unwrap();
    let ids: Vec<String> = (0..rows).map(|i| i.to_string()).collect();
    let mut args = vec!["lookup", model, "--id"];
    args.extend(ids.iter().map(String::as_str));
    json(&args)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_u64().unwrap(),
                r["token"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_printed_token_reads_back_through_token() {
    for model in ["pieces-byte-level", "pieces-sentencepiece", "bert"] {
        let m = fixture(model);
        let printed = printed_tokens(&m);
        let mut args = vec!["lookup".to_string(), m.clone()];
        args.extend(printed.iter().map(|(_, t)| format!("--token={t}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let back: Vec<u64> = json(&args)["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = printed.iter().map(|(id, _)| *id).collect();
        assert_eq!(back, want, "{model}");
    }
    // A literal backslash-n, a newline, a quote and a backslash print apart.
    let out = text(
        &[
            "lookup",
            "fixtures/pieces-byte-level",
            "--id",
            "342",
            "198",
            "1",
            "59",
        ],
        0,
    );
    for shown in [
        "342  \"\\\\n\"",
        "198  \"\\n\"",
        "  1  \"\\\"\"",
        " 59  \"\\\\\"",
    ] {
        assert!(out.contains(shown), "{shown:?} in\n{out}");
    }
}

#[test]
fn whitespace_texts_are_text() {
    let bl = fixture("pieces-byte-level");
    for (t, id, token) in [(" ", 220, " "), ("\n", 198, "\\n")] {
        let v = json(&["lookup", &bl, "--text", t]);
        assert_eq!(v["rows"][0]["id"], id, "{t:?}");
        assert_eq!(v["rows"][0]["token"], token, "{t:?}");
        let v = json(&["neighbors", &bl, "--text", t, "-k", "1"]);
        assert_eq!(v["queries"][0]["ids"][0], id, "{t:?}");
    }
    // WordPiece drops whitespace: say so rather than "empty".
    fails(
        &["lookup", &fixture("bert"), "--text", " "],
        "--text \" \" encodes to no tokens",
    );
    fails(
        &["neighbors", &fixture("bert"), "--text", "\n"],
        "--text \"\\n\" encodes to no tokens",
    );
    fails(&["lookup", &bl, "--text", ""], "--text is empty");
}

#[test]
fn leading_operators_and_malformed_ids_are_refused() {
    let m = fixture("pieces-byte-level");
    for q in ["- king", "+ king", "-"] {
        fails(&["neighbors", &m, "--", q], "starts with an operator");
    }
    for q in ["#-1", "#abc", "#", "king - #x"] {
        let bad = q.rsplit(' ').next().unwrap();
        fails(
            &["neighbors", &m, "--", q],
            &format!("#ID takes a non-negative integer, got \"{bad}\""),
        );
    }
    // `=` asks for the entry itself: `-` and `#` are byte tokens.
    let v = json(&["neighbors", &m, "=-", "=#", "-k", "1"]);
    assert_eq!(query_ids(&v), [vec![12], vec![2]]);
}

/// A 40-row F32 embedding, rows 0..30 all zero, and no tokenizer.
fn thirty_zero_rows(dir: &std::path::Path) -> String {
    let values: Vec<f32> = (0..40 * 4)
        .map(|i| if i < 30 * 4 { 0.0f32 } else { 1.0 + i as f32 })
        .collect();
    write_f32_embedding(&dir.join("model.safetensors"), 4, &values)
}

#[test]
fn check_evidence_says_what_the_json_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let m = thirty_zero_rows(tmp.path());
    let out = embscope().args(["--json", "check", &m]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let zero = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "zero-rows")
        .expect("zero-rows finding");
    let e = &zero["evidence"];
    assert_eq!(e["rows"], 30);
    assert_eq!(e["total"], 30);
    assert_eq!(e["truncated"], true);
    assert_eq!(e["ids"].as_array().unwrap().len(), 20);
    let out = embscope().args(["check", &m]).output().unwrap();
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains("… 22 more (30 in all; --json lists the first 20)"),
        "{human}"
    );
    // A complete list says nothing of the kind.
    let (v, _) = json_and_notes(&["check", &fixture("llama-sharded")]);
    for f in v["findings"].as_array().unwrap() {
        if let Some(t) = f["evidence"].get("truncated") {
            assert_eq!(*t, false, "{f}");
        }
    }
}

#[test]
fn older_tokenizer_files_are_named_where_a_tokenizer_is_needed() {
    // A download with a GPT-2 style vocab.json but no merges.txt (and no
    // tokenizer.json): embscope converts vocab.json with merges.txt only.
    // (vocab.txt, or vocab.json with merges.txt, it reads: see
    // tests/older_files.rs.)
    let dir = fixture_copy("bert");
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    std::fs::write(dir.path().join("vocab.json"), r#"{"king": 0}"#).unwrap();
    let d = dir.path().to_str().unwrap();
    let unread = format!(
        "no tokenizer.json in `{d}`, only vocab.json, which embscope does not read (in Python, `transformers.AutoTokenizer.from_pretrained({d:?}).save_pretrained({d:?})` writes a tokenizer.json from it)"
    );
    fails(
        &["neighbors", d, "king"],
        &format!("query `king` needs a tokenizer, and there is {unread}; query rows as #ID"),
    );
    fails(
        &["lookup", d, "--token", "king"],
        &format!("--token needs a tokenizer, and there is {unread}; use --id"),
    );
    let v = json(&["undertrained", d]);
    let rest = "so no reference rows: scores use the row norms only; give known-untrained ids with --reference";
    assert_eq!(v["notes"][0], format!("{unread}, {rest}"));
    // With nothing else in the directory, the missing file is all it says.
    let v = json(&["undertrained", &fixture("tied-head-stored")]);
    assert_eq!(v["notes"][0], format!("no tokenizer.json, {rest}"));
    let v = json(&["check", d]);
    let f = &v["findings"][0];
    assert_eq!(f["code"], "no-tokenizer");
    assert_eq!(
        f["message"],
        "no tokenizer.json (the directory has vocab.json, which embscope does not read): checks against the tokenizer are skipped"
    );
    assert_eq!(f["evidence"]["unread"], serde_json::json!(["vocab.json"]));
    let v = json(&["info", d]);
    let kinds: Vec<(&str, &str)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .filter(|(_, kind)| kind.starts_with("tokenizer"))
        .collect();
    let vocab_json = dir.path().join("vocab.json");
    assert_eq!(
        kinds,
        [
            (
                &*dir
                    .path()
                    .join("tokenizer_config.json")
                    .display()
                    .to_string(),
                "tokenizer config"
            ),
            (&*vocab_json.display().to_string(), "tokenizer, not read"),
        ]
    );
    assert_eq!(v["tokenizer"], Value::Null);
    let out = text(&["info", d], 0);
    assert!(
        out.contains("tokenizer   no tokenizer.json (vocab.json not read)"),
        "{out}"
    );

    // Two of them: both named; with a tokenizer.json beside them, neither.
    std::fs::write(dir.path().join("spiece.model"), b"\x0a\x00").unwrap();
    let v = json(&["check", d]);
    assert_eq!(
        v["findings"][0]["evidence"]["unread"],
        serde_json::json!(["spiece.model", "vocab.json"])
    );
    let err = fails(
        &["neighbors", d, "king"],
        "only spiece.model and vocab.json, which",
    );
    assert!(err.contains("writes a tokenizer.json from them"), "{err}");
    std::fs::copy(
        crate::common::fixtures().join("bert/tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let v = json(&["info", d]);
    assert!(!v.to_string().contains("not read"), "{v}");
    assert_eq!(v["tokenizer"]["model"], "WordPiece");
}
