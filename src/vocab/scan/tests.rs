use super::*;

/// The parts of every merge of `array`, as strings; `None` when the scan
/// or a merge fails.
fn parts(array: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut ok = true;
    let end = merges(array.as_bytes(), 0, |m| match m.parts() {
        Some([a, b]) => out.push((
            String::from_utf8(a.into_owned()).unwrap(),
            String::from_utf8(b.into_owned()).unwrap(),
        )),
        None => ok = false,
    })?;
    assert_eq!(end, array.len(), "{array}");
    ok.then_some(out)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn merges_of_both_shapes_with_escapes() {
    let want = pairs(&[("a", "b"), ("\"", "\\"), ("é", "x/"), ("Ġ", "\n")]);
    let joined = r#"[ "a b", "\" \\","\u00e9 x\/" , "Ġ \n" ]"#;
    assert_eq!(parts(joined), Some(want.clone()));
    let pair = "[\n  [\"a\", \"b\"],\n  [ \"\\\"\",\"\\\\\" ],\n  [\"\\u00E9\", \"x\\/\"],\n  [\"Ġ\",\"\\n\"]\n]";
    assert_eq!(parts(pair), Some(want));
    assert_eq!(parts("[ ]"), Some(vec![]));
}

#[test]
fn joined_merges_split_at_exactly_one_space() {
    assert_eq!(parts(r#"["a b c"]"#), None);
    assert_eq!(parts(r#"["ab"]"#), None);
    assert_eq!(parts(r#"["\u0020a"]"#), Some(pairs(&[("", "a")])));
    assert_eq!(parts(r##"["#version: 0.2"]"##), None);
    // A lone surrogate is no string.
    assert_eq!(parts(r#"["\ud800 a"]"#), None);
}

#[test]
fn malformed_merges_are_refused() {
    for bad in [
        "",
        "{}",
        "[",
        r#"["a b""#,
        r#"["a b",]"#,
        r#"["a b" "c d"]"#,
        r#"[["a","b","c"]]"#,
        r#"[["a"]]"#,
        r#"[["a","b"],"c d"]"#,
        r#"["a b",["c","d"]]"#,
        r#"[["a",1]]"#,
        r#"["a\x b"]"#,
        r#"["a\u12 b"]"#,
        "[\"a\tb\"]",
        r#"[1]"#,
        r#"["a b"}"#,
    ] {
        assert_eq!(merges(bad.as_bytes(), 0, |_| {}), None, "{bad}");
    }
}

#[test]
fn locates_merges_and_vocab_in_any_order() {
    let files = [
        (
            r#"{"model": {"type": "BPE", "vocab": {"a": 0, "merges": 1}, "merges": [["a", "a"]]}, "x": [1, {"y": "}"}]}"#,
            r#"{"a": 0, "merges": 1}"#,
            r#"[["a", "a"]]"#,
        ),
        (
            r#"{ "added_tokens": [{"content": "\"merges\""}], "model":{"merges":["a a"] ,"vocab":{"a":0}} }"#,
            r#"{"a":0}"#,
            r#"["a a"]"#,
        ),
    ];
    for (file, vocab, merges) in files {
        let b = file.as_bytes();
        let layout = locate(b, |_| {}, |_, _| {}, |_| {}).expect(file);
        let m = layout.merges.expect("merges");
        assert_eq!(&file[m.clone()], merges);
        let v = layout.vocab.expect("a vocab");
        assert_eq!(&file[v.clone()], vocab);
        let spliced: serde_json::Value = serde_json::from_slice(&splice(b, &mut [v, m])).unwrap();
        assert_eq!(spliced["model"]["merges"], serde_json::json!([]));
        assert_eq!(spliced["model"]["vocab"], serde_json::json!([]));
    }
}

#[test]
fn no_layout_without_merges_or_vocab_read_to_the_end() {
    for file in [
        r#"{"model": {"vocab_x": {"a": 0}}}"#,
        r#"{"model": {"merges": {"a": 0}}}"#,
        r#"{"merges": ["a a"], "model": {}}"#,
        r#"{"model": {"vocab": {}}, "x": 1} x"#,
        r#"{"model": {"vocab": {}, "merges": ["a a" "b"]}}"#,
        r#"["model"]"#,
    ] {
        assert!(
            locate(file.as_bytes(), |_| {}, |_, _| {}, |_| {}).is_none(),
            "{file}"
        );
    }
}

/// The error of loading a directory whose tokenizer.json is `text`.
fn load(text: &str) -> std::result::Result<usize, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
    crate::vocab::Vocab::load(dir.path(), None)
        .map(|v| v.unwrap().size())
        .map_err(|e| e.to_string())
}

/// A tokenizer.json of vocab `a`, `b` and the merges array `merges`.
fn with_merges(merges: &str) -> String {
    format!(r#"{{"model": {{"vocab": {{"a": 0, "b": 1}}, "merges": {merges}}}}}"#)
}

#[test]
fn load_refuses_malformed_merges_as_serde_does() {
    // The scan refuses them, serde's parse of the whole file says where.
    for merges in [
        "[[\"a\", \"b\"],]",
        "[[\"a\" \"b\"]]",
        "[\"a\\x b\"]",
        "[\"a b\"",
    ] {
        let text = with_merges(merges);
        let json = serde_json::from_str::<serde_json::Value>(&text).unwrap_err();
        let at = format!("line {} column {}", json.line(), json.column());
        let err = load(&text).unwrap_err();
        assert!(err.contains("tokenizer.json"), "{err}");
        assert!(err.contains("not a valid tokenizer file"), "{err}");
        assert!(err.contains(&at), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

#[test]
fn load_reads_merges_the_scan_leaves_to_serde() {
    // Valid JSON of other shapes (three parts, mixed, numbers): read by
    // serde over the whole file as before.
    for merges in [
        "[[\"a\", \"b\", \"c\"]]",
        "[[\"a\", \"b\"], \"a b\"]",
        "[1, {}]",
        "[\"a b\", \"a\\u0020b\"]",
    ] {
        let text = with_merges(merges);
        assert_eq!(load(&text), Ok(2), "{merges}");
    }
}

#[test]
fn vocab_objects_of_plain_ids() {
    let read = |s: &str| {
        let mut out = Vec::new();
        let end = vocab(s.as_bytes(), 0, |t, id| {
            out.push((
                String::from_utf8(t.text().unwrap().into_owned()).unwrap(),
                id,
            ))
        })?;
        assert_eq!(end, s.len(), "{s}");
        Some(out)
    };
    let want = [("a", 0), ("é\"", u32::MAX), ("a", 12)];
    let want: Vec<(String, u32)> = want.iter().map(|&(t, id)| (t.to_string(), id)).collect();
    assert_eq!(
        read(r#"{ "a": 0, "\u00e9\"": 4294967295 ,"a":12}"#),
        Some(want)
    );
    assert_eq!(read("{ }"), Some(vec![]));
    for bad in [
        r#"{"a": 01}"#,
        r#"{"a": -1}"#,
        r#"{"a": -0}"#,
        r#"{"a": 1.0}"#,
        r#"{"a": 1e2}"#,
        r#"{"a": 4294967296}"#,
        r#"{"a": 99999999999}"#,
        r#"{"a" 1}"#,
        r#"{"a": 1,}"#,
        r#"{"a": "1"}"#,
        r#"{"a": 1"#,
    ] {
        assert_eq!(read(bad), None, "{bad}");
    }
}

#[test]
fn load_reads_vocabs_the_scan_leaves_to_serde() {
    // A list (Unigram) loads as before; what the scan refuses, serde
    // refuses with its own message.
    for (vocab, size) in [
        (r#"{"\u0041": 4, "b": 1}"#, 5),
        (r#"[["a", 0.0], ["b", -1.5]]"#, 2),
    ] {
        let text = format!(r#"{{"model": {{"vocab": {vocab}, "merges": []}}}}"#);
        assert_eq!(load(&text), Ok(size), "{vocab}");
    }
    for vocab in [r#"{"a": 1.5}"#, r#"{"a": -0}"#, r#"{"a": 01}"#] {
        let text = format!(r#"{{"model": {{"merges": [], "vocab": {vocab}}}}}"#);
        let err = load(&text).unwrap_err();
        let json = serde_json::from_str::<super::super::parse::RawTokenizer>(&text)
            .err()
            .unwrap();
        assert!(err.ends_with(&json.to_string()), "{err} / {json}");
    }
}

/// `n` items made by `item` in a pretty-printed array or object (`open`
/// and `close`), laid out the same, as the templates read them.
fn pretty(open: &str, close: &str, n: usize, item: impl Fn(usize) -> String) -> String {
    let items: Vec<String> = (0..n).map(item).collect();
    format!("{open}\n      {}\n    {close}", items.join(",\n      "))
}

#[test]
fn templates_read_regular_layouts_and_refuse_what_breaks_them() {
    let pair = |k: usize| format!("[\n        \"a{k}\",\n        \"b\"\n      ]");
    let merges_text = pretty("[", "]", 50, pair);
    let got = parts(&merges_text).unwrap();
    assert_eq!(got.len(), 50);
    assert_eq!(got[49], ("a49".to_string(), "b".to_string()));
    let entry = |k: usize| format!("\"t{k}\": {}", k * 1000);
    let vocab_text = pretty("{", "}", 50, entry);
    let mut ids = Vec::new();
    let end = vocab(vocab_text.as_bytes(), 0, |_, id| ids.push(id));
    assert_eq!(end, Some(vocab_text.len()));
    assert_eq!(ids, (0..50).map(|k| k as u32 * 1000).collect::<Vec<_>>());
    // One bad item among regular ones, where the template reads.
    for bad in [
        "[\n        \"a\",\n        \"b\",\n        \"c\"\n      ]",
        "[\n        \"a\"\n        \"b\"\n      ]",
        "[\n        \"a\u{1}\",\n        \"b\"\n      ]",
        "[\n        \"a\",\n        1\n      ]",
    ] {
        let text = pretty("[", "]", 50, |k| if k == 30 { bad.into() } else { pair(k) });
        assert_eq!(merges(text.as_bytes(), 0, |_| {}), None, "{bad}");
    }
    for bad in [
        "\"t\": 01",
        "\"t\": 1.5",
        "\"t\": -1",
        "\"t\" 1",
        "\"t\u{1}\": 1",
        "\"t\": 99999999999",
    ] {
        let text = pretty(
            "{",
            "}",
            50,
            |k| if k == 30 { bad.into() } else { entry(k) },
        );
        assert_eq!(vocab(text.as_bytes(), 0, |_, _| {}), None, "{bad}");
    }
    let trailing = pretty("[", "]", 50, pair).replace("\n    ]", ",\n    ]");
    assert_eq!(merges(trailing.as_bytes(), 0, |_| {}), None);
}

#[test]
fn merge_places_keep_both_strings_in_eight_bytes() {
    let pair = MergePlace::new((10..15, false), Some((24..31, true))).unwrap();
    assert_eq!(pair.first(), (10..15, false));
    assert_eq!(pair.second(), Some((24..31, true)));
    // The limits: a string of 4095 bytes, 63 between a pair's strings,
    // a start just below 4 GiB.
    let top = u32::MAX as usize;
    let joined = MergePlace::new((top - 4095..top, true), None).unwrap();
    assert_eq!(joined.first(), (top - 4095..top, true));
    assert_eq!(joined.second(), None);
    let wide = MergePlace::new((0..4095, false), Some((4158..4161, false))).unwrap();
    assert_eq!(wide.second(), Some((4158..4161, false)));
    for (a, b) in [
        (0..4096, None),
        (0..5, Some(69..75)),
        (top + 1..top + 4, None),
        (0..5, Some(5..4101)),
    ] {
        assert!(
            MergePlace::new((a.clone(), false), b.clone().map(|b| (b, false))).is_none(),
            "{a:?} {b:?}"
        );
    }
    // Recorded from a file: a merge that does not fit leaves the places
    // incomplete (the reachability test then uses the full tokenizer).
    let record = |file: &str| {
        let mut places = MergePlaces::for_file(file.len());
        merges(file.as_bytes(), 0, |m| places.record(file.as_bytes(), m)).unwrap();
        places.complete().map(|p| p.merges.len())
    };
    assert_eq!(record(r#"[["a", "b"], ["ab", "c"]]"#), Some(2));
    assert_eq!(
        record(&format!(r#"["a b", "{} c"]"#, "x".repeat(5000))),
        None
    );
}
