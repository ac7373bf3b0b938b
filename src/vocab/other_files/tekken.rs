//! Mistral's `tekken.json` (the tiktoken-style tokenizer of Mistral Nemo,
//! Pixtral, Mistral Small 3 and later), read as `mistral_common`'s
//! `Tekkenizer.from_file` reads it and turned into the tokenizer.json that
//! transformers' `MistralConverter` makes of it.
//!
//! Ids: the special tokens first (`default_num_special_tokens` of them:
//! the file's `special_tokens`, or for files without that list the 20 of
//! `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`, then `<SPECIAL_n>` fillers),
//! then the vocabulary's first `default_vocab_size - default_num_special_tokens`
//! entries in rank order. Encoding is tiktoken's: the text split by the
//! file's `pattern`, each piece's bytes merged pair by pair, lowest rank of
//! the merged bytes first, a piece that is itself a token taken whole. As
//! a tokenizer.json: a byte-level BPE whose merges are every split of a
//! token into two tokens, ordered by the rank of the token they make (the
//! order of transformers' conversion of tiktoken files), with
//! `ignore_merges`, after a `Split` on the pattern; `<s>` before the text,
//! as Mistral's tokenizers add it.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use foldhash::HashSet;
use serde_json::{Value, json};

use super::Made;
use super::vocabulary::read_limited;
use crate::error::{Error, Result};
use crate::vocab::derived_merges::{self, Cut};
use crate::vocab::parse::MAX_ID;
use crate::vocab::readable::byte_to_char;

/// The file read.
const FILE: &str = "tekken.json";

/// The most special tokens read: Mistral's files have 1,000; a hostile
/// file must not make millions of fillers.
const MAX_SPECIALS: usize = 1 << 16;

/// `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`: the special tokens of files
/// without a `special_tokens` list, at ids 0 to 19.
const DEPRECATED_SPECIAL_TOKENS: [&str; 20] = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
];

/// The tokenizer.json of `dir/tekken.json`, or `None` when there is none.
pub(super) fn convert(dir: &Path) -> Result<Option<Made>> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = read_limited(&path)?;
    let bad = |what: String| Error::bad_file(&path, what);
    let doc: File =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not valid JSON ({e})")))?;
    let config = doc
        .config
        .as_ref()
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no `config` object".into()))?;
    let uint = |key: &str| -> Result<usize> {
        config
            .get(key)
            .and_then(Value::as_u64)
            .filter(|&n| n < u64::from(MAX_ID))
            .map(|n| n as usize)
            .ok_or_else(|| bad(format!("`config.{key}` is not a count below {MAX_ID}")))
    };
    let (size, specials_count) = (
        uint("default_vocab_size")?,
        uint("default_num_special_tokens")?,
    );
    let pattern = config
        .get("pattern")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`config.pattern` is not a string".into()))?;
    if specials_count > MAX_SPECIALS {
        return Err(bad(format!(
            "`config.default_num_special_tokens` is {specials_count}, more than the {MAX_SPECIALS} embscope reads"
        )));
    }
    let Some(inner) = size.checked_sub(specials_count) else {
        return Err(bad(format!(
            "`config.default_vocab_size` {size} is below `config.default_num_special_tokens` {specials_count}"
        )));
    };

    let specials = specials(&doc, specials_count).map_err(bad)?;
    let tokens = tokens(&doc, inner).map_err(bad)?;
    // Every split of a token into two tokens; past the bound, the
    // vocabulary is read and encoding is refused.
    let pieces: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
    let (merges, refused) = match derived_merges::cuts(&pieces, 256..tokens.len() as u32, false) {
        Ok(cuts) => (cuts, None),
        Err(too_many) => (Vec::new(), Some(too_many.to_string())),
    };
    let json = write(&specials, &tokens, &merges, pattern);
    Ok(Some(Made {
        files: vec![path],
        class: Some("Tekkenizer".into()),
        json: json.into(),
        refused,
    }))
}

/// The parts of tekken.json read (the vocabulary's `token_str`, the image
/// and audio settings are not).
#[derive(serde::Deserialize)]
struct File {
    config: Option<Value>,
    vocab: Option<Vec<Entry>>,
    special_tokens: Option<Value>,
}

/// A vocabulary entry.
#[derive(serde::Deserialize)]
struct Entry {
    rank: Option<u64>,
    token_bytes: Option<String>,
}

/// The `count` special tokens, in id order.
fn specials(doc: &File, count: usize) -> std::result::Result<Vec<String>, String> {
    let mut out: Vec<String> = match &doc.special_tokens {
        None | Some(Value::Null) => DEPRECATED_SPECIAL_TOKENS.map(String::from).to_vec(),
        Some(Value::Array(list)) => (list.iter().enumerate())
            .map(|(i, t)| {
                let rank = t.get("rank").and_then(Value::as_u64);
                match (rank, t.get("token_str").and_then(Value::as_str)) {
                    (Some(r), Some(s)) if r == i as u64 => Ok(s.to_string()),
                    _ => Err(format!(
                        "`special_tokens[{i}]` is not {{\"rank\": {i}, \"token_str\": ...}}"
                    )),
                }
            })
            .collect::<std::result::Result<_, _>>()?,
        Some(_) => return Err("`special_tokens` is not a list".into()),
    };
    if out.len() > count {
        return Err(format!(
            "{} special tokens, more than `config.default_num_special_tokens` {count}",
            out.len()
        ));
    }
    out.extend((out.len()..count).map(|i| format!("<SPECIAL_{i}>")));
    let mut seen = HashSet::default();
    if let Some(dup) = out.iter().find(|s| !seen.insert(s.as_str())) {
        return Err(format!("special token {dup:?} is listed twice"));
    }
    Ok(out)
}

/// The bytes of the first `count` vocabulary entries, in rank order.
fn tokens(doc: &File, count: usize) -> std::result::Result<Vec<Vec<u8>>, String> {
    let list = doc.vocab.as_ref().ok_or("no `vocab` list")?;
    if list.len() < count || count < 256 {
        return Err(format!(
            "`vocab` has {} entries and `config.default_vocab_size` leaves {count} after the special tokens; both must be at least 256 (the bytes), the first at least the second",
            list.len()
        ));
    }
    let mut out = Vec::with_capacity(count);
    for (i, t) in list[..count].iter().enumerate() {
        let (Some(rank), Some(encoded)) = (t.rank, t.token_bytes.as_deref()) else {
            return Err(format!(
                "`vocab[{i}]` is not {{\"rank\": {i}, \"token_bytes\": ...}}"
            ));
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| format!("`vocab[{i}].token_bytes` is not base64 ({e})"))?;
        // tiktoken's ranks: entry i has rank i, the first 256 are the bytes.
        if rank != i as u64 || (i < 256 && bytes != [i as u8]) || bytes.is_empty() {
            return Err(format!(
                "`vocab[{i}]` has rank {rank} and {} bytes; entry i must have rank i, and the first 256 the byte i",
                bytes.len()
            ));
        }
        out.push(bytes);
    }
    let mut seen = HashSet::with_capacity_and_hasher(count, Default::default());
    if let Some(i) = out.iter().position(|t| !seen.insert(t.as_slice())) {
        return Err(format!(
            "`vocab[{i}]` repeats the bytes of an earlier entry"
        ));
    }
    Ok(out)
}

/// The tokenizer.json of `specials` (ids from 0) and `tokens` (ids after
/// them, in rank order), splitting text by `pattern`, with `cuts` of the
/// tokens as its merges: by the rank of the token they make, then of its
/// left and right parts.
fn write(specials: &[String], tokens: &[Vec<u8>], cuts: &[Cut], pattern: &str) -> Vec<u8> {
    let offset = specials.len();
    // Each token's JSON string of byte-level chars, made once.
    let quoted: Vec<String> = (tokens.iter())
        .map(|t| {
            let text: String = t.iter().map(|&x| byte_to_char(x)).collect();
            serde_json::to_string(&text).expect("a string")
        })
        .collect();
    let mut merges: Vec<(u32, u32, u32)> =
        cuts.iter().map(|c| (c.piece, c.left, c.right)).collect();
    merges.sort_unstable();
    let bos = specials.iter().position(|s| s == "<s>");
    let added: Vec<Value> = (specials.iter().enumerate())
        .map(|(id, s)| {
            json!({"id": id, "content": s, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let head = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
        ]},
        "post_processor": bos.map(|id| json!({
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [id], "tokens": ["<s>"]}},
        })),
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    });
    // The model written by hand after the rest: 130k entries and more
    // merges as `Value`s would take several times the memory.
    let mut out = serde_json::to_string(&head).expect("a JSON value");
    out.pop(); // the closing brace
    out.push_str(",\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":true,\"vocab\":{");
    for (r, q) in quoted.iter().enumerate() {
        let sep = if r == 0 { "" } else { "," };
        let _ = write!(out, "{sep}{q}:{}", r + offset);
    }
    out.push_str("},\"merges\":[");
    for (i, &(_, a, b)) in merges.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(out, "{sep}[{},{}]", quoted[a as usize], quoted[b as usize]);
    }
    out.push_str("]}}");
    out.into_bytes()
}
