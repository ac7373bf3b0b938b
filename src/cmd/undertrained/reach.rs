//! The reachability test of the listed candidates (does a token's own text
//! encode to it?) without building the full tokenizer, for BPE
//! `tokenizer.json` files: Llama 3's (128k tokens, 280k merges) takes about
//! half a second and 190 MiB to build, the cut-down one a fraction of that.
//!
//! BPE encoding of a text only ever makes tokens that are substrings of
//! the text's pre-tokenized, normalised words: the characters it starts
//! from and every merge's result. So a tokenizer whose vocabulary keeps
//! just those substrings (plus the unknown token, byte-fallback tokens and
//! added tokens, at their ids) and whose merges keep just those among them,
//! in their order, encodes the texts exactly as the full one does. The file
//! is parsed once, alongside the passes, with its strings borrowed; other
//! models (WordPiece, Unigram, ...), GGUF vocabularies and BPE options this
//! does not cover (subword prefixes or suffixes) use the full tokenizer.

use foldhash::{HashSet, HashSetExt};
use rayon::prelude::*;
use std::borrow::Cow;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use tokenizers::{
    Normalizer, NormalizerWrapper, OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer,
    PreTokenizerWrapper, Tokenizer,
};

use crate::vocab::Vocab;

/// A string of the file, borrowed when it has no escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// A merge, written `"a b"` or `["a", "b"]`: its two parts.
struct Merge<'a>(Cow<'a, str>, Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Merge<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MergeVisitor(PhantomData))
    }
}

struct MergeVisitor<'a>(PhantomData<Merge<'a>>);

impl<'de: 'a, 'a> Visitor<'de> for MergeVisitor<'a> {
    type Value = Merge<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a merge: \"a b\" or [\"a\", \"b\"]")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Merge<'a>, E> {
        let (a, b) = s
            .split_once(' ')
            .ok_or_else(|| E::custom("merge without a space"))?;
        Ok(Merge(Cow::Borrowed(a), Cow::Borrowed(b)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Merge<'a>, E> {
        let (a, b) = s
            .split_once(' ')
            .ok_or_else(|| E::custom("merge without a space"))?;
        Ok(Merge(Cow::Owned(a.into()), Cow::Owned(b.into())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Merge<'a>, A::Error> {
        let mut part = || -> Result<Cow<'a, str>, A::Error> {
            let s: Str<'de> = seq
                .next_element()?
                .ok_or_else(|| de::Error::custom("merge with fewer than two parts"))?;
            Ok(s.0)
        };
        Ok(Merge(part()?, part()?))
    }
}

/// A JSON object of token to id, as a list.
struct Entries<'a>(Vec<(Cow<'a, str>, u32)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EntriesVisitor(PhantomData))
    }
}

struct EntriesVisitor<'a>(PhantomData<Entries<'a>>);

impl<'de: 'a, 'a> Visitor<'de> for EntriesVisitor<'a> {
    type Value = Entries<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of token to id")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'a>, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((k, v)) = map.next_entry::<Str<'de>, u32>()? {
            out.push((k.0, v));
        }
        Ok(Entries(out))
    }
}

/// The BPE model of the file.
#[derive(Deserialize)]
struct Model<'a> {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(borrow)]
    vocab: Entries<'a>,
    #[serde(borrow)]
    merges: Vec<Merge<'a>>,
    #[serde(default)]
    continuing_subword_prefix: Value,
    #[serde(default)]
    end_of_word_suffix: Value,
    #[serde(default)]
    dropout: Value,
    #[serde(default)]
    unk_token: Value,
    #[serde(default)]
    fuse_unk: Value,
    #[serde(default)]
    byte_fallback: Value,
    #[serde(default)]
    ignore_merges: Value,
}

/// The parts of tokenizer.json a tokenizer is built from.
#[derive(Deserialize)]
struct File<'a> {
    #[serde(default)]
    added_tokens: Vec<Value>,
    #[serde(default)]
    normalizer: Value,
    #[serde(default)]
    pre_tokenizer: Value,
    #[serde(default)]
    post_processor: Value,
    #[serde(default)]
    decoder: Value,
    #[serde(borrow)]
    model: Model<'a>,
}

/// Whether [`reachable`] tries a cut-down tokenizer for `vocab` (a BPE
/// tokenizer.json).
pub(super) fn cuts_down(vocab: &Vocab) -> bool {
    vocab.model() == "BPE" && vocab.file().extension().is_some_and(|e| e == "json")
}

/// The parsed tokenizer.json of a vocabulary [`cuts_down`] (parsed while
/// the passes run), borrowing from the file's bytes.
pub(super) struct Parsed<'a>(File<'a>);

/// Parses `bytes`, the tokenizer.json; `None` when it does not parse as
/// the BPE file expected (the full tokenizer is then used).
pub(super) fn parse(bytes: &[u8]) -> Option<Parsed<'_>> {
    serde_json::from_slice(bytes).ok().map(Parsed)
}

/// Whether encoding each of `ids`' own text gives exactly that id (see
/// [`Vocab::reaches_itself`], whose answers these are): through a
/// tokenizer cut down from `parsed` when given, else the full one.
pub(super) fn reachable(vocab: &Vocab, ids: &[u32], parsed: Option<&Parsed>) -> Vec<Option<bool>> {
    let texts: Vec<Option<String>> = ids.iter().map(|&id| vocab.own_text(id)).collect();
    let Some(tokenizer) = parsed.and_then(|p| restricted(&p.0, texts.iter().flatten())) else {
        return ids.iter().map(|&id| vocab.reaches_itself(id)).collect();
    };
    ids.iter()
        .zip(&texts)
        .map(|(&id, text)| {
            let e = tokenizer.encode(text.as_deref()?, false).ok()?;
            Some(e.get_ids() == [id])
        })
        .collect()
}

/// The tokenizer of `file` cut down to what encoding `texts` needs;
/// `None` when the file is not a BPE model this covers.
fn restricted<'t>(file: &File, texts: impl Iterator<Item = &'t String>) -> Option<Tokenizer> {
    let m = &file.model;
    if m.kind.as_deref().is_some_and(|k| k != "BPE")
        || !m.continuing_subword_prefix.is_null()
        || !m.end_of_word_suffix.is_null()
    {
        return None;
    }
    let normalizer: Option<NormalizerWrapper> =
        serde_json::from_value(file.normalizer.clone()).ok()?;
    let pre: Option<PreTokenizerWrapper> =
        serde_json::from_value(file.pre_tokenizer.clone()).ok()?;
    let mut keep: HashSet<String> = HashSet::new();
    for text in texts {
        for piece in pieces(text, normalizer.as_ref(), pre.as_ref())? {
            substrings(&piece, &mut keep);
        }
        substrings(text, &mut keep);
    }
    // The kept entries, found by scans of the vocabulary and the merges
    // on all cores (Llama 3: 128k entries, 280k merges).
    let unk = m.unk_token.as_str();
    let kept: Vec<(&str, u32)> = m
        .vocab
        .0
        .par_iter()
        .map(|(t, id)| (&**t, *id))
        .filter(|&(t, _)| {
            let byte = t.len() == 6 && t.starts_with("<0x") && t.ends_with('>');
            keep.contains(t) || byte || unk == Some(t)
        })
        .collect();
    let mut out = serde_json::Map::new();
    for &(t, id) in &kept {
        out.insert(t.to_string(), json!(id));
    }
    for added in &file.added_tokens {
        if let (Some(content), Some(id)) = (added["content"].as_str(), added["id"].as_u64()) {
            out.insert(content.to_string(), json!(id));
        }
    }
    let known: HashSet<&str> = out.keys().map(String::as_str).collect();
    let merges: Vec<Value> = m
        .merges
        .par_iter()
        .filter(|merge| {
            let (a, b) = (&*merge.0, &*merge.1);
            known.contains(a) && known.contains(b) && keep.contains(&format!("{a}{b}"))
        })
        .map(|merge| json!([&*merge.0, &*merge.1]))
        .collect();
    let json = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": file.added_tokens,
        "normalizer": file.normalizer,
        "pre_tokenizer": file.pre_tokenizer,
        "post_processor": file.post_processor,
        "decoder": file.decoder,
        "model": {
            "type": "BPE",
            "dropout": m.dropout,
            "unk_token": m.unk_token,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": m.fuse_unk,
            "byte_fallback": m.byte_fallback,
            "ignore_merges": m.ignore_merges,
            "vocab": out,
            "merges": merges,
        },
    });
    json.to_string().parse().ok()
}

/// The words the model sees for `text`: normalised, pre-tokenized.
fn pieces(
    text: &str,
    normalizer: Option<&NormalizerWrapper>,
    pre: Option<&PreTokenizerWrapper>,
) -> Option<Vec<String>> {
    let mut s = PreTokenizedString::from(text);
    if let Some(n) = normalizer {
        s.normalize(|x| n.normalize(x)).ok()?;
    }
    if let Some(p) = pre {
        p.pre_tokenize(&mut s).ok()?;
    }
    let splits = s.get_splits(OffsetReferential::Original, OffsetType::Byte);
    Some(splits.into_iter().map(|(w, _, _)| w.to_string()).collect())
}

/// Adds every substring of `s` (on char boundaries) to `set`.
fn substrings(s: &str, set: &mut HashSet<String>) {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    for (k, &start) in bounds.iter().enumerate() {
        for &end in &bounds[k + 1..] {
            set.insert(s[start..end].to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn cut_down_answers_match_the_full_tokenizer() {
        // Byte-level BPE, SentencePiece-style BPE (Metaspace, byte
        // fallback): every id, by the cut-down tokenizer and the full one.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        for dir in ["pieces-byte-level", "pieces-sentencepiece"] {
            let v = Vocab::load(&root.join(dir), None).unwrap().unwrap();
            assert!(cuts_down(&v), "{dir}");
            let ids: Vec<u32> = (0..v.size() as u32 + 2).collect();
            let texts: Vec<String> = ids.iter().filter_map(|&id| v.own_text(id)).collect();
            let bytes = std::fs::read(v.file()).unwrap();
            let parsed = parse(&bytes).expect("parses");
            assert!(restricted(&parsed.0, texts.iter()).is_some(), "{dir}");
            let full: Vec<Option<bool>> = ids.iter().map(|&id| v.reaches_itself(id)).collect();
            assert_eq!(reachable(&v, &ids, Some(&parsed)), full, "{dir}");
            let (yes, no) = (
                full.iter().filter(|r| **r == Some(true)).count(),
                full.iter().filter(|r| **r == Some(false)).count(),
            );
            assert!(yes > 50 && no > 0, "{dir}: {yes} reach, {no} do not");
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
}
