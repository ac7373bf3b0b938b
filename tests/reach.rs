//! `undertrained`'s reach column: a token is reached when some text
//! encodes to a sequence holding it, as the model's tokenizer runs, on
//! every vocabulary kind (SentencePiece with a dummy prefix, byte-level
//! BPE, WordPiece; tokenizer.json, tokenizer.model and GGUF), and the
//! notes agree with the column.

use serde_json::Value;

use crate::common::{fixture, json};

/// `reachable` of every row of `model`, by id.
fn reach(model: &str) -> Vec<Value> {
    let v = json(&[
        "undertrained",
        model,
        "--top",
        "1000000",
        "--include-reference",
    ]);
    let mut out = vec![Value::Null; v["rows"].as_u64().unwrap() as usize];
    for c in v["candidates"].as_array().unwrap() {
        out[c["id"].as_u64().unwrap() as usize] = c["reachable"].clone();
    }
    out
}

/// The id of entry `token` of `model`.
fn id_of(model: &str, token: &str) -> usize {
    let v = json(&["lookup", model, "--token", token]);
    v["rows"][0]["id"].as_u64().unwrap() as usize
}

/// Asserts the reach of each `(entry, reached)` of `model`.
fn assert_reach(model: &str, cases: &[(&str, bool)]) {
    let m = fixture(model);
    let all = reach(&m);
    for (token, want) in cases {
        assert_eq!(all[id_of(&m, token)], *want, "{token:?} in {model}");
    }
}

#[test]
fn sentencepiece_pieces_are_reached_without_the_dummy_prefix() {
    // `▁king` is what `king` encodes to; the piece `king` follows other
    // text; `kin` no merge makes; `A` is a piece, so its byte piece is
    // never used; a space becomes `▁`.
    let cases = [
        ("▁king", true),
        ("▁making", true),
        ("king", true),
        ("ing", true),
        ("<0xE6>", true),
        ("kin", false),
        ("zz", false),
        ("<0x41>", false),
        ("<0x20>", false),
        ("<0xF8>", false),
    ];
    assert_reach("sentencepiece-dummy-prefix", &cases);
    // The same pieces read from tokenizer.model and from GGUF metadata.
    let cases = [
        ("▁king", true),
        ("king", true),
        ("<0x0A>", true),
        ("<0x42>", false),
    ];
    assert_reach("sentencepiece-model", &cases);
    let cases = [
        ("▁Paris", true),
        ("<0x0A>", true),
        ("<0x50>", false),
        ("<unused0>", false),
    ];
    assert_reach("gguf/llama-q8_0-tied.gguf", &cases);
}

#[test]
fn byte_level_and_wordpiece_tokens() {
    // The piece of a backslash and `n` (printed `\\n`): the pre-tokenizer
    // splits them.
    let cases = [
        ("Ġking", true),
        ("king", true),
        ("\\\\n", false),
        ("\\n", true),
    ];
    assert_reach("pieces-byte-level", &cases);
    let cases = [("ĠParis", true), ("ø", false)];
    assert_reach("gguf/gpt2-f16-tied.gguf", &cases);
    let cases = [
        ("king", true),
        ("##king", true),
        ("##s", true),
        ("cafe", true),
        ("café", false),
        ("Café", false),
        ("##,", false),
        ("##é", false),
        ("[unused0]", false),
    ];
    assert_reach("wordpiece-accents", &cases);
}

#[test]
fn the_notes_agree_with_the_column() {
    // No placeholder and a token for every row: no reference rows, and
    // the note says so without claiming every token is reached; the
    // listed bytes no text reaches are named.
    let v = json(&[
        "undertrained",
        &fixture("pieces-sentencepiece"),
        "--top",
        "12",
    ]);
    let notes: Vec<&str> = (v["notes"].as_array().unwrap().iter())
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes[0].starts_with(
            "no reference rows (no reserved placeholder entries, every row has a token, and no two rows are byte-identical)"
        ),
        "{notes:?}"
    );
    let unreached: Vec<String> = (v["candidates"].as_array().unwrap().iter())
        .filter(|c| c["reachable"] == false)
        .map(|c| format!("{} \"{}\"", c["id"], c["token"].as_str().unwrap()))
        .collect();
    assert!(!unreached.is_empty());
    assert_eq!(
        notes[1],
        format!(
            "{} listed token(s) that no text reaches are not in the reference set (reserved placeholders and rows without a token): {}",
            unreached.len(),
            unreached.join(", ")
        )
    );
    // Not tested: no column, no note about it.
    let v = json(&[
        "undertrained",
        &fixture("pieces-sentencepiece"),
        "--top",
        "12",
        "--no-reachable",
    ]);
    assert_eq!(v["notes"].as_array().unwrap().len(), 1);
    for c in v["candidates"].as_array().unwrap() {
        assert_eq!(c["reachable"], Value::Null);
    }
}
