//! Tests of [`Vocab::from_gguf`] on metadata maps built by hand, each
//! vocabulary also written as the equivalent tokenizer.json so encodings
//! can be compared with the tokenizers crate reading that file.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::Value;

use super::super::tokenizer_files as tf;
use super::*;

const FILE: &str = "model.gguf";

fn strings(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::String(s.to_string())).collect())
}

fn meta(pairs: Vec<(&str, Value)>) -> HashMap<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn load(map: &HashMap<String, Value>) -> Vocab {
    Vocab::from_gguf(Path::new(FILE), map)
        .expect("valid metadata")
        .expect("a vocabulary")
}

fn load_err(map: &HashMap<String, Value>) -> String {
    Vocab::from_gguf(Path::new(FILE), map)
        .expect_err("invalid metadata")
        .to_string()
}

fn types(codes: &[i32]) -> Value {
    Value::Array(codes.iter().map(|&c| Value::I32(c)).collect())
}

/// Asserts that `vocab` encodes each of `texts` (with special tokens) as
/// the tokenizer.json in `dir` does.
fn assert_encodes_like_reference(vocab: &Vocab, dir: &Path, texts: &[&str]) {
    let reference = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    for text in texts {
        assert_eq!(
            vocab.encode(text, true).unwrap(),
            reference.encode(*text, true).unwrap().get_ids(),
            "{text:?}"
        );
    }
}

/// A GPT-2 vocabulary: the 256 byte symbols, then words reachable through
/// merges, then two control tokens.
fn gpt2_tokens() -> (Vec<String>, Vec<(&'static str, &'static str)>) {
    let mut tokens: Vec<String> = (0..=255u8)
        .map(|b| tf::byte_level_char(b).to_string())
        .collect();
    let merges = vec![
        ("h", "e"),
        ("l", "l"),
        ("ll", "o"),
        ("he", "llo"),
        ("Ġ", "w"),
        ("o", "r"),
        ("Ġw", "or"),
        ("l", "d"),
        ("Ġwor", "ld"),
        ("Ġ", "Ġ"),
        ("'", "s"),
    ];
    for (l, r) in &merges {
        tokens.push(format!("{l}{r}"));
    }
    tokens.extend([
        "<|begin_of_text|>".to_string(),
        "<|end_of_text|>".to_string(),
    ]);
    (tokens, merges)
}

fn gpt2_meta(pre: &str) -> HashMap<String, Value> {
    let (tokens, merges) = gpt2_tokens();
    let n = tokens.len();
    let mut kinds = vec![1; n];
    kinds[n - 2] = 3;
    kinds[n - 1] = 3;
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let merges: Vec<String> = merges.iter().map(|(l, r)| format!("{l} {r}")).collect();
    let merges: Vec<&str> = merges.iter().map(String::as_str).collect();
    meta(vec![
        ("tokenizer.ggml.model", Value::String("gpt2".into())),
        ("tokenizer.ggml.pre", Value::String(pre.into())),
        ("tokenizer.ggml.tokens", strings(&tokens)),
        ("tokenizer.ggml.token_type", types(&kinds)),
        ("tokenizer.ggml.merges", strings(&merges)),
        ("tokenizer.ggml.bos_token_id", Value::U32(n as u32 - 2)),
        ("tokenizer.ggml.eos_token_id", Value::U32(n as u32 - 1)),
    ])
}

#[test]
fn gpt2_encodes_with_merges_like_tokenizer_json() {
    let mut map = gpt2_meta("gpt-2");
    map.insert("tokenizer.ggml.add_bos_token".into(), Value::Bool(true));
    let vocab = load(&map);
    let hello = vocab.id("hello").unwrap();
    let world = vocab.id("Ġworld").unwrap();
    assert_eq!((hello, world), (259, 264));
    assert_eq!(
        vocab.encode("hello world", true).unwrap(),
        vec![267, 259, 264]
    );
    assert_eq!(vocab.encode("hello world", false).unwrap(), vec![259, 264]);

    let (tokens, merges) = gpt2_tokens();
    let n = tokens.len() as u32;
    let tokens: Vec<&str> = tokens[..tokens.len() - 2]
        .iter()
        .map(String::as_str)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let added = [
        (n - 2, "<|begin_of_text|>", true),
        (n - 1, "<|end_of_text|>", true),
    ];
    tf::write_byte_level_bpe_with_bos(dir.path(), &tokens, &merges, &added, "<|begin_of_text|>")
        .unwrap();
    assert_encodes_like_reference(
        &vocab,
        dir.path(),
        &[
            "hello world",
            "hello  world\n\nworld's 1234 héllo!",
            "<|end_of_text|>hello",
            "  leading and trailing  ",
        ],
    );
}

#[test]
fn gpt2_llama3_pre_adds_bos_and_splits_digits_by_three() {
    let vocab = load(&gpt2_meta("llama-bpe"));
    let d = |c: char| vocab.id(&c.to_string()).unwrap();
    // `\p{N}{1,3}`: 12345 is "123" "45", each byte-level symbols unmerged.
    let ids = vocab.encode("hello 12345", true).unwrap();
    let space = vocab.id("Ġ").unwrap();
    let want = [267, 259, space, d('1'), d('2'), d('3'), d('4'), d('5')];
    assert_eq!(ids, want);
}

#[test]
fn gpt2_default_pre_isolates_punctuation_first() {
    let vocab = load(&gpt2_meta("gpt-2"));
    let (apos, s, apos_s) = (b'\'' as u32, b's' as u32, 266);
    assert_eq!(
        vocab.encode("world's", false).unwrap(),
        vec![119, 261, 263, apos_s]
    );
    let mut map = gpt2_meta("default");
    let vocab = load(&map);
    assert_eq!(
        vocab.encode("world's", false).unwrap(),
        vec![119, 261, 263, apos, s]
    );
    // No `tokenizer.ggml.pre` at all: llama.cpp's default too.
    map.remove("tokenizer.ggml.pre");
    let vocab = load(&map);
    assert_eq!(
        vocab.encode("world's", false).unwrap(),
        vec![119, 261, 263, apos, s]
    );
}

#[test]
fn gpt2_readable_forms_and_specials() {
    let vocab = load(&gpt2_meta("gpt-2"));
    assert_eq!(vocab.model(), "gpt2");
    assert_eq!(vocab.style(), &TokenStyle::ByteLevel);
    assert_eq!(vocab.size(), 269);
    assert_eq!(vocab.readable(264).as_deref(), Some(" world"));
    assert_eq!(vocab.readable(10).as_deref(), Some("\\n"));
    assert_eq!(vocab.readable(267).as_deref(), Some("<|begin_of_text|>"));
    assert_eq!(
        vocab.resolve_word("world").unwrap().map(|m| (m.id, m.raw)),
        Some((264, "Ġworld".to_string()))
    );
    assert!(vocab.is_special(267) && vocab.is_special(268) && !vocab.is_special(259));
    assert_eq!(vocab.token_type(267), Some(TokenType::Control));
    assert_eq!(vocab.token_type(259), Some(TokenType::Normal));
    assert_eq!(vocab.added_tokens().len(), 2);
    let roles: Vec<(&str, &str, Option<i64>)> = vocab
        .special_decls()
        .iter()
        .map(|d| (d.source.as_str(), d.role.as_str(), d.id))
        .collect();
    assert_eq!(
        roles,
        vec![
            ("tokenizer.ggml", "bos", Some(267)),
            ("tokenizer.ggml", "eos", Some(268))
        ]
    );
    // llama.cpp adds no bos for a GPT-2 pre-tokenizer unless told to.
    assert_eq!(vocab.encode("hello", true).unwrap(), vec![259]);
}

/// `<unk>`, `<s>`, `</s>`, 256 bytes, then pieces with falling scores.
const SP_PIECES: &[&str] = &[
    "▁", "P", "a", "r", "i", "s", "▁P", "ar", "is", "▁Par", "▁Paris", "▁▁",
];

fn llama_meta() -> HashMap<String, Value> {
    let bytes: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
    let mut tokens = vec!["<unk>", "<s>", "</s>"];
    tokens.extend(bytes.iter().map(String::as_str));
    tokens.extend(SP_PIECES);
    let mut kinds = vec![2, 3, 3];
    kinds.extend([6; 256]);
    kinds.extend(vec![1; SP_PIECES.len()]);
    let scores: Vec<Value> = (0..tokens.len())
        .map(|i| Value::F32(if i < 259 { 0.0 } else { -(i as f32) }))
        .collect();
    meta(vec![
        ("tokenizer.ggml.model", Value::String("llama".into())),
        ("tokenizer.ggml.tokens", strings(&tokens)),
        ("tokenizer.ggml.token_type", types(&kinds)),
        ("tokenizer.ggml.scores", Value::Array(scores)),
        ("tokenizer.ggml.bos_token_id", Value::U32(1)),
        ("tokenizer.ggml.eos_token_id", Value::U32(2)),
        ("tokenizer.ggml.unknown_token_id", Value::U32(0)),
    ])
}

#[test]
fn llama_encodes_with_space_marker_and_byte_fallback() {
    let vocab = load(&llama_meta());
    let paris = vocab.id("▁Paris").unwrap();
    assert_eq!(paris, 269);
    // "\n" is not a piece: its byte, <0x0A> = 3 + 10.
    assert_eq!(vocab.encode("Paris\n", true).unwrap(), vec![1, paris, 13]);
    // é is two bytes, neither a piece.
    let ids = vocab.encode("Paris é", false).unwrap();
    assert_eq!(ids, vec![paris, 259, 3 + 0xC3, 3 + 0xA9]);

    // The same vocabulary with the merges the scores imply, as Hugging
    // Face's converter writes it.
    let merges = [
        ("▁", "P"),
        ("a", "r"),
        ("i", "s"),
        ("▁P", "ar"),
        ("▁Par", "is"),
        ("▁", "▁"),
    ];
    let dir = tempfile::tempdir().unwrap();
    tf::write_sentencepiece_bpe(dir.path(), SP_PIECES, &merges, &[]).unwrap();
    // llama.cpp prepends a space even to text starting with one (the
    // Metaspace of the file does not), so those texts are left out.
    assert_eq!(vocab.encode(" Paris", false).unwrap(), vec![259, paris]);
    assert_encodes_like_reference(
        &vocab,
        dir.path(),
        &["Paris", "Paris is Paris\n", "Paris  Par is\tPa  ", "Pé ris"],
    );
}

#[test]
fn llama_readable_forms_and_kinds() {
    let vocab = load(&llama_meta());
    assert_eq!(vocab.style(), &TokenStyle::Metaspace { replacement: '▁' });
    assert_eq!(vocab.readable(13).as_deref(), Some("\\n"));
    assert_eq!(vocab.readable(269).as_deref(), Some(" Paris"));
    assert_eq!(vocab.readable(1).as_deref(), Some("<s>"));
    assert_eq!(
        vocab.resolve_word("Paris").unwrap().map(|m| (m.id, m.raw)),
        Some((269, "▁Paris".to_string()))
    );
    assert_eq!(vocab.token_type(13), Some(TokenType::Byte));
    assert_eq!(vocab.token_type(0), Some(TokenType::Unknown));
    assert!(vocab.is_special(0) && vocab.is_special(1) && !vocab.is_special(13));
    assert_eq!(vocab.token_type(9999), None);
}

#[test]
fn llama_without_space_prefix_or_bos() {
    let mut map = llama_meta();
    map.insert("tokenizer.ggml.add_space_prefix".into(), Value::Bool(false));
    map.insert("tokenizer.ggml.add_bos_token".into(), Value::Bool(false));
    map.insert("tokenizer.ggml.add_eos_token".into(), Value::Bool(true));
    let vocab = load(&map);
    // "Paris" without the marker: P, ar, is.
    assert_eq!(vocab.encode("Paris", true).unwrap(), vec![260, 266, 267, 2]);
}

fn bert_meta() -> HashMap<String, Value> {
    // llama.cpp's converter stores BERT entries in phantom-space form.
    let tokens = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "▁paris",
        "▁king",
        "ing",
        "▁play",
        "▁the",
        "[unused0]",
    ];
    meta(vec![
        ("tokenizer.ggml.model", Value::String("bert".into())),
        ("tokenizer.ggml.tokens", strings(&tokens)),
        (
            "tokenizer.ggml.token_type",
            types(&[3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 5]),
        ),
        ("tokenizer.ggml.cls_token_id", Value::U32(2)),
        ("tokenizer.ggml.seperator_token_id", Value::U32(3)),
        ("tokenizer.ggml.unknown_token_id", Value::U32(1)),
        ("tokenizer.ggml.padding_token_id", Value::U32(0)),
    ])
}

#[test]
fn bert_reads_as_wordpiece_and_encodes_like_tokenizer_json() {
    let vocab = load(&bert_meta());
    assert_eq!(
        vocab.style(),
        &TokenStyle::WordPiece {
            prefix: "##".into()
        }
    );
    assert_eq!(vocab.token(7), Some("##ing"));
    assert_eq!(vocab.token(5), Some("paris"));
    assert_eq!(vocab.token(2), Some("[CLS]"));
    assert_eq!(
        vocab.resolve_word("Paris").unwrap().map(|m| (m.id, m.raw)),
        Some((5, "paris".to_string()))
    );
    assert_eq!(
        vocab.encode("Playing the King", true).unwrap(),
        vec![2, 8, 7, 9, 6, 3]
    );
    assert!(vocab.is_unused(10) && !vocab.is_unused(9));

    // Older conversions declare [CLS] as bos.
    let mut map = bert_meta();
    map.remove("tokenizer.ggml.cls_token_id");
    map.insert("tokenizer.ggml.bos_token_id".into(), Value::U32(2));
    let old = load(&map);
    assert_eq!(
        old.encode("Playing the King", true).unwrap(),
        vec![2, 8, 7, 9, 6, 3]
    );

    let dir = tempfile::tempdir().unwrap();
    tf::write_wordpiece(dir.path(), &["paris", "king", "##ing", "play", "the"], &[]).unwrap();
    assert_encodes_like_reference(
        &vocab,
        dir.path(),
        &["Playing the King", "PARIS, the king!", "xyz kinging"],
    );
}

#[test]
fn unsupported_model_still_gives_tokens() {
    let map = meta(vec![
        ("tokenizer.ggml.model", Value::String("rwkv".into())),
        ("tokenizer.ggml.tokens", strings(&["a", "b\n"])),
    ]);
    let vocab = load(&map);
    assert_eq!(vocab.style(), &TokenStyle::Plain);
    assert_eq!(vocab.readable(1).as_deref(), Some("b\\n"));
    assert_eq!(vocab.id("a"), Some(0));
    assert_eq!(vocab.token_type(0), None);
    assert_eq!(
        vocab.encode("ab", false).unwrap_err().to_string(),
        "`model.gguf`: cannot encode text: GGUF tokenizer model \"rwkv\" is not supported; \
         use --id or --token"
    );
}

#[test]
fn missing_model_key_reads_plain() {
    let map = meta(vec![("tokenizer.ggml.tokens", strings(&["a", "▁b"]))]);
    let vocab = load(&map);
    assert_eq!(vocab.model(), "(not set)");
    assert_eq!(vocab.readable(1).as_deref(), Some("▁b"));
    let err = vocab.encode("b", false).unwrap_err().to_string();
    assert!(
        err.contains("GGUF tokenizer model \"(not set)\" is not supported"),
        "{err}"
    );
}

#[test]
fn unsupported_pre_tokenizer_is_named() {
    let vocab = load(&gpt2_meta("deepseek-llm"));
    assert_eq!(
        vocab.encode("hello", false).unwrap_err().to_string(),
        "`model.gguf`: cannot encode text: GGUF pre-tokenizer \"deepseek-llm\" \
         (tokenizer.ggml.pre) is not supported; use --id or --token"
    );
    assert_eq!(vocab.readable(264).as_deref(), Some(" world"));
}

#[test]
fn tekken_splits_case_runs_and_starts_with_bos() {
    // Mistral Nemo's GGUF files: Tekken's split, whole pieces first, and
    // bos by default as llama.cpp's `tekken` branch sets it. Tekken splits
    // "helloWorld" at the case change (GPT-2's split keeps one piece) and
    // digits one by one.
    let vocab = load(&gpt2_meta("tekken"));
    assert_eq!(vocab.encode("hello world", false).unwrap(), vec![259, 264]);
    assert_eq!(
        vocab.encode("hello world", true).unwrap(),
        vec![267, 259, 264]
    );
    assert_eq!(
        pieces("tekken", "helloWorld 12"),
        ["hello", "World", "Ġ", "1", "2"]
    );
    assert_eq!(pieces("gpt-2", "helloWorld 12"), ["helloWorld", "Ġ12"]);
}

/// The pieces (in byte-level form) the pre-tokenizer of a GGUF vocabulary
/// with `tokenizer.ggml.pre` = `pre` splits `text` into.
fn pieces(pre: &str, text: &str) -> Vec<String> {
    let vocab = load(&gpt2_meta(pre));
    let recipe = vocab.gguf.as_deref().unwrap();
    let t = crate::vocab::gguf_tokenizer::build(recipe, &vocab).unwrap();
    let pre = t.get_pre_tokenizer().unwrap();
    let mut s = tokenizers::PreTokenizedString::from(text);
    tokenizers::PreTokenizer::pre_tokenize(pre, &mut s).unwrap();
    s.get_splits(
        tokenizers::OffsetReferential::Original,
        tokenizers::OffsetType::Byte,
    )
    .into_iter()
    .map(|(p, _, _)| p.to_string())
    .collect()
}

#[test]
fn deepseek_v3_splits_digits_by_three_and_cjk_runs() {
    // DeepSeek V3's tokenizer.json (and llama.cpp's `deepseek-v3`): digits
    // in threes first, then CJK runs apart from the letters around them,
    // then an ASCII punctuation mark joins the letters after it.
    assert_eq!(
        pieces("deepseek-v3", "12345 hello"),
        ["123", "45", "Ġhello"]
    );
    assert_eq!(
        pieces("deepseek-v3", "ab東京cd.net x"),
        ["ab", "æĿ±äº¬", "cd", ".net", "Ġx"]
    );
    assert_eq!(pieces("hunyuan-dense", "12345"), ["123", "45"]);
}

#[test]
fn gpt4o_splits_case_runs_with_contractions_and_digits_by_three() {
    for pre in ["gpt-4o", "llama4", "minimax-m2"] {
        assert_eq!(
            pieces(pre, "helloWorld's 12345"),
            ["hello", "World's", "Ġ", "123", "45"],
            "{pre}"
        );
    }
}

#[test]
fn bloom_splits_at_spaces_and_sentence_marks_only() {
    for pre in ["bloom", "poro-chat", "gpt3-finnish"] {
        assert_eq!(
            pieces(pre, "a-b+c 12, d"),
            ["a-b+c", "Ġ12", ",", "Ġd"],
            "{pre}"
        );
    }
    assert_eq!(pieces("viking", "ab12"), ["ab", "1", "2"]);
}

#[test]
fn other_llama_cpp_names_take_their_familys_split() {
    // Digits by three (Llama 3's split), one by one (Qwen 2's and its
    // kin), or in one piece (GPT-2's).
    for pre in ["pixtral", "lfm2", "falcon-h1", "chatglm-bpe", "glm4"] {
        assert_eq!(pieces(pre, "x 12345"), ["x", "Ġ", "123", "45"], "{pre}");
    }
    for pre in [
        "deepseek-r1-qwen",
        "hunyuan",
        "grok-2",
        "seed-coder",
        "bailingmoe",
    ] {
        assert_eq!(pieces(pre, "x 123"), ["x", "Ġ", "1", "2", "3"], "{pre}");
    }
    for pre in ["exaone4", "trillion", "granite-docling", "mellum"] {
        assert_eq!(pieces(pre, "x 12345"), ["x", "Ġ12345"], "{pre}");
    }
}

#[test]
fn no_tokens_is_no_vocabulary() {
    let map = meta(vec![(
        "general.architecture",
        Value::String("llama".into()),
    )]);
    assert!(Vocab::from_gguf(Path::new(FILE), &map).unwrap().is_none());
}

#[test]
fn malformed_metadata_is_one_line_error_naming_key() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "tokenizer.ggml.tokens",
            Value::String("a".into()),
            "metadata `tokenizer.ggml.tokens` is a string, expected an array",
        ),
        (
            "tokenizer.ggml.tokens",
            Value::Array(vec![Value::String("a".into()), Value::U32(7)]),
            "metadata `tokenizer.ggml.tokens` entry 1 is a u32 7, expected a string",
        ),
        (
            "tokenizer.ggml.token_type",
            types(&[1, 1]),
            "metadata `tokenizer.ggml.token_type` has 2 entries, expected 11 (one per token of \
             `tokenizer.ggml.tokens`)",
        ),
        (
            "tokenizer.ggml.token_type",
            types(&[3, 3, 3, 3, 3, 1, 1, 9, 1, 1, 5]),
            "metadata `tokenizer.ggml.token_type` entry 7 is an i32 9, expected a token type 0 \
             to 6",
        ),
        (
            "tokenizer.ggml.scores",
            Value::Array(vec![Value::String("x".into()); 11]),
            "metadata `tokenizer.ggml.scores` entry 0 is \"x\", expected a float",
        ),
        (
            "tokenizer.ggml.merges",
            strings(&["a b", "ab"]),
            "metadata `tokenizer.ggml.merges` entry 1 is \"ab\", expected two tokens joined \
             by a space",
        ),
        (
            "tokenizer.ggml.bos_token_id",
            Value::String("1".into()),
            "metadata `tokenizer.ggml.bos_token_id` is a string, expected an integer",
        ),
        (
            "tokenizer.ggml.add_bos_token",
            Value::U8(1),
            "metadata `tokenizer.ggml.add_bos_token` is a u8, expected a bool",
        ),
        (
            "tokenizer.ggml.model",
            Value::U32(1),
            "metadata `tokenizer.ggml.model` is a u32, expected a string",
        ),
    ];
    for (key, value, want) in cases {
        let mut map = bert_meta();
        map.insert(key.to_string(), value);
        let err = load_err(&map);
        assert_eq!(err, format!("`{FILE}`: {want}"), "{key}");
        assert!(!err.contains('\n'));
    }
}

#[test]
fn special_id_out_of_range_loads_but_cannot_encode() {
    let mut map = llama_meta();
    map.insert("tokenizer.ggml.bos_token_id".into(), Value::U32(999));
    let vocab = load(&map);
    // `check` reports the declaration; the vocabulary still loads.
    assert_eq!(vocab.special_decls()[0].id, Some(999));
    assert_eq!(vocab.readable(269).as_deref(), Some(" Paris"));
    assert_eq!(
        vocab.encode("Paris", true).unwrap_err().to_string(),
        "`model.gguf`: cannot add special tokens: metadata `tokenizer.ggml.bos_token_id` is \
         999, expected an id below the 271 tokens"
    );
    assert_eq!(vocab.encode("Paris", false).unwrap(), vec![269]);
}

#[test]
fn merge_of_unknown_tokens_cannot_build() {
    let mut map = gpt2_meta("gpt-2");
    map.insert("tokenizer.ggml.merges".into(), strings(&["h e", "zz q"]));
    let err = load(&map).encode("hello", false).unwrap_err().to_string();
    assert!(
        err.starts_with("`model.gguf`: cannot build the tokenizer: "),
        "{err}"
    );
    assert!(!err.contains('\n'));
}

#[test]
fn summary_counts_specials() {
    let vocab = load(&bert_meta());
    let summary = vocab.summary();
    assert_eq!(summary.model, "bert");
    assert_eq!(summary.size, 11);
    assert_eq!(summary.added, 5);
    assert_eq!(summary.special, 5);
    assert!(vocab.duplicates().is_empty());
}

#[test]
fn empty_and_duplicate_tokens_do_not_break_encoding() {
    let mut map = gpt2_meta("gpt-2");
    let Value::Array(tokens) = map.get_mut("tokenizer.ggml.tokens").unwrap() else {
        unreachable!()
    };
    tokens[267] = Value::String(String::new());
    tokens[268] = Value::String("hello".into());
    let Value::Array(kinds) = map.get_mut("tokenizer.ggml.token_type").unwrap() else {
        unreachable!()
    };
    kinds[268] = Value::I32(4);
    let vocab = load(&map);
    // A string stored twice (llama.cpp refuses such files) means its
    // user-defined entry, in lookups and encoding alike; an empty control
    // token matches nothing.
    assert_eq!(vocab.id("hello"), Some(268));
    assert_eq!(vocab.encode("hello world", false).unwrap(), vec![268, 264]);
    assert_eq!(vocab.token(267), Some(""));
}

#[test]
fn merge_longer_than_every_token_cannot_build() {
    // The tokenizers crate copies a merge's parts into a buffer as long as
    // the longest token before it looks the result up, and panicked here.
    let mut map = gpt2_meta("gpt-2");
    let long = "<|begin_of_text|> <|end_of_text|>";
    map.insert("tokenizer.ggml.merges".into(), strings(&["h e", long]));
    let err = load(&map).encode("hello", false).unwrap_err().to_string();
    assert!(
        err.starts_with("`model.gguf`: cannot build the tokenizer: "),
        "{err}"
    );
    assert!(
        err.contains(r#"merge "<|begin_of_text|>" "<|end_of_text|>""#),
        "{err}"
    );
    assert!(!err.contains('\n'));
}
