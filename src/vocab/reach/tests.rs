//! Tests of reach on the fixtures of each vocabulary kind: the ids a text
//! must reach and the planted ones none can, and the cut-down tokenizer's
//! answers against the full tokenizer's on the same witnesses.

use std::path::{Path, PathBuf};

use foldhash::HashMap;
use serde_json::{Value, json};

use super::json_cut::{self, added_ids_hold, kept_merges};
use super::*;
use crate::vocab::readable;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The vocabulary of a fixture directory, its merges' places kept (as
/// `undertrained` loads it), or of a fixture GGUF file.
fn load(rel: &str) -> Vocab {
    let path = fixture(rel);
    if rel.ends_with(".gguf") {
        let mut f = std::fs::File::open(&path).unwrap();
        let content = candle_core::quantized::gguf_file::Content::read(&mut f).unwrap();
        return Vocab::from_gguf(&path, &content.metadata).unwrap().unwrap();
    }
    Vocab::load_keeping_merges(&path, None).unwrap().unwrap()
}

/// The answers of the full tokenizer on the same witnesses.
fn full_answers(v: &Vocab, ids: &[u32]) -> Vec<Option<bool>> {
    let witnesses = Witnesses::new(v);
    ids.iter()
        .map(|&id| {
            let texts = witnesses.of(id)?;
            let holds = |t: &String| v.encode(t, false).is_ok_and(|ids| ids.contains(&id));
            Some(texts.iter().any(holds))
        })
        .collect()
}

/// Every id of `v`, and two past it.
fn all_ids(v: &Vocab) -> Vec<u32> {
    (0..v.size() as u32 + 2).collect()
}

/// The id of raw entry `raw`.
fn id(v: &Vocab, raw: &str) -> u32 {
    v.id(raw).unwrap_or_else(|| panic!("{raw:?} is an entry"))
}

#[test]
fn the_cut_down_tokenizer_answers_as_the_full_one() {
    // Every id of each vocabulary the test cuts down for: byte-level and
    // SentencePiece BPE tokenizer.json (Metaspace, or the dummy prefix in
    // the normaliser), and GGUF `gpt2` and `llama`.
    for rel in [
        "pieces-byte-level",
        "pieces-sentencepiece",
        "sentencepiece-dummy-prefix",
        "untrained",
        "gguf/gpt2-f16-tied.gguf",
        "gguf/llama-q8_0-tied.gguf",
    ] {
        let v = load(rel);
        assert!(v.reach_cuts_down(), "{rel}");
        let ids = all_ids(&v);
        let got = v.reached(&ids).unwrap();
        assert_eq!(got, full_answers(&v, &ids), "{rel}");
        let yes = got.iter().filter(|r| **r == Some(true)).count();
        let no = got.iter().filter(|r| **r == Some(false)).count();
        assert!(yes > 200 && no > 0, "{rel}: {yes} reached, {no} not");
        assert_eq!(
            got[v.size()..],
            [None, None],
            "{rel}: ids past the vocabulary"
        );
    }
    // Loaded without its merges' places: the full tokenizer answers.
    let plain = Vocab::load(&fixture("pieces-byte-level"), None)
        .unwrap()
        .unwrap();
    assert!(!plain.reach_cuts_down());
    let ids = all_ids(&plain);
    assert_eq!(
        plain.reached(&ids).unwrap(),
        load("pieces-byte-level").reached(&ids).unwrap()
    );
}

/// Asserts which of `raw` entries of `v` are reached.
fn assert_reach(v: &Vocab, what: &str, cases: &[(&str, bool)]) {
    let ids: Vec<u32> = cases.iter().map(|(raw, _)| id(v, raw)).collect();
    let got = v.reached(&ids).unwrap();
    for ((raw, want), got) in cases.iter().zip(got) {
        assert_eq!(got, Some(*want), "{raw:?} in {what}");
    }
}

#[test]
fn sentencepiece_with_a_dummy_prefix() {
    // Pieces starting a word are reached without the space the dummy
    // prefix gives back; `king` only after a char the vocabulary lacks
    // (in running text `making` takes `▁making`); `kin` and `zz` no merge
    // makes; `A` is a piece, a space becomes `▁`, no text holds 0xF8.
    let v = load("sentencepiece-dummy-prefix");
    assert!(v.reach_cuts_down());
    let cases = [
        ("▁king", true),
        ("▁making", true),
        ("▁ma", true),
        ("▁", true),
        ("king", true),
        ("ing", true),
        ("in", true),
        ("ma", true),
        ("k", true),
        ("A", true),
        ("<0xE6>", true),
        ("<0x0A>", true),
        ("<s>", true),
        ("kin", false),
        ("zz", false),
        ("<0x41>", false),
        ("<0x20>", false),
        ("<0xF8>", false),
    ];
    assert_reach(&v, "sentencepiece-dummy-prefix", &cases);
    assert_eq!(v.encode("making", false).unwrap(), [id(&v, "▁making")]);
    // The same pieces from a tokenizer.model (merges derived from them,
    // the full tokenizer) and a GGUF `llama` vocabulary.
    let m = Vocab::load(&fixture("sentencepiece-model"), None)
        .unwrap()
        .unwrap();
    assert!(!m.reach_cuts_down());
    let cases = [
        ("▁king", true),
        ("▁", true),
        ("king", true),
        ("<0x0A>", true),
        ("<0x41>", true),
        ("<0x42>", false),
        ("<0xF8>", false),
    ];
    assert_reach(&m, "sentencepiece-model", &cases);
    let g = load("gguf/llama-q8_0-tied.gguf");
    let cases = [
        ("▁Paris", true),
        ("▁Par", true),
        ("P", true),
        ("<0x0A>", true),
        ("<0x50>", false),
        ("<unused0>", false),
    ];
    assert_reach(&g, "gguf/llama-q8_0-tied.gguf", &cases);
}

#[test]
fn byte_level_bpe() {
    // `king` (a piece after other letters) and `Ġking` both; the piece
    // `\n` (a backslash, then n), which the pre-tokenizer splits, not; a
    // lone byte of a char no merge takes, yes; a byte no UTF-8 text
    // holds, no.
    let v = load("pieces-byte-level");
    let cases = [
        ("Ġking", true),
        ("king", true),
        ("kin", true),
        ("\\n", false),
        ("æ", true),
        ("ø", false),
    ];
    assert_reach(&v, "pieces-byte-level", &cases);
    let g = load("gguf/gpt2-f16-tied.gguf");
    assert_reach(
        &g,
        "gguf/gpt2-f16-tied.gguf",
        &[("ĠParis", true), ("æ", true), ("ø", false)],
    );
}

#[test]
fn wordpiece_with_accents() {
    // `##king` after a one-char word no entry continues with `k`;
    // accented and capitalised entries, punctuation after a word and
    // `[unused0]` (split at its brackets) no text reaches.
    let v = Vocab::load(&fixture("wordpiece-accents"), None)
        .unwrap()
        .unwrap();
    assert!(!v.reach_cuts_down());
    let cases = [
        ("king", true),
        ("##king", true),
        ("##s", true),
        ("##ing", true),
        ("cafe", true),
        ("cafes", true),
        ("[CLS]", true),
        ("café", false),
        ("Café", false),
        ("##,", false),
        ("##é", false),
        ("[unused0]", false),
    ];
    assert_reach(&v, "wordpiece-accents", &cases);
    let ids = all_ids(&v);
    assert_eq!(v.reached(&ids).unwrap(), full_answers(&v, &ids));
}

/// A copy of the byte-level fixture in a temporary directory, its
/// merges array written as `merges` gives it.
fn with_merges(merges: impl Fn(&[(String, String)]) -> String) -> tempfile::TempDir {
    let text = std::fs::read_to_string(fixture("pieces-byte-level/tokenizer.json")).unwrap();
    let mut file: Value = serde_json::from_str(&text).unwrap();
    let pairs: Vec<(String, String)> =
        serde_json::from_value(file["model"]["merges"].take()).unwrap();
    file["model"]["merges"] = json!("@merges@");
    let text = serde_json::to_string_pretty(&file)
        .unwrap()
        .replace("\"@merges@\"", &merges(&pairs));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
    dir
}

/// `s` as a JSON string with every character but ASCII letters and
/// digits escaped (`\"`, `\\`, `\/`, else `\uXXXX`, surrogate pairs
/// beyond the BMP).
fn escaped(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            c if c.is_ascii_alphanumeric() => out.push(c),
            c => {
                let mut units = [0; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[test]
fn merges_of_both_shapes_with_escapes() {
    // Every string escaped (`\"`, `\\`, `\/`, `\u00e9`-style), as pairs
    // and joined, and joined as written: the same answers as the full
    // tokenizer reading them.
    let pairs = with_merges(|m| {
        let items: Vec<String> = (m.iter())
            .map(|(a, b)| format!("[{}, {}]", escaped(a), escaped(b)))
            .collect();
        format!("[\n{}\n]", items.join(",\n"))
    });
    let joined = with_merges(|m| {
        let items: Vec<String> = (m.iter())
            .map(|(a, b)| escaped(&format!("{a} {b}")))
            .collect();
        format!("[{}]", items.join(", "))
    });
    let plain = with_merges(|m| {
        let items: Vec<String> = (m.iter())
            .map(|(a, b)| json!(format!("{a} {b}")).to_string())
            .collect();
        format!("[{}]", items.join(",\n  "))
    });
    for dir in [&pairs, &joined, &plain] {
        let v = Vocab::load_keeping_merges(dir.path(), None)
            .unwrap()
            .unwrap();
        let parsed = json_cut::parse(v.merges_source().unwrap());
        assert!(parsed.is_some_and(|p| json_cut::build(&v, &p, None).is_some()));
        let ids = all_ids(&v);
        let got = v.reached(&ids).unwrap();
        assert_eq!(got, full_answers(&v, &ids));
        assert!(got.iter().filter(|r| **r == Some(true)).count() > 50);
    }
}

#[test]
fn merges_the_tokenizers_crate_refuses_are_an_error() {
    // Valid JSON the tokenizers crate refuses (three parts, mixed
    // shapes): no cut-down tokenizer, and the full one's error.
    let three = with_merges(|m| {
        let items: Vec<String> = (m.iter())
            .map(|(a, b)| json!([a, b, "x"]).to_string())
            .collect();
        format!("[{}]", items.join(","))
    });
    let mixed = with_merges(|m| {
        let (a, b) = &m[0];
        format!("[{}, {}]", json!([a, b]), json!(format!("{a} {b}")))
    });
    for dir in [&three, &mixed] {
        let v = Vocab::load_keeping_merges(dir.path(), None)
            .unwrap()
            .unwrap();
        let err = v.reached(&[5, 6]).unwrap_err().to_string();
        assert!(err.contains("cannot build the tokenizer"), "{err}");
    }
}

/// A copy of the byte-level fixture (model vocab 0..=342, added
/// `<|end_of_text|>` 343) with `more` added tokens.
fn with_added(more: &[(u32, &str, bool)]) -> tempfile::TempDir {
    let text = std::fs::read_to_string(fixture("pieces-byte-level/tokenizer.json")).unwrap();
    let mut file: Value = serde_json::from_str(&text).unwrap();
    let list = file["added_tokens"].as_array_mut().unwrap();
    for &(id, content, normalized) in more {
        list.push(json!({"id": id, "content": content, "single_word": false,
            "lstrip": false, "rstrip": false, "normalized": normalized, "special": false}));
    }
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string_pretty(&file).unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
    dir
}

#[test]
fn added_tokens_split_the_text_first() {
    // `z<q>` (normalized) is split by `<q>` (not normalized, matched
    // first), so the model gets `z`: no text reaches it.
    let dir = with_added(&[(344, "z<q>", true), (345, "<q>", false)]);
    let v = Vocab::load_keeping_merges(dir.path(), None)
        .unwrap()
        .unwrap();
    assert!(v.reach_cuts_down());
    let ids = all_ids(&v);
    assert_eq!(v.reached(&ids).unwrap(), full_answers(&v, &ids));
    assert_eq!(
        v.reached(&[343, 344, 345]).unwrap(),
        [Some(true), Some(false), Some(true)]
    );
}

#[test]
fn added_ids_the_full_tokenizer_does_not_give_use_it() {
    // `b` is model token 65, and `<x>` added twice: `tokenizers` gives
    // them 65 and 344 whatever the file says.
    let dir = with_added(&[(344, "b", false), (345, "<x>", false), (346, "<x>", false)]);
    let v = Vocab::load_keeping_merges(dir.path(), None)
        .unwrap()
        .unwrap();
    let ids = all_ids(&v);
    let full = full_answers(&v, &ids);
    assert_eq!(v.reached(&ids).unwrap(), full);
    assert_eq!(full[65], Some(true));
    assert_eq!(full[344..347], [Some(false), Some(false), Some(false)]);
    let in_model = HashMap::from_iter([("b", 65)]);
    assert!(!added_ids_hold(&[("b", 344)], &in_model, 343));
    assert!(added_ids_hold(
        &[("b", 65), ("<x>", 343), ("<x>", 343)],
        &in_model,
        343
    ));
    assert!(!added_ids_hold(
        &[("<x>", 343), ("<x>", 344)],
        &in_model,
        343
    ));
    assert!(!added_ids_hold(&[("", 343)], &in_model, 343));
}

#[test]
fn kept_merges_make_kept_entries_in_file_order() {
    // The merges of the byte-level fixture whose result a third of its
    // tokens' witnesses hold: a few of its 87, in the file's order.
    let v = load("pieces-byte-level");
    let parsed = json_cut::parse(v.merges_source().unwrap()).unwrap();
    let mut keep = Substrings::new(16);
    for id in (0..v.size() as u32).filter(|id| id % 3 == 0) {
        for t in Witnesses::new(&v).of(id).unwrap_or_default() {
            keep.add(&readable::to_raw(&t, v.style()));
        }
    }
    let known: serde_json::Map<String, Value> = (v.model_entries())
        .map(|(t, id)| (t.to_string(), json!(id)))
        .collect();
    let kept = kept_merges(&parsed, &known, &keep).unwrap();
    assert!(kept.len() > 2 && kept.len() < 87, "{}", kept.len());
    let text = std::fs::read_to_string(fixture("pieces-byte-level/tokenizer.json")).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    let all = file["model"]["merges"].as_array().unwrap();
    let places: Vec<usize> = (kept.iter())
        .map(|m| {
            all.iter()
                .position(|a| a == m)
                .expect("a merge of the file")
        })
        .collect();
    assert!(places.is_sorted(), "{places:?}");
    for m in &kept {
        let joined = format!("{}{}", m[0].as_str().unwrap(), m[1].as_str().unwrap());
        assert!(keep.may_hold(joined.as_bytes()), "{joined}");
    }
}

#[test]
fn witnesses_of_each_kind() {
    let sp = load("sentencepiece-dummy-prefix");
    let w = Witnesses::new(&sp);
    let x = w.absent().unwrap();
    assert_eq!(
        w.of(id(&sp, "▁king")).unwrap(),
        ["king".to_string(), " king".into(), format!("{x} king")]
    );
    assert_eq!(
        w.of(id(&sp, "ing")).unwrap(),
        ["ing".to_string(), format!("{x}ing")]
    );
    assert!(w.of(id(&sp, "<0x41>")).unwrap().is_empty());
    assert!(w.of(id(&sp, "<0xF8>")).unwrap().is_empty());
    let chars = w.of(id(&sp, "<0xE6>")).unwrap();
    assert!(chars.iter().all(|c| c.as_bytes()[0] == 0xE6), "{chars:?}");
    assert_eq!(w.of(sp.size() as u32), None);
    let wp = Vocab::load(&fixture("wordpiece-accents"), None)
        .unwrap()
        .unwrap();
    let w = Witnesses::new(&wp);
    let after = w.of(id(&wp, "##king")).unwrap();
    assert_eq!(after, ["aking", "bking", "cking"]);
    let bl = load("pieces-byte-level");
    let w = Witnesses::new(&bl);
    let texts = w.of(id(&bl, "æ")).unwrap();
    assert!(texts.iter().all(|t| t.as_bytes()[0] == 0xE6), "{texts:?}");
}
