//! Tests of `Vocab` on real tokenizer files written by the fixture writers.

use std::path::Path;

use serde_json::{Value, json};

use super::tokenizer_files as tf;
use super::*;

/// GPT-2-style vocabulary: `Paris` and `Ġking` reachable through merges.
const BL_TOKENS: &[&str] = &[
    "P", "a", "r", "i", "s", "k", "n", "g", "Ġ", "Ċ", "Ġk", "in", "Ġkin", "Ġking", "Pa", "ri",
    "ris", "Paris",
];
const BL_MERGES: &[(&str, &str)] = &[
    ("Ġ", "k"),
    ("i", "n"),
    ("Ġk", "in"),
    ("Ġkin", "g"),
    ("P", "a"),
    ("r", "i"),
    ("ri", "s"),
    ("Pa", "ris"),
];
const BL_ADDED: &[(u32, &str, bool)] = &[
    (19, "<|endoftext|>", true),
    (20, "<|begin_of_text|>", true),
    (25, "<|reserved|>", true),
];

/// Ids from `tf::WORDPIECE_FIRST_ID` = 5.
const WP_TOKENS: &[&str] = &["paris", "king", "##ing", "play", "the"];

/// Ids from `tf::SENTENCEPIECE_FIRST_ID` = 259.
const SP_TOKENS: &[&str] = &[
    "▁", "P", "a", "r", "i", "s", "▁P", "ar", "is", "▁Par", "▁Paris",
];
const SP_MERGES: &[(&str, &str)] = &[
    ("▁", "P"),
    ("a", "r"),
    ("i", "s"),
    ("▁P", "ar"),
    ("▁Par", "is"),
];

pub(super) fn byte_level_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tf::write_byte_level_bpe_with_bos(
        dir.path(),
        BL_TOKENS,
        BL_MERGES,
        BL_ADDED,
        "<|begin_of_text|>",
    )
    .unwrap();
    dir
}

pub(super) fn wordpiece_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tf::write_wordpiece(dir.path(), WP_TOKENS, &[]).unwrap();
    dir
}

pub(super) fn sentencepiece_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tf::write_sentencepiece_bpe(dir.path(), SP_TOKENS, SP_MERGES, &[(300, "<pad>", true)]).unwrap();
    dir
}

pub(super) fn load(dir: &Path) -> Vocab {
    Vocab::load(dir, None)
        .unwrap()
        .expect("tokenizer.json present")
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// The vocabulary of a tokenizer.json holding `text`, with its directory
/// (kept while the vocabulary may read the file again).
fn vocab_of(text: &str) -> (tempfile::TempDir, Vocab) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "tokenizer.json", text);
    let v = load(dir.path());
    (dir, v)
}

#[test]
fn missing_tokenizer_json_is_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Vocab::load(dir.path(), None).unwrap().is_none());
    // Declarations still come from the other files.
    tf::write_tokenizer_config(dir.path(), json!({"eos_token": "</s>"})).unwrap();
    let decls = special_decls(dir.path(), Some(&json!({"eos_token_id": 2}))).unwrap();
    assert_eq!(decls.len(), 2);
}

#[test]
fn model_style_and_size() {
    let (bl, wp, sp) = (byte_level_dir(), wordpiece_dir(), sentencepiece_dir());
    let cases: &[(&Path, &str, TokenStyle, usize, usize)] = &[
        // Added tokens reach beyond the model vocab (18 entries).
        (bl.path(), "BPE", TokenStyle::ByteLevel, 26, 3),
        (
            wp.path(),
            "WordPiece",
            TokenStyle::WordPiece {
                prefix: "##".into(),
            },
            10,
            5,
        ),
        (
            sp.path(),
            "BPE",
            TokenStyle::Metaspace { replacement: '▁' },
            301,
            4,
        ),
    ];
    for (dir, model, style, size, added) in cases {
        let v = load(dir);
        assert_eq!(v.model(), *model);
        assert_eq!(v.style(), style);
        assert_eq!(v.size(), *size, "{dir:?}");
        let summary = v.summary();
        assert_eq!(summary.size, *size);
        assert_eq!(summary.added, *added);
        assert_eq!(summary.special, *added);
        assert_eq!(summary.file, dir.join("tokenizer.json"));
    }
}

#[test]
fn token_id_and_readable() {
    let (bl, wp, sp) = (byte_level_dir(), wordpiece_dir(), sentencepiece_dir());
    let cases: &[(&Path, u32, Option<&str>, Option<&str>)] = &[
        (bl.path(), 13, Some("Ġking"), Some(" king")),
        (bl.path(), 9, Some("Ċ"), Some("\\n")),
        (
            bl.path(),
            20,
            Some("<|begin_of_text|>"),
            Some("<|begin_of_text|>"),
        ),
        // A hole between the vocab and the added tokens, and past the end.
        (bl.path(), 21, None, None),
        (bl.path(), 26, None, None),
        (wp.path(), 7, Some("##ing"), Some("##ing")),
        (wp.path(), 2, Some("[CLS]"), Some("[CLS]")),
        (sp.path(), 269, Some("▁Paris"), Some(" Paris")),
        (sp.path(), 13, Some("<0x0A>"), Some("\\n")),
        (sp.path(), 1, Some("<s>"), Some("<s>")),
    ];
    for (dir, id, raw, human) in cases {
        let v = load(dir);
        assert_eq!(v.token(*id), *raw, "token {id}");
        assert_eq!(v.readable(*id).as_deref(), *human, "readable {id}");
        if let Some(raw) = raw {
            assert_eq!(v.id(raw), Some(*id));
        }
    }
}

#[test]
fn resolve_word_variants() {
    let (bl, wp, sp) = (byte_level_dir(), wordpiece_dir(), sentencepiece_dir());
    type Case<'a> = (&'a Path, &'a str, Option<(u32, &'a str)>);
    let cases: &[Case] = &[
        (bl.path(), "Paris", Some((17, "Paris"))),
        (bl.path(), "king", Some((13, "Ġking"))),
        (bl.path(), " king", Some((13, "Ġking"))),
        (bl.path(), "Ġking", Some((13, "Ġking"))),
        (bl.path(), "<|endoftext|>", Some((19, "<|endoftext|>"))),
        (bl.path(), "King", None),
        (wp.path(), "paris", Some((5, "paris"))),
        // The normalizer lowercases, so does the lookup.
        (wp.path(), "Paris", Some((5, "paris"))),
        (wp.path(), "##ing", Some((7, "##ing"))),
        (sp.path(), "Paris", Some((269, "▁Paris"))),
        (sp.path(), "is", Some((267, "is"))),
        (sp.path(), "paris", None),
    ];
    for (dir, word, want) in cases {
        let got = load(dir).resolve_word(word).unwrap().map(|m| (m.id, m.raw));
        let want = want.map(|(id, raw)| (id, raw.to_string()));
        assert_eq!(got, want, "{word:?} in {dir:?}");
    }
}

#[test]
fn suggest_variants_then_prefixes() {
    let bl = byte_level_dir();
    let v = load(bl.path());
    let got = v.suggest("kin", 3);
    let want: Vec<(u32, String)> = vec![(12, "Ġkin".into()), (13, "Ġking".into()), (5, "k".into())];
    assert_eq!(got, want);
    assert_eq!(v.suggest("PARIS", 1), vec![(17, "Paris".to_string())]);
    assert!(v.suggest("zzz", 5).is_empty());
    assert!(v.suggest("kin", 0).is_empty());
}

#[test]
fn encode_each_style() {
    let plain_gpt2 = tempfile::tempdir().unwrap();
    tf::write_byte_level_bpe(plain_gpt2.path(), BL_TOKENS, BL_MERGES, BL_ADDED).unwrap();
    let (bl, wp, sp) = (byte_level_dir(), wordpiece_dir(), sentencepiece_dir());
    let cases: &[(&Path, &str, &[u32], &[u32])] = &[
        (plain_gpt2.path(), "Paris king", &[17, 13], &[17, 13]),
        (bl.path(), "Paris king", &[17, 13], &[20, 17, 13]),
        (bl.path(), "Paris\n", &[17, 9], &[20, 17, 9]),
        (wp.path(), "Paris playing", &[5, 8, 7], &[2, 5, 8, 7, 3]),
        (sp.path(), "Paris\n", &[269, 13], &[1, 269, 13]),
    ];
    for (dir, text, without, with) in cases {
        let v = load(dir);
        assert_eq!(
            v.encode(text, false).unwrap(),
            *without,
            "{text:?} in {dir:?}"
        );
        assert_eq!(v.encode(text, true).unwrap(), *with, "{text:?} in {dir:?}");
    }
}

#[test]
fn special_ids() {
    let bl = byte_level_dir();
    let v = load(bl.path());
    for (id, special) in [(19, true), (20, true), (25, true), (17, false), (21, false)] {
        assert_eq!(v.is_special(id), special, "{id}");
    }
    let wp = wordpiece_dir();
    let v = load(wp.path());
    assert!((0..5).all(|id| v.is_special(id)));
    assert!(!v.is_special(5));
}

fn decl(source: &str, role: &str, id: Option<i64>, token: Option<&str>) -> SpecialDecl {
    SpecialDecl {
        source: source.into(),
        role: role.into(),
        id,
        token: token.map(str::to_string),
    }
}

#[test]
fn special_decls_from_every_file() {
    let bl = byte_level_dir();
    let dir = bl.path();
    let config = json!({
        "bos_token_id": 20,
        "eos_token_id": [19, 21],
        "pad_token_id": null,
        "decoder_start_token_id": -1,
        "text_config": {"eos_token_id": 19},
    });
    tf::write_generation_config(dir, json!({"bos_token_id": 20, "eos_token_id": [19, 25]}))
        .unwrap();
    tf::write_tokenizer_config(
        dir,
        json!({
            "bos_token": "<|begin_of_text|>",
            "eos_token": {"__type": "AddedToken", "content": "<|endoftext|>", "special": true},
            "pad_token": null,
            "added_tokens_decoder": {
                "20": {"content": "<|begin_of_text|>", "special": true},
                "19": {"content": "<|endoftext|>", "special": true},
                "3": {"content": "i", "special": false},
            },
        }),
    )
    .unwrap();
    tf::write_special_tokens_map(
        dir,
        json!({"eos_token": {"content": "<|endoftext|>"}, "unk_token": "<|endoftext|>"}),
    )
    .unwrap();
    let v = Vocab::load(dir, Some(&config)).unwrap().unwrap();
    let want = vec![
        decl("config.json", "bos", Some(20), None),
        decl("config.json", "eos", Some(19), None),
        decl("config.json", "eos", Some(21), None),
        decl("config.json", "decoder_start", Some(-1), None),
        decl("config.json:text_config", "eos", Some(19), None),
        decl("generation_config.json", "bos", Some(20), None),
        decl("generation_config.json", "eos", Some(19), None),
        decl("generation_config.json", "eos", Some(25), None),
        decl(
            "tokenizer_config.json",
            "bos",
            None,
            Some("<|begin_of_text|>"),
        ),
        decl("tokenizer_config.json", "eos", None, Some("<|endoftext|>")),
        decl(
            "special_tokens_map.json",
            "eos",
            None,
            Some("<|endoftext|>"),
        ),
        decl(
            "special_tokens_map.json",
            "unk",
            None,
            Some("<|endoftext|>"),
        ),
        decl("tokenizer.json", "special", Some(19), Some("<|endoftext|>")),
        decl(
            "tokenizer.json",
            "special",
            Some(20),
            Some("<|begin_of_text|>"),
        ),
        decl("tokenizer.json", "special", Some(25), Some("<|reserved|>")),
    ];
    assert_eq!(v.special_decls(), want.as_slice());
    assert_eq!(special_decls(dir, Some(&config)).unwrap(), want);
    assert_eq!(
        v.config_added_tokens(),
        &[
            (3, "i".to_string()),
            (19, "<|endoftext|>".to_string()),
            (20, "<|begin_of_text|>".to_string()),
        ]
    );
    assert_eq!(v.added_tokens().len(), 3);
    assert_eq!(
        v.added_tokens()[0],
        AddedToken {
            id: 19,
            content: "<|endoftext|>".into(),
            special: true
        }
    );
    // Declared ids count as special, a non-special decoder entry does not.
    assert!(v.is_special(21));
    assert!(!v.is_special(3));
}

#[test]
fn malformed_files_name_the_file() {
    let cases: &[(&str, &str, &str)] = &[
        ("tokenizer.json", "{", "not a valid tokenizer file"),
        ("tokenizer.json", "[]", "not a valid tokenizer file"),
        (
            "tokenizer.json",
            r#"{"model": {"vocab": {"a": -1}}}"#,
            "not a valid tokenizer file",
        ),
        (
            "tokenizer.json",
            r#"{"model": {"vocab": [["a", "x"]]}}"#,
            "not a valid tokenizer file",
        ),
        (
            "tokenizer.json",
            r#"{"model": {"vocab": {"a": 4000000000}}}"#,
            "token id 4000000000 is beyond the limit",
        ),
        (
            "tokenizer.json",
            r#"{"model": {"vocab": {}}, "added_tokens": [{"id": 1}]}"#,
            "missing field `content`",
        ),
        (
            "tokenizer_config.json",
            "[1]",
            "expected a JSON object, found an array",
        ),
        (
            "tokenizer_config.json",
            r#"{"eos_token": 5}"#,
            "`eos_token` is a number",
        ),
        (
            "tokenizer_config.json",
            r#"{"bos_token": {"id": 1}}"#,
            "without a string `content`",
        ),
        (
            "tokenizer_config.json",
            r#"{"added_tokens_decoder": {"abc": {"content": "x"}}}"#,
            "key \"abc\" is not a token id (expected a whole number from 0 to 4294967295)",
        ),
        (
            "tokenizer_config.json",
            r#"{"added_tokens_decoder": {"1": {"content": "x", "special": "yes"}}}"#,
            "`added_tokens_decoder[1].special` is a string",
        ),
        ("special_tokens_map.json", "not json", "not valid JSON"),
        (
            "generation_config.json",
            r#"{"eos_token_id": "x"}"#,
            "`eos_token_id` is a string",
        ),
        (
            "generation_config.json",
            r#"{"eos_token_id": [1, 2.5]}"#,
            "`eos_token_id` is 2.5",
        ),
    ];
    for (file, text, expect) in cases {
        let dir = tempfile::tempdir().unwrap();
        if *file != "tokenizer.json" {
            tf::write_wordpiece(dir.path(), WP_TOKENS, &[]).unwrap();
        }
        write(dir.path(), file, text);
        let err = match Vocab::load(dir.path(), None) {
            Err(err) => err.to_string(),
            // A special-token file declares nothing, and is listed.
            Ok(v) => {
                assert_ne!(*file, "tokenizer.json", "{text:?} is read");
                let v = v.unwrap();
                assert_eq!(v.unreadable().len(), 1, "{file}: {text:?}");
                v.unreadable()[0].to_string()
            }
        };
        assert!(err.contains(file), "{err:?} should name {file}");
        assert!(err.contains(expect), "{err:?} should say {expect:?}");
        assert!(!err.contains('\n'), "{err:?} is one line");
    }
    // config.json comes parsed, its errors still name it.
    let dir = wordpiece_dir();
    let v = Vocab::load(dir.path(), Some(&json!({"pad_token_id": "x"})))
        .unwrap()
        .unwrap();
    let err = v.unreadable()[0].to_string();
    assert!(
        err.contains("config.json") && err.contains("`pad_token_id` is a string"),
        "{err}"
    );
}

#[test]
fn unigram_vocab_is_indexed_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let json = json!({
        "added_tokens": [{"id": 0, "content": "<unk>", "special": true}],
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["▁Paris", -1.5], ["<0x0A>", -9.0]]},
    });
    write(dir.path(), "tokenizer.json", &json.to_string());
    let v = load(dir.path());
    assert_eq!(v.model(), "Unigram");
    assert_eq!(v.size(), 3);
    assert_eq!(v.id("▁Paris"), Some(1));
    assert_eq!(v.readable(2).as_deref(), Some("\\n"));
    assert_eq!(v.resolve_word("Paris").unwrap().map(|m| m.id), Some(1));
}

#[test]
fn legacy_sentencepiece_and_untyped_models_are_detected() {
    let cases: &[(Value, &str, TokenStyle)] = &[
        (
            json!({
                "normalizer": {"type": "Sequence", "normalizers": [
                    {"type": "Prepend", "prepend": "▁"},
                    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
                "model": {"type": "BPE", "vocab": {"▁a": 0}, "merges": []},
            }),
            "BPE",
            TokenStyle::Metaspace { replacement: '▁' },
        ),
        (
            json!({"model": {"vocab": {"a": 0}, "merges": []}}),
            "BPE",
            TokenStyle::Plain,
        ),
        (
            json!({"model": {"vocab": {"a": 0}, "continuing_subword_prefix": "@@"}}),
            "WordPiece",
            TokenStyle::WordPiece {
                prefix: "@@".into(),
            },
        ),
        (
            json!({"model": {"vocab": {"a": 0}, "unk_token": "a"}}),
            "WordLevel",
            TokenStyle::Plain,
        ),
    ];
    for (json, model, style) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "tokenizer.json", &json.to_string());
        let v = load(dir.path());
        assert_eq!(v.model(), *model, "{json}");
        assert_eq!(v.style(), style, "{json}");
    }
}

#[test]
fn duplicates_across_vocab_and_added() {
    let (_dir, v) = vocab_of(
        r#"{
        "added_tokens": [
            {"id": 1, "content": "c", "special": false},
            {"id": 2, "content": "a", "special": true}
        ],
        "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 0, "c": 1}, "unk_token": "a"}
    }"#,
    );
    assert_eq!(
        v.duplicates(),
        vec![
            Duplicate::Id {
                id: 0,
                tokens: vec!["a".into(), "b".into()],
            },
            Duplicate::Token {
                token: "a".into(),
                ids: vec![0, 2],
            },
        ]
    );
    // The added token wins the string lookup, the first vocab entry the id.
    assert_eq!(v.id("a"), Some(2));
    assert_eq!(v.token(0), Some("a"));
    // The first lookups scan the entries, later ones use the map: same answers.
    for _ in 0..2 * super::SCANS_BEFORE_MAP {
        assert_eq!(
            (v.id("a"), v.id("b"), v.id("c"), v.id("zz")),
            (Some(2), Some(0), Some(1), None)
        );
    }
    assert!(v.by_token.get().is_some());
    assert!(load(wordpiece_dir().path()).duplicates().is_empty());
}

#[test]
fn duplicated_ids_list_their_strings_once_in_entry_order() {
    // Id 3: model entries `p`, `q` and `p` again (a repeated key), then an
    // added `q` that takes the id; id 4: model `r`, then an added `s`.
    let (_dir, v) = vocab_of(
        r#"{
        "added_tokens": [
            {"id": 4, "content": "s", "special": false},
            {"id": 3, "content": "q", "special": false}
        ],
        "model": {"type": "WordLevel", "vocab": {"p": 3, "q": 3, "r": 4, "p": 3}, "unk_token": "r"}
    }"#,
    );
    assert_eq!(
        v.duplicates(),
        vec![
            Duplicate::Id {
                id: 3,
                tokens: vec!["p".into(), "q".into()],
            },
            Duplicate::Id {
                id: 4,
                tokens: vec!["r".into(), "s".into()],
            },
        ]
    );
    assert_eq!((v.token(3), v.token(4)), (Some("q"), Some("s")));
}

#[test]
fn duplicates_among_thousands_of_entries_are_exactly_the_shared_strings() {
    // Enough entries that the filter passes on strings no other entry has
    // (about one in sixteen): they must not be reported.
    let n = 5000;
    let mut vocab: Vec<String> = (0..n).map(|i| format!("\"t{i}\": {i}")).collect();
    vocab.push(format!("\"t42\": {n}"));
    let text = format!(
        r#"{{"added_tokens": [{{"id": 17, "content": "t17", "special": false}},
            {{"id": {m}, "content": "t99", "special": true}}],
           "model": {{"type": "WordLevel", "vocab": {{{}}}, "unk_token": "t0"}}}}"#,
        vocab.join(", "),
        m = n + 1
    );
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "tokenizer.json", &text);
    let v = load(dir.path());
    // The filter let many through, of which only the shared strings
    // (and their copies) are left for the comparison.
    let shared = v.shared();
    assert!(shared.len() <= 6, "{shared:?}");
    assert_eq!(
        v.duplicates(),
        vec![
            Duplicate::Token {
                token: "t42".into(),
                ids: vec![42, n],
            },
            Duplicate::Token {
                token: "t99".into(),
                ids: vec![99, n + 1],
            },
        ]
    );
}

#[test]
fn fixture_writers_are_deterministic() {
    let (a, b) = (byte_level_dir(), byte_level_dir());
    let read = |d: &Path| std::fs::read(d.join("tokenizer.json")).unwrap();
    assert_eq!(read(a.path()), read(b.path()));
    assert_eq!(tf::byte_level(" king\n"), "ĠkingĊ");
}

#[test]
fn load_does_not_build_the_full_tokenizer() {
    let dir = byte_level_dir();
    let v = load(dir.path());
    assert!(v.tokenizer.get().is_none());
    v.encode("king", false).unwrap();
    assert!(v.tokenizer.get().is_some());
}

#[test]
fn vocab_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Vocab>();
}

#[test]
fn broken_tokenizer_fails_on_encode_not_on_load() {
    // Cheap read succeeds; the full tokenizer rejects a merge of unknown tokens.
    let dir = tempfile::tempdir().unwrap();
    tf::write_byte_level_bpe(dir.path(), &["a", "b"], &[("a", "x")], &[]).unwrap();
    let v = load(dir.path());
    assert_eq!(v.size(), 2);
    let err = v.encode("ab", false).unwrap_err().to_string();
    assert!(
        err.contains("tokenizer.json") && err.contains("cannot build the tokenizer"),
        "{err}"
    );
    assert!(!err.contains('\n'));
}

#[test]
fn encode_ignores_padding_and_truncation_in_the_file() {
    let dir = wordpiece_dir();
    let path = dir.path().join("tokenizer.json");
    let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["padding"] = json!({
        "strategy": {"Fixed": 8}, "direction": "Right", "pad_to_multiple_of": null,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]",
    });
    json["truncation"] = json!({
        "direction": "Right", "max_length": 3, "strategy": "LongestFirst", "stride": 0,
    });
    write(dir.path(), "tokenizer.json", &json.to_string());
    // The file is valid: the tokenizers crate pads as told.
    let raw = tokenizers::Tokenizer::from_file(&path).unwrap();
    assert_eq!(raw.encode("paris", true).unwrap().get_ids().len(), 8);
    let v = load(dir.path());
    assert_eq!(
        v.encode("Paris playing the king", true).unwrap(),
        [2, 5, 8, 7, 9, 6, 3]
    );
}

#[test]
fn a_template_token_left_undefined_is_an_error_on_encode() {
    // Found by tests/tokenizer_fuzz.rs: a post-processor template naming a
    // special token its `special_tokens` lacks (here `[CLS]` misspelt)
    // made the tokenizers crate panic when it added the template's tokens.
    let dir = wordpiece_dir();
    let path = dir.path().join("tokenizer.json");
    let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut template = json["post_processor"].take();
    template["single"][0]["SpecialToken"]["id"] = json!("[CL\"]");
    for post_processor in [
        template.clone(),
        json!({"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            template,
        ]}),
    ] {
        json["post_processor"] = post_processor;
        write(dir.path(), "tokenizer.json", &json.to_string());
        let v = load(dir.path());
        let err = v.encode("Paris", true).unwrap_err().to_string();
        assert!(err.starts_with(&format!("`{}`", path.display())), "{err}");
        assert!(err.contains(r#"special token "[CL\"]""#), "{err}");
        assert!(!err.contains('\n'), "{err}");
        // Without the template's tokens the text encodes.
        assert_eq!(v.encode("Paris", false).unwrap(), [5]);
    }
}

#[test]
fn merge_longer_than_every_token_is_an_error_on_encode() {
    // Found by tests/tokenizer_fuzz.rs (a vocab entry cut short, so that
    // no token was as long as a merge's parts together): the tokenizers
    // crate copies the parts into a buffer as long as the longest token
    // before it looks the result up, and panicked.
    let dir = tempfile::tempdir().unwrap();
    tf::write_byte_level_bpe(dir.path(), &["a", "b"], &[("a", "b")], &[]).unwrap();
    let v = load(dir.path());
    let err = v.encode("ab", false).unwrap_err().to_string();
    assert!(err.contains("cannot build the tokenizer"), "{err}");
    assert!(err.contains(r#"merge "a" "b""#), "{err}");
    assert!(!err.contains('\n'), "{err}");
    // A second part shorter than the model's continuing_subword_prefix,
    // merges joined or not: the crate took the prefix's length off it.
    let path = dir.path().join("tokenizer.json");
    let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["model"]["vocab"]["abcd"] = json!(2);
    json["model"]["continuing_subword_prefix"] = json!("##");
    for merges in [json!([["a", "b"]]), json!(["a b"])] {
        json["model"]["merges"] = merges;
        write(dir.path(), "tokenizer.json", &json.to_string());
        let err = load(dir.path())
            .encode("ab", false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(r#"merge "a" "b""#), "{err}");
        assert!(
            err.contains(r###"continuing_subword_prefix "##""###),
            "{err}"
        );
    }
}
