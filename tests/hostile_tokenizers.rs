//! Tokenizer files made to hang, exhaust memory or panic: one very long
//! piece (a tekken.json token, a tokenizer.model piece, a GGUF token of a
//! million bytes) loads and encodes in time linear in it; pieces `a` …
//! 3,000 `a`s, which imply millions of merges, are refused with the bound
//! named; a `Precompiled` normaliser the tokenizers crate panics on is a
//! one-line error, and `check` reports it. The files are built here.

use std::path::Path;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file::{self, Value as Gguf};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use serde_json::{Value, json};

use crate::common::{embscope, fails, fixture_copy, json};
use crate::regenerate::tokenizer_files::write_sentencepiece_model;

/// The longest a command on one long piece may take, in a debug build
/// on a loaded machine (quadratic work took minutes).
const LIMIT: Duration = Duration::from_secs(10);

/// Runs `args`, checks it ends within [`LIMIT`] with `code`; returns
/// stderr.
fn timed(args: &[&str], code: i32) -> String {
    let start = Instant::now();
    let out = embscope().args(args).output().expect("runs");
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(took < LIMIT, "{args:?} took {took:?}");
    err
}

/// A million `a`s.
fn long_piece() -> String {
    "a".repeat(1_000_000)
}

/// A Llama-layout model whose tokenizer is `tokenizer.model` of `pieces`
/// (text, score, type), read as `LlamaTokenizer`.
fn sentencepiece_dir(pieces: &[(&str, f32, u8)]) -> tempfile::TempDir {
    let dir = fixture_copy("sentencepiece-model");
    write_sentencepiece_model(dir.path(), pieces).unwrap();
    dir
}

/// Writes `model.gguf` in `dir`: a llama architecture with an F32
/// `token_embd.weight` of 4 columns, a row per token, and a `llama`
/// vocabulary of `tokens` (types: unknown, control, normal …), scored
/// lower the later they come.
fn gguf(dir: &Path, tokens: &[String]) -> String {
    let types = (0..tokens.len()).map(|i| match i {
        0 => Gguf::I32(2),
        1 | 2 => Gguf::I32(3),
        _ => Gguf::I32(1),
    });
    let md = [
        ("general.architecture", Gguf::String("llama".into())),
        ("llama.embedding_length", Gguf::U32(4)),
        ("tokenizer.ggml.model", Gguf::String("llama".into())),
        (
            "tokenizer.ggml.tokens",
            Gguf::Array(tokens.iter().map(|t| Gguf::String(t.clone())).collect()),
        ),
        (
            "tokenizer.ggml.scores",
            Gguf::Array((0..tokens.len()).map(|i| Gguf::F32(-(i as f32))).collect()),
        ),
        ("tokenizer.ggml.token_type", Gguf::Array(types.collect())),
    ];
    let values: Vec<f32> = (0..tokens.len() * 4)
        .map(|i| 0.1 + (i % 7) as f32)
        .collect();
    let t = Tensor::from_vec(values, (tokens.len(), 4), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&t, GgmlDType::F32).unwrap();
    let refs: Vec<(&str, &Gguf)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let path = dir.join("model.gguf");
    let mut file = std::fs::File::create(&path).unwrap();
    gguf_file::write(&mut file, &refs, &[("token_embd.weight", &q)]).unwrap();
    path.display().to_string()
}

/// The specials, `▁` and `a`, then `more`.
fn with_specials(more: impl Iterator<Item = String>) -> Vec<String> {
    ["<unk>", "<s>", "</s>", "▁", "a"]
        .map(String::from)
        .into_iter()
        .chain(more)
        .collect()
}

#[test]
fn one_long_piece_is_read_in_linear_time() {
    let long = long_piece();
    // tokenizer.model: its merges derived from the pieces.
    let pieces = [
        ("<unk>", 0.0, 2),
        ("<s>", 0.0, 3),
        ("</s>", 0.0, 3),
        ("▁", -1.0, 1),
        ("a", -2.0, 1),
        ("▁a", -3.0, 1),
        (long.as_str(), -4.0, 1),
    ];
    let dir = sentencepiece_dir(&pieces);
    let d = dir.path().to_str().unwrap();
    timed(&["lookup", d, "--text", "a a"], 0);
    // GGUF: the same, from its metadata.
    let tmp = tempfile::tempdir().unwrap();
    let model = gguf(tmp.path(), &with_specials([long.clone()].into_iter()));
    timed(&["lookup", &model, "--text", "a"], 0);
    timed(&["undertrained", &model], 0);
    // tekken.json: every split of a token into two tokens is a merge.
    let dir = fixture_copy("pieces-byte-level");
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    let tekken = tekken(&[long.as_bytes()]);
    std::fs::write(dir.path().join("tekken.json"), tekken.to_string()).unwrap();
    let d = dir.path().to_str().unwrap();
    timed(&["lookup", d, "--text", "aaa"], 0);
}

/// A tekken.json of the 256 bytes and `tokens` after them.
fn tekken(tokens: &[&[u8]]) -> Value {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let vocab: Vec<Value> = (0..=255u8)
        .map(|b| vec![b])
        .chain(tokens.iter().map(|t| t.to_vec()))
        .enumerate()
        .map(|(rank, b)| json!({"rank": rank, "token_bytes": b64(&b), "token_str": null}))
        .collect();
    json!({"config": {"pattern": "\\S+|\\s+", "num_vocab_tokens": vocab.len(),
                      "default_vocab_size": 30 + vocab.len(), "default_num_special_tokens": 30,
                      "version": "v3"},
           "vocab": vocab})
}

#[test]
fn merges_past_the_bound_are_refused() {
    // `a` … 3,000 `a`s: every split of each is two pieces, 4.5 million
    // merges of 4.5 GB.
    let runs: Vec<String> = (2..=3000).map(|n| "a".repeat(n)).collect();
    let bound = "its pieces split into merges of more than 268435456 bytes (real vocabularies make under 5 MB)";
    let mut pieces: Vec<(&str, f32, u8)> =
        vec![("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)];
    pieces.push(("▁", 0.0, 1));
    pieces.push(("a", 0.0, 1));
    pieces.extend(runs.iter().map(|r| (r.as_str(), 0.0, 1)));
    let dir = sentencepiece_dir(&pieces);
    let d = dir.path().to_str().unwrap();
    let err = fails(&["lookup", d, "--text", "aaa"], bound);
    assert!(
        err.contains("tokenizer.model`: cannot encode text: "),
        "{err}"
    );
    // The vocabulary itself is read.
    let v = json(&["info", d]);
    assert_eq!(v["tokenizer"]["converted"]["encodes"], false);
    assert_eq!(v["tokenizer"]["converted"]["refused"], bound);
    let tmp = tempfile::tempdir().unwrap();
    let model = gguf(tmp.path(), &with_specials(runs.into_iter()));
    let err = fails(&["lookup", &model, "--text", "aaa"], bound);
    assert!(
        err.contains("model.gguf`: cannot build the tokenizer: "),
        "{err}"
    );
    fails(&["lookup", &model, "--text", "aaa", "-q"], bound);
    json(&["lookup", &model, "--id", "3"]);
}

#[test]
fn a_normalizer_the_crate_panics_on_is_an_error() {
    // `{"type": "Precompiled"}` without its charsmap: the tokenizers
    // crate's deserialiser panics on it.
    let dir = fixture_copy("pieces-sentencepiece");
    let path = dir.path().join("tokenizer.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file["normalizer"] = json!({"type": "Sequence", "normalizers": [{"type": "Precompiled"}]});
    std::fs::write(&path, file.to_string()).unwrap();
    let d = dir.path().to_str().unwrap();
    let fault = "normalizer Precompiled has no precompiled_charsmap";
    let err = fails(&["lookup", d, "--text", "king"], fault);
    assert!(
        err.contains("tokenizer.json`: cannot build the tokenizer: "),
        "{err}"
    );
    let err = fails(&["neighbors", d, "king"], fault);
    assert!(
        err.contains("tokenizer.json`: cannot normalise text: "),
        "{err}"
    );
    // Rows by id need no tokenizer.
    json(&["neighbors", d, "#5", "-k", "1"]);
    // undertrained scores the rows and says why reach is not tested.
    let out = embscope().args(["undertrained", d]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("note: no token's reach is tested: `{d}/tokenizer.json`: cannot build the tokenizer: {fault}")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // check: an error finding.
    let out = embscope().args(["--json", "check", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = (v["findings"].as_array().unwrap().iter())
        .find(|f| f["code"] == "tokenizer-unloadable")
        .expect("a tokenizer-unloadable finding");
    assert_eq!(finding["severity"], "error");
    assert_eq!(finding["evidence"]["fault"], fault);
    assert_eq!(
        finding["message"],
        format!(
            "tokenizer.json cannot be loaded by the tokenizers crate: {fault}; no text can be encoded"
        )
    );
}
