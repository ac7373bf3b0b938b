//! Word queries normalised as the model's tokenizer normalises text:
//! WordPiece lowercasing and stripping accents (`café` is `cafe`),
//! SentencePiece with NFKC (`ｋｉｎｇ` is `king`), byte-level BPE with NFC
//! (`café` typed decomposed); a note says so, `=entry` and `#ID` are taken
//! as typed, and suggestions for an unknown word consider its normalised
//! form.

use serde_json::{Value, json};

use crate::common::{embscope, fails, fixture, fixture_copy};

/// `--json` stdout and stderr of a run that must succeed.
fn run(args: &[&str]) -> (Value, String) {
    let out = embscope().arg("--json").args(args).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    (serde_json::from_slice(&out.stdout).expect("JSON"), err)
}

/// The row id each query of a `neighbors` report resolved to.
fn query_ids(v: &Value) -> Vec<u64> {
    (v["queries"].as_array().unwrap().iter())
        .map(|q| q["ids"][0].as_u64().unwrap())
        .collect()
}

/// The id of entry `token` of `model`.
fn id_of(model: &str, token: &str) -> u64 {
    let (v, _) = run(&["lookup", model, "--token", token]);
    v["rows"][0]["id"].as_u64().unwrap()
}

#[test]
fn wordpiece_strips_accents_and_case() {
    let m = fixture("wordpiece-accents");
    let (cafe, accented) = (id_of(&m, "cafe"), id_of(&m, "café"));
    assert_ne!(cafe, accented);
    let (v, err) = run(&["neighbors", &m, "café", "Café", "=café", "-k", "1"]);
    assert_eq!(query_ids(&v), [cafe, cafe, accented]);
    for typed in ["café", "Café"] {
        let note = format!("note: \"{typed}\" normalised to \"cafe\" as the tokenizer does");
        assert!(err.contains(&note), "{err}");
    }
    assert!(!err.contains("\"=café\" normalised"), "{err}");
    assert_eq!(
        v["notes"][0],
        json!("\"café\" normalised to \"cafe\" as the tokenizer does")
    );
    // Ids are rows, whatever the tokenizer does.
    let (v, err) = run(&["neighbors", &m, &format!("#{accented}"), "-k", "1"]);
    assert_eq!(query_ids(&v), [accented]);
    assert!(!err.contains("normalised"), "{err}");
    // An unknown word: the suggestions start from its normalised form.
    let err = fails(&["neighbors", &m, "Cafésx"], "is not in the vocabulary");
    assert!(err.contains("close entries: `cafes`"), "{err}");
}

#[test]
fn sentencepiece_applies_nfkc() {
    // Full-width letters are NFKC's `king`; the word, `▁king`, is taken
    // over the piece `king`, and the notes say both.
    let m = fixture("sentencepiece-dummy-prefix");
    let (word, piece) = (id_of(&m, "▁king"), id_of(&m, "king"));
    let (v, err) = run(&["neighbors", &m, "ｋｉｎｇ", "king", "-k", "1"]);
    assert_eq!(query_ids(&v), [word, word]);
    assert!(
        err.contains("note: \"ｋｉｎｇ\" normalised to \"king\" as the tokenizer does"),
        "{err}"
    );
    let resolved = format!(
        "note: \"king\" resolved to \"▁king\" (#{word}, the word); for the piece \"king\" (#{piece}) write \"=king\""
    );
    assert!(err.contains(&resolved), "{err}");
    assert_eq!(err.matches("normalised").count(), 1, "{err}");
    // The text encodes to the same row.
    let (v, _) = run(&["lookup", &m, "--text", "ｋｉｎｇ"]);
    assert_eq!(v["rows"][0]["id"], word);
}

#[test]
fn byte_level_applies_nfc() {
    // Qwen-style: an NFC normaliser before byte-level BPE. `café` typed
    // with a combining accent is the entry of the composed word.
    let dir = fixture_copy("pieces-byte-level");
    let path = dir.path().join("tokenizer.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file["normalizer"] = json!({"type": "NFC"});
    let vocab = file["model"]["vocab"].as_object_mut().unwrap();
    let (rows, cafe) = (vocab.len() as u64, "ĠcafÃ©");
    vocab.insert(cafe.to_string(), json!(rows - 1));
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    let m = dir.path().to_str().unwrap();
    let decomposed = "cafe\u{301}";
    let (v, err) = run(&["neighbors", m, decomposed, "-k", "1"]);
    assert_eq!(query_ids(&v), [rows - 1]);
    let note = format!("note: {decomposed:?} normalised to \"café\" as the tokenizer does");
    assert!(err.contains(&note), "{err}");
    // A word the normaliser leaves alone gets no note.
    let (_, err) = run(&["neighbors", m, "king", "-k", "1"]);
    assert!(!err.contains("normalised"), "{err}");
}
