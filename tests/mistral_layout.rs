//! Mistral's own layout (`consolidated.safetensors`, `params.json`, no
//! config.json): `params.json` is read as the config (`vocab_size`, `dim`,
//! `tied_embeddings`), a stored `output.weight` is the untied head unless
//! `tied_embeddings` says otherwise, and a bad `params.json` is a one-line
//! error naming it.

use std::collections::HashMap;
use std::path::Path;

use safetensors::tensor::{Dtype, TensorView};
use serde_json::{Value, json};

use crate::common::{embscope, fails, goes_on, json as run_json, text, unreadable_findings};

/// A model directory in Mistral's layout: 12 rows of 8 F32 values in
/// `tok_embeddings.weight` and a different `output.weight`, with
/// `params` as `params.json`.
fn mistral_dir(params: &Value) -> tempfile::TempDir {
    mistral_dir_of(params, 12)
}

/// [`mistral_dir`] with `rows` rows.
fn mistral_dir_of(params: &Value, rows: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let cols = 8;
    let bytes = |shift: f32| -> Vec<u8> {
        (0..rows * cols)
            .flat_map(|i| ((i as f32 * 0.37 + shift).sin()).to_le_bytes())
            .collect()
    };
    let (embed, head) = (bytes(0.0), bytes(1.0));
    safetensors::serialize_to_file(
        [
            (
                "tok_embeddings.weight",
                TensorView::new(Dtype::F32, vec![rows, cols], &embed).unwrap(),
            ),
            (
                "output.weight",
                TensorView::new(Dtype::F32, vec![rows, cols], &head).unwrap(),
            ),
        ],
        None::<HashMap<String, String>>,
        &tmp.path().join("consolidated.safetensors"),
    )
    .unwrap();
    write(tmp.path(), "params.json", &params.to_string());
    tmp
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn params() -> Value {
    json!({"dim": 8, "n_layers": 1, "head_dim": 2, "hidden_dim": 16, "n_heads": 4,
           "n_kv_heads": 2, "norm_eps": 1e-5, "vocab_size": 12, "rope_theta": 1e6})
}

/// `check --json`'s exit code and findings' codes.
fn check(model: &str) -> (i32, Vec<String>, Value) {
    let out = embscope()
        .args(["--json", "check", model])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    (out.status.code().unwrap(), codes, v)
}

#[test]
fn params_json_is_the_config_and_the_stored_head_is_untied() {
    let tmp = mistral_dir(&params());
    let model = tmp.path().display().to_string();
    let info = run_json(&["info", &model]);
    assert!(
        info["config"]["file"]
            .as_str()
            .unwrap()
            .ends_with("params.json")
    );
    assert_eq!(
        (
            &info["config"]["vocab_size"],
            &info["config"]["hidden_size"]
        ),
        (&json!(12), &json!(8))
    );
    assert_eq!(info["tie"]["status"], "untied", "{info}");
    assert_eq!(info["head"]["name"], "output.weight");
    let shown = text(&["info", &model], 0);
    assert!(
        shown.contains("Mistral params.json, vocab_size 12, hidden_size 8"),
        "{shown}"
    );
    assert!(
        shown.contains("untied (separate head stored); params.json has no tied_embeddings (tied when no head is stored)"),
        "{shown}"
    );
    // The config's checks run, and find nothing.
    let (code, codes, v) = check(&model);
    assert_eq!(code, 0, "{v}");
    assert!(
        !codes
            .iter()
            .any(|c| c == "no-config" || c.starts_with("tied")),
        "{codes:?}"
    );
    // The head is read as the head.
    let n = run_json(&["neighbors", &model, "#3", "--matrix", "head", "-k", "2"]);
    assert_eq!(n["matrix"], "output.weight", "{n}");
}

#[test]
fn params_json_values_are_checked_against_the_matrices() {
    let mut p = params();
    p["vocab_size"] = json!(13);
    p["dim"] = json!(16);
    p["tied_embeddings"] = json!(true);
    let tmp = mistral_dir(&p);
    let (code, codes, v) = check(&tmp.path().display().to_string());
    assert_eq!(code, 1, "{v}");
    for want in [
        "config-vocab-mismatch",
        "hidden-size-mismatch",
        "tied-head-differs",
    ] {
        assert!(codes.iter().any(|c| c == want), "{want}: {codes:?}");
    }
    let messages = v["findings"].to_string();
    assert!(
        messages.contains("params.json vocab_size is 13"),
        "{messages}"
    );
    assert!(messages.contains("params.json dim is 16"), "{messages}");
    assert!(
        messages.contains("a loader that ties them ignores the stored head"),
        "{messages}"
    );
}

#[test]
fn config_json_wins_over_params_json() {
    // Mistral's repositories often hold both layouts.
    let tmp = mistral_dir(&params());
    write(
        tmp.path(),
        "config.json",
        r#"{"model_type": "mistral", "vocab_size": 12, "hidden_size": 8}"#,
    );
    let info = run_json(&["info", &tmp.path().display().to_string()]);
    assert!(
        info["config"]["file"]
            .as_str()
            .unwrap()
            .ends_with("config.json")
    );
    assert_eq!(info["config"]["model_type"], "mistral");
}

#[test]
fn a_bad_params_json_is_noted_and_left_out() {
    for (bad, needle) in [
        ("{\"dim\": 8,", "params.json"),
        ("[1, 2]", "params.json"),
        (
            r#"{"dim": 8, "vocab_size": 12, "tied_embeddings": "yes"}"#,
            "`tied_embeddings`",
        ),
        (r#"{"dim": -8, "vocab_size": 12}"#, "`dim`"),
    ] {
        let tmp = mistral_dir(&params());
        write(tmp.path(), "params.json", bad);
        // No command needs the config: the files decide the tie.
        let model = tmp.path().display().to_string();
        let v: serde_json::Value =
            serde_json::from_str(&goes_on(&["--json", "info", &model], 0, needle)).unwrap();
        assert!(v["config"].is_null(), "{v}");
        unreadable_findings(&model, needle);
    }
}

#[test]
fn mistral_tokenizer_files_are_named_as_not_read() {
    let tmp = mistral_dir(&params());
    write(tmp.path(), "tokenizer.model.v3", "");
    let model = tmp.path().display().to_string();
    assert!(text(&["info", &model], 0).contains("no tokenizer.json (tokenizer.model.v3 not read)"));
    fails(
        &["neighbors", &model, "king"],
        "only Mistral's tokenizer.model.v3, which embscope does not read (many Mistral repositories also hold a tokenizer.json: put it beside them)",
    );
    // Rows by id need none.
    let n = run_json(&["neighbors", &model, "#3", "-k", "2"]);
    assert_eq!(
        n["queries"][0]["results"].as_array().map(Vec::len),
        Some(2),
        "{n}"
    );
}

/// Tekken's pre-tokenizer pattern (Mistral Nemo's tekken.json).
const TEKKEN_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A tekken.json of the 256 bytes and `words` after them, with 30 special
/// tokens (the file lists none: the 20 of older files, then fillers).
fn tekken(words: &[&str]) -> Value {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let vocab: Vec<Value> = (0..=255u8)
        .map(|b| vec![b])
        .chain(words.iter().map(|w| w.as_bytes().to_vec()))
        .enumerate()
        .map(|(rank, b)| json!({"rank": rank, "token_bytes": b64(&b), "token_str": null}))
        .collect();
    json!({"config": {"pattern": TEKKEN_PATTERN, "num_vocab_tokens": vocab.len(),
                      "default_vocab_size": 30 + vocab.len(), "default_num_special_tokens": 30,
                      "version": "v3"},
           "vocab": vocab})
}

/// A Mistral-layout model of `rows` rows with `tekken` as its tekken.json.
fn tekken_dir(tekken: &Value, rows: usize) -> tempfile::TempDir {
    let mut p = params();
    p["vocab_size"] = json!(rows);
    let tmp = mistral_dir_of(&p, rows);
    write(tmp.path(), "tekken.json", &tekken.to_string());
    tmp
}

#[test]
fn tekken_json_is_read_and_encodes_as_mistral_common_does() {
    // The ids `mistral_common`'s `Tekkenizer.encode(text, bos=False,
    // eos=False)` gives for this file (checked once by hand and with
    // mistral_common 1.x; `benches/tekken_reference.py` compares Mistral
    // Nemo's and Pixtral's real files): the special tokens at 0-29, byte b
    // at 30 + b, "ar" 286, "Par" 287, "is" 288, "Paris" 289, " P" 290, " Par" 291.
    let words = ["ar", "Par", "is", "Paris", " P", " Par"];
    let tmp = tekken_dir(&tekken(&words), 292);
    let model = tmp.path().display().to_string();
    let ids = |t: &str| -> Vec<u64> {
        let v = run_json(&["lookup", &model, &format!("--text={t}")]);
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(ids("Paris"), [289]);
    assert_eq!(ids("Parisar"), [289, 286]);
    assert_eq!(ids(" Par"), [291]);
    assert_eq!(ids("Pas"), [110, 127, 145]);
    assert_eq!(ids("Paris is"), [289, 62, 288]);
    // The token strings of rows by id.
    let tokens = |model: &str, ids: &[u32]| -> Vec<String> {
        let mut args = vec!["lookup".to_string(), model.to_string()];
        args.extend(ids.iter().map(|id| format!("--id={id}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let rows = run_json(&args);
        let rows = rows["rows"].as_array().unwrap();
        rows.iter()
            .map(|r| r["token"].as_str().unwrap().to_string())
            .collect()
    };
    let got = tokens(&model, &[1, 20, 29, 291]);
    assert_eq!(got, ["<s>", "<SPECIAL_20>", "<SPECIAL_29>", " Par"]);
    assert!(text(&["info", &model], 0).contains("tekken.json (converted as Tekkenizer)"));
    // The fillers after the named special tokens are reserved placeholders.
    let u = run_json(&["undertrained", &model, "--top", "0"]);
    assert_eq!(u["reference"]["placeholders"], 10, "{u}");
    // A file's own list of special tokens comes first.
    let mut listed = tekken(&words);
    listed["special_tokens"] = json!([{"rank": 0, "token_str": "<unk>", "is_control": true},
                                      {"rank": 1, "token_str": "<s>", "is_control": true},
                                      {"rank": 2, "token_str": "</s>", "is_control": true},
                                      {"rank": 3, "token_str": "[THINK]", "is_control": true}]);
    let tmp = tekken_dir(&listed, 292);
    let got = tokens(&tmp.path().display().to_string(), &[3, 4]);
    assert_eq!(got, ["[THINK]", "<SPECIAL_4>"]);
}

#[test]
fn a_bad_tekken_json_is_a_one_line_error() {
    let good = tekken(&["ar"]);
    let mut cases: Vec<(Value, &str)> = Vec::new();
    let mut v = good.clone();
    v["vocab"][300 - 44]["token_bytes"] = json!("not base64!");
    cases.push((v, "is not base64"));
    let mut v = good.clone();
    v["vocab"][5]["rank"] = json!(6);
    cases.push((v, "`vocab[5]` has rank 6"));
    let mut v = good.clone();
    v["config"]["default_vocab_size"] = json!(400);
    cases.push((v, "leaves 370 after the special tokens"));
    let mut v = good.clone();
    v["vocab"][256]["token_bytes"] = json!("YQ==");
    cases.push((v, "`vocab[256]` repeats the bytes of an earlier entry"));
    let mut v = good.clone();
    v["special_tokens"] = json!({"rank": 0});
    cases.push((v, "`special_tokens` is not a list"));
    let mut v = good.clone();
    v["config"]["default_num_special_tokens"] = json!(5);
    cases.push((v, "20 special tokens, more than"));
    let mut v = good.clone();
    v["config"]["default_num_special_tokens"] = json!(1 << 20);
    cases.push((v, "more than the 65536 embscope reads"));
    let mut v = good;
    v["config"]["pattern"] = json!(7);
    cases.push((v, "`config.pattern` is not a string"));
    for (bad, needle) in cases {
        let tmp = tekken_dir(&bad, 287);
        let err = fails(
            &["lookup", &tmp.path().display().to_string(), "--token", "ar"],
            needle,
        );
        assert!(err.contains("tekken.json"), "{err}");
    }
}
