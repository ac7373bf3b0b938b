//! Downloads without a tokenizer.json but with the older files
//! transformers converts: WordPiece `vocab.txt` (`bert-vocab-txt`) and
//! byte-level BPE `vocab.json` + `merges.txt` (`gpt2-vocab-merges`). Each
//! fixture is a copy of `bert` / `gpt2-tied` with those files instead of
//! the tokenizer.json, so every answer must be the same as there; a
//! SentencePiece `tokenizer.model` (`sentencepiece-model`, a copy of
//! `pieces-sentencepiece` naming `LlamaTokenizer`) gives the same ids,
//! tokens and encodings, and without its class the vocabulary alone; settings
//! from tokenizer_config.json change the conversion; a class embscope does
//! not convert keeps its vocabulary but refuses text; malformed files are
//! errors naming the file and line.

use serde_json::{Value, json};

use crate::common::{fails, fixture, fixture_copy, goes_on, json, text, unreadable_findings};

/// The ids `lookup --text` gives, with or without the special tokens.
fn text_ids(model: &str, text: &str, special: bool) -> Vec<u64> {
    let mut args = vec!["lookup", model, "--text", text];
    if special {
        args.push("--add-special-tokens");
    }
    let v = json(&args);
    let rows = v["rows"].as_array().unwrap();
    rows.iter().map(|r| r["id"].as_u64().unwrap()).collect()
}

/// Writes `v` as the tokenizer_config.json of `dir`.
fn write_tokenizer_config(dir: &std::path::Path, v: Value) {
    std::fs::write(dir.join("tokenizer_config.json"), v.to_string()).unwrap();
}

/// Sets `config.json`'s `model_type` in `dir`.
fn set_model_type(dir: &std::path::Path, model_type: &str) {
    let path = dir.join("config.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    c["model_type"] = json!(model_type);
    std::fs::write(path, c.to_string()).unwrap();
}

/// `check`'s finding `code` on `model`, which has an error (exit code 1).
fn check_finding(model: &str, code: &str) -> Value {
    let out = crate::common::embscope()
        .args(["--json", "check", model])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    findings.iter().find(|f| f["code"] == code).unwrap().clone()
}

/// `v` without what names files or says which kernel ran.
fn answers(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["kernel", "model", "file", "tokenizer", "dir", "timing"] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// Every answer on `converted` is the one on `original`.
fn same_answers(original: &str, converted: &str, texts: &[&str], words: &[&str]) {
    let (a, b) = (fixture(original), fixture(converted));
    for t in texts {
        for special in [false, true] {
            assert_eq!(
                text_ids(&a, t, special),
                text_ids(&b, t, special),
                "{t:?} (special tokens: {special})"
            );
        }
    }
    for w in words {
        let args = |m| vec!["neighbors", m, *w, "-k", "5"];
        assert_eq!(
            answers(json(&args(&a))),
            answers(json(&args(&b))),
            "neighbors {w}"
        );
    }
    for args in [&["check"][..], &["undertrained", "--top", "8"]] {
        let run = |m: &str| json(&[&[args[0], m][..], &args[1..]].concat());
        let mut converted = run(&b);
        // check says what it read; the rest is the same.
        if args[0] == "check" {
            let findings = converted["findings"].as_array_mut().unwrap();
            let first = findings.remove(0);
            assert_eq!(first["code"], "tokenizer-converted", "{first}");
            assert_eq!(first["evidence"]["encodes"], true);
            converted["counts"]["info"] = json!(converted["counts"]["info"].as_u64().unwrap() - 1);
        }
        assert_eq!(answers(run(&a)), answers(converted), "{args:?}");
    }
}

#[test]
fn a_vocab_txt_download_answers_as_its_tokenizer_json_does() {
    same_answers(
        "bert",
        "bert-vocab-txt",
        &[
            "King and QUEEN",
            "the kings ran.",
            "Ünïcödé naïve kingly",
            "[MASK] of a",
        ],
        &["king", "=##ing", "#7"],
    );
    let d = fixture("bert-vocab-txt");
    let v = json(&["info", &d]);
    let t = &v["tokenizer"];
    assert_eq!(t["model"], "WordPiece");
    assert_eq!(
        (t["size"].as_u64(), t["added"].as_u64()),
        (Some(35), Some(5))
    );
    let vocab_txt = format!("{d}/vocab.txt");
    assert_eq!(t["file"], vocab_txt);
    assert_eq!(
        t["converted"],
        json!({"files": [vocab_txt], "class": "BertTokenizer", "encodes": true, "refused": null})
    );
    let kinds: Vec<(&str, &str)> = (v["files"].as_array().unwrap().iter())
        .map(|f| (f["path"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .filter(|(_, kind)| kind.starts_with("tokenizer"))
        .collect();
    assert_eq!(
        kinds,
        [
            (&*format!("{d}/tokenizer_config.json"), "tokenizer config"),
            (&*vocab_txt, "tokenizer")
        ]
    );
    let out = text(&["check", "fixtures/bert-vocab-txt"], 0);
    assert!(
        out.starts_with(
            "info  tokenizer-converted  no tokenizer.json: the vocabulary is read from vocab.txt as transformers' BertTokenizer converts them\n"
        ),
        "{out}"
    );
    let out = text(&["info", "fixtures/bert-vocab-txt"], 0);
    assert!(
        out.contains(
            "tokenizer   WordPiece, 35 ids (5 added, 5 special)  vocab.txt (converted as BertTokenizer)"
        ),
        "{out}"
    );
}

#[test]
fn a_vocab_json_and_merges_download_answers_as_its_tokenizer_json_does() {
    same_answers(
        "gpt2-tied",
        "gpt2-vocab-merges",
        &[
            "The king and the queen",
            " princess of Paris<|end_of_text|>",
            "naïve 東京\n\tkings!",
        ],
        &["king", "Ġking", "=Ġprince", "#340"],
    );
    let d = fixture("gpt2-vocab-merges");
    let v = json(&["info", &d]);
    let t = &v["tokenizer"];
    assert_eq!(
        (t["model"].as_str(), t["size"].as_u64()),
        (Some("BPE"), Some(341))
    );
    // Named by config.json's model_type, gpt2.
    let files = ["vocab.json", "merges.txt", "added_tokens.json"].map(|f| format!("{d}/{f}"));
    assert_eq!(
        t["converted"],
        json!({"files": files, "class": "GPT2Tokenizer", "encodes": true, "refused": null})
    );
    let out = text(&["info", "fixtures/gpt2-vocab-merges"], 0);
    assert!(
        out.contains("vocab.json, merges.txt, added_tokens.json (converted as GPT2Tokenizer)"),
        "{out}"
    );
}

#[test]
fn tokenizer_config_settings_change_the_conversion() {
    // A cased BERT: "King" is not lowercased to `king`, so it is unknown.
    let dir = fixture_copy("bert-vocab-txt");
    let d = dir.path().to_str().unwrap();
    let config = |v: Value| write_tokenizer_config(dir.path(), v);
    assert_eq!(text_ids(d, "King king", true), [2, 5, 5, 3]);
    config(json!({"tokenizer_class": "BertTokenizer", "do_lower_case": false}));
    assert_eq!(text_ids(d, "King king", true), [2, 1, 5, 3]);
    config(json!({"do_lower_case": "no"}));
    fails(
        &["lookup", d, "--text", "king"],
        "tokenizer_config.json`: `do_lower_case` is \"no\", expected true, false or null",
    );

    // GPT-2 with add_prefix_space: "king" reads as " king".
    let dir = fixture_copy("gpt2-vocab-merges");
    let d = dir.path().to_str().unwrap();
    let config = |v: Value| write_tokenizer_config(dir.path(), v);
    let king = text_ids(d, " king", false);
    assert_eq!(king.len(), 1);
    assert_ne!(text_ids(d, "king", false), king);
    config(json!({"add_prefix_space": true}));
    assert_eq!(text_ids(d, "king", false), king);
    // With add_bos_token, encoding starts with the bos token.
    config(json!({"add_bos_token": true}));
    assert_eq!(text_ids(d, " king", true), [340, king[0]]);
    // RoBERTa's processor wraps the text in cls … sep.
    config(json!({
        "tokenizer_class": "RobertaTokenizerFast",
        "cls_token": "<|begin_of_text|>",
        "sep_token": "<|end_of_text|>",
    }));
    assert_eq!(text_ids(d, " king", true), [339, king[0], 340]);
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"]["converted"]["class"], "RobertaTokenizer");
}

#[test]
fn a_class_not_converted_keeps_its_vocabulary_but_refuses_text() {
    let dir = fixture_copy("gpt2-vocab-merges");
    let d = dir.path().to_str().unwrap();
    std::fs::write(
        dir.path().join("tokenizer_config.json"),
        r#"{"tokenizer_class": "CLIPTokenizer"}"#,
    )
    .unwrap();
    fails(
        &["lookup", d, "--text", "king"],
        "vocab.json`: cannot encode text: tokenizer class \"CLIPTokenizer\" (tokenizer_config.json) with vocab.json and merges.txt is not supported; use --id or --token",
    );
    let v = json(&["lookup", d, "--token", "Ġking"]);
    assert_eq!(v["rows"].as_array().unwrap().len(), 1);
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"]["converted"]["class"], "CLIPTokenizer");
    assert_eq!(v["tokenizer"]["converted"]["encodes"], false);
    let out = text(&["info", d], 0);
    assert!(
        out.contains("(CLIPTokenizer, vocabulary only: no --text)"),
        "{out}"
    );
    let v = json(&["check", d]);
    assert_eq!(
        v["findings"][0]["message"],
        "no tokenizer.json: the vocabulary is read from vocab.json, merges.txt, added_tokens.json for ids and tokens only: tokenizer class \"CLIPTokenizer\" (tokenizer_config.json) with vocab.json and merges.txt is not supported"
    );
    // The reachability test cannot encode, so it says it does not know.
    let v = json(&["undertrained", d, "--top", "3"]);
    let candidates = v["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 3);
    for c in candidates {
        assert_eq!(c["reachable"], Value::Null, "{c}");
    }
}

#[test]
fn malformed_older_files_are_errors_naming_file_and_line() {
    let dir = fixture_copy("gpt2-vocab-merges");
    let d = dir.path().to_str().unwrap();
    let merges = dir.path().join("merges.txt");
    let good = std::fs::read_to_string(&merges).unwrap();
    std::fs::write(&merges, good.replacen('\n', "\nĠ k i\n", 1)).unwrap();
    // Rows by id and `info` do without the vocabulary; `check` reports it.
    let why = "merges.txt` is unreadable: line 2 is \"Ġ k i\", expected two tokens separated by one space";
    goes_on(&["info", d], 0, "merges.txt");
    unreadable_findings(d, why);
    fails(
        &["lookup", d, "--token", "Ġking"],
        "merges.txt`: line 2 is \"Ġ k i\", expected two tokens separated by one space",
    );
    std::fs::write(&merges, &good).unwrap();
    std::fs::write(dir.path().join("vocab.json"), r#"["a", "b"]"#).unwrap();
    fails(
        &["lookup", d, "--token", "a"],
        "vocab.json`: expected a JSON object of token ids",
    );
    std::fs::write(dir.path().join("vocab.json"), r#"{"a": -1}"#).unwrap();
    fails(
        &["lookup", d, "--token", "a"],
        "vocab.json`: expected a JSON object of token ids: invalid value: integer `-1`",
    );

    let dir = fixture_copy("bert-vocab-txt");
    let d = dir.path().to_str().unwrap();
    std::fs::write(dir.path().join("vocab.txt"), b"[PAD]\n[UNK]\nk\xffing\n").unwrap();
    fails(
        &["lookup", d, "--token", "king"],
        "vocab.txt`: line 3 is not valid UTF-8",
    );
    // Lines end as Python reads them: \r\n and \r too.
    std::fs::write(dir.path().join("vocab.txt"), "[PAD]\r\n[UNK]\r[CLS]\nking").unwrap();
    let v = json(&["lookup", d, "--token", "king", "--token", "[CLS]"]);
    let ids: Vec<u64> = (v["rows"].as_array().unwrap().iter())
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [3, 2]);
}

#[test]
fn special_tokens_are_read_and_numbered_as_transformers_does() {
    // RoBERTa's default special tokens that the vocabulary lacks get new
    // ids after it, in role order (transformers 5 gives `<mask>` 344 here),
    // which `check` reports as past the 341-row matrix.
    let dir = fixture_copy("gpt2-vocab-merges");
    let d = dir.path().to_str().unwrap();
    let config = |v: Value| write_tokenizer_config(dir.path(), v);
    config(json!({"tokenizer_class": "RobertaTokenizer"}));
    let v = json(&["lookup", d, "--token", "<|end_of_text|>"]);
    assert_eq!(v["rows"][0]["id"], 340);
    let f = check_finding(d, "tokenizer-larger-than-matrix");
    assert_eq!(
        f["message"],
        "tokenizer has 345 ids, `transformer.wte.weight` has 341 rows: 4 token(s) index past the end (341 \"</s>\", 342 \"<pad>\", 343 \"<s>\", 344 \"<mask>\")"
    );
    // special_tokens_map.json (bos, eos and unk `<|end_of_text|>`) wins
    // over tokenizer_config.json ...
    config(json!({
        "tokenizer_class": "GPT2Tokenizer",
        "add_bos_token": true,
        "bos_token": "<|begin_of_text|>",
    }));
    let king = text_ids(d, " king", false);
    assert_eq!(text_ids(d, " king", true), [340, king[0]]);
    // ... unless tokenizer_config.json has an added_tokens_decoder: then
    // transformers does not read the map.
    config(json!({
        "tokenizer_class": "GPT2Tokenizer",
        "add_bos_token": true,
        "bos_token": "<|begin_of_text|>",
        "added_tokens_decoder": {"339": {"content": "<|begin_of_text|>", "special": true}},
    }));
    assert_eq!(text_ids(d, " king", true), [339, king[0]]);
}

#[test]
fn a_sentencepiece_model_gives_ids_and_tokens_and_without_its_class_no_text() {
    let (a, b) = (
        fixture("pieces-sentencepiece"),
        fixture("sentencepiece-model"),
    );
    for args in [
        &["neighbors", "king", "-k", "5"][..],
        &["neighbors", "=king", "#3", "-k", "5"],
        &[
            "lookup", "--token", "▁king", "--token", "<0x0A>", "--token", "</s>",
        ],
        &["lookup", "--id", "0", "--id", "1", "--id", "259"],
    ] {
        let run = |m: &str| answers(json(&[&[args[0], m][..], &args[1..]].concat()));
        assert_eq!(run(&a), run(&b), "{args:?}");
    }
    let v = json(&["info", &b]);
    let t = &v["tokenizer"];
    assert_eq!(
        (t["model"].as_str(), t["size"].as_u64()),
        (Some("BPE"), Some(376))
    );
    assert_eq!(
        (t["added"].as_u64(), t["special"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(
        t["converted"],
        json!({"files": [format!("{b}/tokenizer.model")], "class": "LlamaTokenizer", "encodes": true, "refused": null})
    );
    let out = text(&["info", "fixtures/sentencepiece-model"], 0);
    assert!(
        out.contains("tokenizer.model (converted as LlamaTokenizer)"),
        "{out}"
    );

    // Without tokenizer_config.json's class: the vocabulary alone.
    let dir = fixture_copy("sentencepiece-model");
    let d = dir.path().to_str().unwrap();
    std::fs::remove_file(dir.path().join("tokenizer_config.json")).unwrap();
    let why = "the encoding of a SentencePiece model is converted for tokenizer_class LlamaTokenizer with a llama model type only (transformers builds the others differently by class and model type)";
    let v = json(&["info", d]);
    assert_eq!(
        v["tokenizer"]["converted"],
        json!({"files": [format!("{d}/tokenizer.model")], "class": null, "encodes": false, "refused": why})
    );
    fails(
        &["lookup", d, "--text", "the king"],
        &format!("tokenizer.model`: cannot encode text: {why}; use --id or --token"),
    );
    let out = text(&["info", d], 0);
    assert!(
        out.contains("tokenizer.model (vocabulary only: no --text)"),
        "{out}"
    );
    let v = json(&["check", d]);
    assert_eq!(
        v["findings"][0]["message"],
        format!(
            "no tokenizer.json: the vocabulary is read from tokenizer.model for ids and tokens only: {why}"
        )
    );

    // Llama 3's original tokenizer.model is a tiktoken file: not read.
    let model = dir.path().join("tokenizer.model");
    std::fs::write(&model, "IQ== 0\nIg== 1\n").unwrap();
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"], Value::Null);
    let unread = (v["files"].as_array().unwrap().iter())
        .find(|f| f["kind"] == "tokenizer, not read")
        .unwrap();
    assert_eq!(unread["path"], model.display().to_string());
    // A damaged one is an error naming it, where the vocabulary is needed.
    let good = std::fs::read(fixture("sentencepiece-model") + "/tokenizer.model").unwrap();
    std::fs::write(&model, &good[..5]).unwrap();
    fails(
        &["lookup", d, "--token", "▁king"],
        "tokenizer.model`: not a SentencePiece model: a field of 14 bytes at byte 2 runs past the end",
    );
    goes_on(&["info", d], 0, "tokenizer.model");
}

#[test]
fn a_t5_spiece_model_gives_its_pieces_and_sentinels() {
    // sentencepiece-model's pieces as a T5 download's spiece.model.
    let dir = fixture_copy("sentencepiece-model");
    let d = dir.path().to_str().unwrap();
    std::fs::rename(
        dir.path().join("tokenizer.model"),
        dir.path().join("spiece.model"),
    )
    .unwrap();
    let config = |v: Value| write_tokenizer_config(dir.path(), v);
    // Three sentinels after the 376 pieces, the last first.
    config(json!({"tokenizer_class": "T5Tokenizer", "extra_ids": 3}));
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"]["size"], 379);
    assert_eq!(v["tokenizer"]["converted"]["class"], "T5Tokenizer");
    assert_eq!(v["tokenizer"]["converted"]["encodes"], false);
    let f = check_finding(d, "tokenizer-larger-than-matrix");
    assert_eq!(
        f["message"],
        "tokenizer has 379 ids, `model.embed_tokens.weight` has 376 rows: 3 token(s) index past the end (376 \"<extra_id_2>\", 377 \"<extra_id_1>\", 378 \"<extra_id_0>\")"
    );
    let v = json(&["lookup", d, "--token", "▁king"]);
    assert_eq!(v["rows"][0]["id"], 292);
    // T5 adds 100 by default; config.json's model_type names the class.
    std::fs::remove_file(dir.path().join("tokenizer_config.json")).unwrap();
    set_model_type(dir.path(), "t5");
    assert_eq!(json(&["info", d])["tokenizer"]["size"], 476);
    config(json!({"tokenizer_class": "T5Tokenizer", "extra_ids": "many"}));
    fails(
        &["lookup", d, "--token", "▁king"],
        "tokenizer_config.json`: `extra_ids` is \"many\", expected a count up to 65536",
    );
    goes_on(&["info", d], 0, "tokenizer_config.json");
    // Another class's spiece.model (ALBERT's, XLNet's ...) is not read.
    config(json!({"tokenizer_class": "AlbertTokenizer"}));
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"], Value::Null);
}

#[test]
fn a_llama_tokenizer_model_encodes_as_transformers_5_does() {
    // With tokenizer_class LlamaTokenizer (and a llama model type), the
    // pieces' merges are derived and the text encoded as transformers 5's
    // LlamaTokenizer does: the same ids as pieces-sentencepiece's own
    // tokenizer.json (Metaspace, byte fallback, `<s>` first).
    let dir = fixture_copy("sentencepiece-model");
    let d = dir.path().to_str().unwrap();
    let config = |v: Value| write_tokenizer_config(dir.path(), v);
    config(json!({"tokenizer_class": "LlamaTokenizer", "add_bos_token": true}));
    let original = fixture("pieces-sentencepiece");
    for t in [
        "the king and the queen",
        " Paris king",
        "kingdom of kin\n\\n",
    ] {
        for special in [false, true] {
            assert_eq!(
                text_ids(d, t, special),
                text_ids(&original, t, special),
                "{t:?}"
            );
        }
    }
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"]["converted"]["class"], "LlamaTokenizer");
    assert_eq!(v["tokenizer"]["converted"]["encodes"], true);
    // add_prefix_space false: no `▁` before the text, so not `▁king`.
    assert_eq!(text_ids(d, "king", false), [292]);
    config(json!({"tokenizer_class": "LlamaTokenizer", "add_prefix_space": false}));
    assert_ne!(text_ids(d, "king", false), [292]);
    // Another model type (transformers builds Mistral's otherwise): the
    // vocabulary alone.
    config(json!({"tokenizer_class": "LlamaTokenizer"}));
    set_model_type(dir.path(), "mistral");
    fails(
        &["lookup", d, "--text", "king"],
        "cannot encode text: the encoding of a SentencePiece model is converted for tokenizer_class LlamaTokenizer with a llama model type only",
    );
}
