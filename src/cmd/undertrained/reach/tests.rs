//! Tests of the cut-down tokenizer against the full one.

use super::*;
use std::path::Path;

#[test]
fn cut_down_answers_match_the_full_tokenizer() {
    // Byte-level BPE, SentencePiece-style BPE (Metaspace, byte
    // fallback): every id, by the cut-down tokenizer and the full one.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for dir in ["pieces-byte-level", "pieces-sentencepiece"] {
        let v = Vocab::load_keeping_merges(&root.join(dir), None)
            .unwrap()
            .unwrap();
        assert!(cuts_down(&v), "{dir}");
        let ids: Vec<u32> = (0..v.size() as u32 + 2).collect();
        let texts: Vec<String> = ids.iter().filter_map(|&id| v.own_text(id)).collect();
        let parsed = parse(v.merges_source().unwrap()).expect("parses");
        assert!(restricted(&v, &parsed, texts.iter()).is_some(), "{dir}");
        let full: Vec<Option<bool>> = ids.iter().map(|&id| v.reaches_itself(id)).collect();
        assert_eq!(reachable(&v, &ids), full, "{dir}");
        // Loaded without its merges kept: the full tokenizer answers.
        let plain = Vocab::load(&root.join(dir), None).unwrap().unwrap();
        assert!(!cuts_down(&plain), "{dir}");
        assert_eq!(reachable(&plain, &ids), full, "{dir}");
        let (yes, no) = (
            full.iter().filter(|r| **r == Some(true)).count(),
            full.iter().filter(|r| **r == Some(false)).count(),
        );
        assert!(yes > 50 && no > 0, "{dir}: {yes} reach, {no} do not");
    }
}

/// A copy of the byte-level fixture in a temporary directory, its
/// merges array written as `merges` gives it.
fn with_merges(merges: impl Fn(&[(String, String)]) -> String) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pieces-byte-level");
    let text = std::fs::read_to_string(root.join("tokenizer.json")).unwrap();
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

/// The answers for every id of the vocabulary in `dir`: through the
/// cut-down tokenizer (`None` when the file does not parse for it) and
/// the full one.
fn answers(dir: &Path) -> (Option<Vec<Option<bool>>>, Vec<Option<bool>>) {
    let v = Vocab::load_keeping_merges(dir, None).unwrap().unwrap();
    let ids: Vec<u32> = (0..v.size() as u32).collect();
    let cut = v.merges_source().and_then(parse).map(|parsed| {
        let texts: Vec<String> = ids.iter().filter_map(|&id| v.own_text(id)).collect();
        assert!(restricted(&v, &parsed, texts.iter()).is_some());
        reachable(&v, &ids)
    });
    let full = ids.iter().map(|&id| v.reaches_itself(id)).collect();
    (cut, full)
}

#[test]
fn merges_of_both_shapes_with_escapes() {
    // Every string escaped (`\"`, `\\`, `\/`, `\u00e9`-style), as pairs
    // and joined, and joined as written: the same answers as the full
    // tokenizer reading them.
    let pairs = with_merges(|m| {
        let items: Vec<String> = m
            .iter()
            .map(|(a, b)| format!("[{}, {}]", escaped(a), escaped(b)))
            .collect();
        format!("[\n{}\n]", items.join(",\n"))
    });
    let joined = with_merges(|m| {
        let items: Vec<String> = m
            .iter()
            .map(|(a, b)| escaped(&format!("{a} {b}")))
            .collect();
        format!("[{}]", items.join(", "))
    });
    let plain = with_merges(|m| {
        let items: Vec<String> = m
            .iter()
            .map(|(a, b)| json!(format!("{a} {b}")).to_string())
            .collect();
        format!("[{}]", items.join(",\n  "))
    });
    for dir in [&pairs, &joined, &plain] {
        let (cut, full) = answers(dir.path());
        assert_eq!(cut, Some(full.clone()));
        assert!(full.iter().filter(|r| **r == Some(true)).count() > 50);
    }
}

#[test]
fn unexpected_merges_use_the_full_tokenizer() {
    // Valid JSON the tokenizers crate refuses (three parts, mixed
    // shapes): no cut-down tokenizer, the full one's answers, no panic.
    let three = with_merges(|m| {
        let items: Vec<String> = m
            .iter()
            .map(|(a, b)| json!([a, b, "x"]).to_string())
            .collect();
        format!("[{}]", items.join(","))
    });
    let mixed = with_merges(|m| {
        let (a, b) = &m[0];
        format!("[{}, {}]", json!([a, b]), json!(format!("{a} {b}")))
    });
    for dir in [&three, &mixed] {
        let (cut, full) = answers(dir.path());
        assert_eq!(cut, None);
        assert!(full.iter().all(Option::is_none), "{full:?}");
    }
}

/// A copy of the byte-level fixture (model vocab 0..=342, added
/// `<|end_of_text|>` 343) with `more` added tokens.
fn with_added(more: &[(u32, &str, bool)]) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pieces-byte-level");
    let text = std::fs::read_to_string(root.join("tokenizer.json")).unwrap();
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
fn added_tokens_matched_whole_or_left_to_the_model() {
    // `z<q>` (normalized) is split by `<q>` (not normalized, matched
    // first), so the model gets `z`: its own text does not reach it.
    let dir = with_added(&[(344, "z<q>", true), (345, "<q>", false)]);
    let v = Vocab::load_keeping_merges(dir.path(), None)
        .unwrap()
        .unwrap();
    assert!(cuts_down(&v));
    let ids: Vec<u32> = (0..v.size() as u32).collect();
    let full: Vec<Option<bool>> = ids.iter().map(|&id| v.reaches_itself(id)).collect();
    assert_eq!(reachable(&v, &ids), full);
    // Only the added tokens, as `undertrained` lists its candidates.
    assert_eq!(
        reachable(&v, &[343, 344, 345]),
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
    let ids: Vec<u32> = (0..v.size() as u32).collect();
    let full: Vec<Option<bool>> = ids.iter().map(|&id| v.reaches_itself(id)).collect();
    assert_eq!(reachable(&v, &ids), full);
    assert_eq!(full[65], Some(true));
    assert_eq!(full[344..], [Some(false), Some(false), Some(false)]);
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
fn merges_filtered_in_any_number_of_tasks() {
    // The kept merges of the byte-level fixture (a few of its 87): in
    // order whatever the split into tasks.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pieces-byte-level");
    let v = Vocab::load_keeping_merges(&root, None).unwrap().unwrap();
    let parsed = parse(v.merges_source().unwrap()).unwrap();
    let mut keep = HashSet::new();
    for id in 0..v.size() as u32 {
        if let Some(text) = v.own_text(id).filter(|_| id % 3 == 0) {
            substrings(&text, &mut keep);
        }
    }
    let known: serde_json::Map<String, Value> = v
        .model_entries()
        .map(|(t, id)| (t.to_string(), json!(id)))
        .collect();
    let one = kept_merges(&parsed, &known, &keep, MERGES_PER_TASK).unwrap();
    assert!(one.len() > 2 && one.len() < 87, "{}", one.len());
    for per_task in [1, 2, 7] {
        assert_eq!(
            kept_merges(&parsed, &known, &keep, per_task),
            Some(one.clone())
        );
    }
}

#[test]
fn substrings_on_char_boundaries() {
    let mut set = HashSet::new();
    substrings("aé", &mut set);
    let mut all: Vec<&str> = set.iter().map(String::as_str).collect();
    all.sort_unstable();
    assert_eq!(all, ["a", "aé", "é"]);
}
