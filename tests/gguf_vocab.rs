//! GGUF vocabularies through the binary, beyond `gguf_words`: text encoded
//! from the metadata as the same vocabulary's tokenizer.json encodes it,
//! SentencePiece byte fallback in text, special ids declared by
//! `tokenizer.ggml.*` checked, an unsupported tokenizer model, and bad
//! tokenizer metadata as a one-line error. Small GGUF files for the bad
//! cases are written here with candle's `gguf_file::write`.

use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use serde_json::Value as Json;

use crate::common::{embscope, fails, fixture, json};

/// (id, readable token) of each row of a `lookup --json` report.
fn rows(v: &Json) -> Vec<(u64, String)> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let id = r["id"].as_u64().unwrap();
            (id, r["token"].as_str().unwrap().to_string())
        })
        .collect()
}

fn lookup_text(model: &str, text: &str, special: bool) -> Vec<(u64, String)> {
    let mut args = vec!["lookup", model, "--text", text];
    if special {
        args.push("--add-special-tokens");
    }
    rows(&json(&args))
}

#[test]
fn gpt2_gguf_encodes_and_reads_like_its_tokenizer_json() {
    // The GGUF stores the vocabulary and merges of the gpt2-tied fixture.
    let (st, gg) = (fixture("gpt2-tied"), fixture("gguf/gpt2-f16-tied.gguf"));
    for text in [
        "The king and the queen\n of Paris, 1234!",
        "  spaces  and\ttabs ",
        "<|begin_of_text|>king",
    ] {
        let want = lookup_text(&st, text, true);
        assert!(want.len() > 2, "{text:?}");
        assert_eq!(lookup_text(&gg, text, true), want, "{text:?}");
    }
    let info = json(&["info", &gg])["tokenizer"].clone();
    let want = json(&["info", &st])["tokenizer"].clone();
    assert_eq!(info["model"], "gpt2");
    for key in ["size", "added", "special"] {
        assert_eq!(info[key], want[key], "{key}");
    }
}

#[test]
fn llama_gguf_text_falls_back_to_bytes() {
    for rel in ["gguf/llama-q8_0-tied.gguf", "gguf/llama-f32-untied.gguf"] {
        let model = fixture(rel);
        let paris = rows(&json(&["lookup", &model, "--token", "▁Paris"]))[0].0;
        let newline = rows(&json(&["lookup", &model, "--token", "<0x0A>"]))[0].0;
        let want = vec![
            (1, "<s>".to_string()),
            (paris, " Paris".to_string()),
            (newline, "\\n".to_string()),
        ];
        assert_eq!(lookup_text(&model, "Paris\n", true), want, "{rel}");
        assert_eq!(lookup_text(&model, "Paris\n", false), want[1..], "{rel}");
    }
}

/// Writes `model.gguf` in `dir`: a llama architecture with a 3 × 4 F32
/// `token_embd.weight` and the given tokenizer metadata.
fn write_gguf(dir: &Path, tokenizer: Vec<(&str, Value)>) -> String {
    let mut md = vec![
        ("general.architecture", Value::String("llama".into())),
        ("llama.embedding_length", Value::U32(4)),
    ];
    md.extend(tokenizer);
    let values: Vec<f32> = (0..12).map(|i| 0.1 + i as f32 * 0.05).collect();
    let t = Tensor::from_vec(values, (3, 4), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&t, GgmlDType::F32).unwrap();
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let path = dir.join("model.gguf");
    let mut file = std::fs::File::create(&path).unwrap();
    gguf_file::write(&mut file, &md_refs, &[("token_embd.weight", &q)]).unwrap();
    path.display().to_string()
}

fn tokens(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::String(s.to_string())).collect())
}

#[test]
fn bad_tokenizer_metadata_is_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let types = |codes: &[i32]| Value::Array(codes.iter().map(|&c| Value::I32(c)).collect());
    let cases: Vec<(Vec<(&str, Value)>, &str)> = vec![
        (
            vec![
                ("tokenizer.ggml.tokens", tokens(&["a", "b", "c"])),
                ("tokenizer.ggml.token_type", types(&[1, 1])),
            ],
            "metadata `tokenizer.ggml.token_type` has 2 entries, expected 3",
        ),
        (
            vec![
                ("tokenizer.ggml.tokens", tokens(&["a", "b", "c"])),
                ("tokenizer.ggml.token_type", types(&[1, 7, 1])),
            ],
            "metadata `tokenizer.ggml.token_type` entry 1 is an i32 7, expected a token type 0 to 6",
        ),
        (
            vec![
                ("tokenizer.ggml.tokens", tokens(&["a", "b", "c"])),
                ("tokenizer.ggml.bos_token_id", Value::String("1".into())),
            ],
            "metadata `tokenizer.ggml.bos_token_id` is a string, expected an integer",
        ),
    ];
    for (metadata, want) in cases {
        let model = write_gguf(tmp.path(), metadata);
        let err = fails(&["info", &model], want);
        assert!(err.contains("model.gguf"), "{err}");
        fails(&["lookup", &model, "--id", "0"], want);
    }
}

#[test]
fn unsupported_tokenizer_model_gives_tokens_but_no_text() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_gguf(
        tmp.path(),
        vec![
            ("tokenizer.ggml.model", Value::String("rwkv".into())),
            ("tokenizer.ggml.tokens", tokens(&["a", "b\n", "c"])),
        ],
    );
    assert_eq!(
        rows(&json(&["lookup", &model, "--id", "1"])),
        vec![(1, "b\\n".to_string())]
    );
    fails(
        &["lookup", &model, "--text", "ab"],
        "cannot encode text: GGUF tokenizer model \"rwkv\" is not supported; use --id or --token",
    );
}

#[test]
fn gguf_special_ids_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_gguf(
        tmp.path(),
        vec![
            ("tokenizer.ggml.model", Value::String("gpt2".into())),
            ("tokenizer.ggml.pre", Value::String("gpt-2".into())),
            ("tokenizer.ggml.tokens", tokens(&["a", "b", "<|eos|>"])),
            ("tokenizer.ggml.bos_token_id", Value::U32(7)),
            ("tokenizer.ggml.eos_token_id", Value::U32(2)),
            ("tokenizer.ggml.add_bos_token", Value::Bool(true)),
        ],
    );
    let out = embscope()
        .args(["--json", "check", &model])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "special-id-out-of-range")
        .expect("bos beyond the matrix is reported");
    assert_eq!(
        f["message"],
        "special token id(s) beyond the matrix's 3 rows: tokenizer.ggml bos_token_id 7"
    );
    assert_eq!(f["evidence"]["declarations"][0]["source"], "tokenizer.ggml");
    // Encoding cannot add a bos that does not exist; without it, it can.
    fails(
        &["lookup", &model, "--text", "ab", "--add-special-tokens"],
        "cannot add special tokens: metadata `tokenizer.ggml.bos_token_id` is 7, expected an id \
         below the 3 tokens",
    );
    let ids: Vec<u64> = rows(&json(&["lookup", &model, "--text", "ab"]))
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(ids, vec![0, 1]);
}
