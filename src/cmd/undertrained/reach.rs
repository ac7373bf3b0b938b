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
//! in their order, encodes the texts exactly as the full one does, as long
//! as its added tokens have the ids the full one gives them (checked: a
//! file whose ids `tokenizers` would not give uses the full tokenizer). The
//! vocabulary comes from the loaded [`Vocab`], and so do the merges: the
//! load's scan (`vocab::scan`) noted where each merge's strings lie in the
//! mapped file ([`Vocab::load_keeping_merges`]), and they are filtered
//! from those places once the candidates are known, without allocating
//! per merge; only the file's small parts are parsed again. Other
//! models (WordPiece, Unigram, ...), GGUF vocabularies and BPE options this
//! does not cover (subword prefixes or suffixes) use the full tokenizer.

use std::ops::Range;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use rayon::prelude::*;

use serde::Deserialize;
use serde_json::{Value, json};
use tokenizers::{
    Normalizer, NormalizerWrapper, OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer,
    PreTokenizerWrapper, Tokenizer,
};

use crate::vocab::Vocab;
use crate::vocab::parse::Source;
use crate::vocab::scan::{self, Merge, MergePlace, MergePlaces};

/// The BPE model's settings (its vocab and merges are cut out before the
/// parse, see [`parse`]).
#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: Option<String>,
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

/// The parts of tokenizer.json a tokenizer is built from, but the model's
/// vocab and merges.
#[derive(Deserialize)]
struct File {
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
    model: Model,
}

/// Whether [`reachable`] tries a cut-down tokenizer for `vocab`: a BPE
/// tokenizer.json that the load kept with its merges' places.
pub(super) fn cuts_down(vocab: &Vocab) -> bool {
    vocab.model() == "BPE" && vocab.merges_source().is_some()
}

/// The tokenizer.json of a vocabulary [`cuts_down`], as the load kept it:
/// its small parts parsed, its merges' strings where the load's scan found
/// them (filtered once the candidates are known), its vocab not read
/// again (the loaded [`Vocab`] has it).
pub(super) struct Parsed<'a> {
    file: File,
    bytes: &'a [u8],
    /// Where each merge's strings lie in `bytes`.
    places: &'a MergePlaces,
}

/// Parses the small parts of `source`'s file, its `model.vocab` and
/// `model.merges` cut out; `None` when they do not parse as the BPE file
/// expected (the full tokenizer is then used).
pub(super) fn parse(source: &Source) -> Option<Parsed<'_>> {
    let mut cut = [source.vocab.clone(), source.merges.clone()];
    let file = serde_json::from_slice(&scan::splice(&source.bytes, &mut cut)).ok()?;
    Some(Parsed {
        file,
        bytes: &source.bytes,
        places: &source.places,
    })
}

/// Whether encoding each of `ids`' own text gives exactly that id (see
/// [`Vocab::reaches_itself`], whose answers these are): through a
/// tokenizer cut down from the file the vocabulary kept, when it did
/// ([`Vocab::load_keeping_merges`]) and it [`cuts_down`], else the full one.
///
/// A text written as an added token is matched by the added vocabulary
/// before the model sees it (unless, say, that token is `normalized` and
/// the normalizer changes the text): the cut-down tokenizer is first built
/// for the other texts alone, and the added vocabulary's own split of each
/// of these says whether it is matched whole; only those it is not go to
/// the model, through a second cut-down tokenizer that has their
/// substrings too. Llama 3's reserved tokens, the usual top candidates,
/// then cost no pre-tokenization and keep the cut-down tokenizer small.
pub(super) fn reachable(vocab: &Vocab, ids: &[u32]) -> Vec<Option<bool>> {
    let texts: Vec<Option<String>> = ids.iter().map(|&id| vocab.own_text(id)).collect();
    let full = || ids.iter().map(|&id| vocab.reaches_itself(id)).collect();
    let parsed = vocab
        .merges_source()
        .filter(|_| cuts_down(vocab))
        .and_then(parse);
    let Some(parsed) = parsed else {
        return full();
    };
    let added: HashSet<&str> = (vocab.added_tokens().iter())
        .map(|a| a.content.as_str())
        .collect();
    let to_model = |text: &String| !added.contains(text.as_str());
    let model_texts: Vec<&String> = texts.iter().flatten().filter(|t| to_model(t)).collect();
    let Some(tokenizer) = restricted(vocab, &parsed, model_texts.iter().copied()) else {
        return full();
    };
    let encodes_to = |tokenizer: &Tokenizer, text: &str, id: u32| {
        let e = tokenizer.encode(text, false).ok()?;
        Some(e.get_ids() == [id])
    };
    let mut answers = Vec::with_capacity(ids.len());
    let mut retry = Vec::new();
    for (k, (&id, text)) in ids.iter().zip(&texts).enumerate() {
        let answer = match text {
            None => None,
            Some(text) if to_model(text) => encodes_to(&tokenizer, text, id),
            Some(text) => match whole_added(&tokenizer, text) {
                Some(matched) => Some(matched == id),
                None => {
                    retry.push(k);
                    None
                }
            },
        };
        answers.push(answer);
    }
    if !retry.is_empty() {
        let again = retry.iter().filter_map(|&k| texts[k].as_ref());
        let for_model = model_texts.iter().copied().chain(again);
        let Some(tokenizer) = restricted(vocab, &parsed, for_model) else {
            return full();
        };
        for k in retry {
            answers[k] = texts[k]
                .as_deref()
                .and_then(|text| encodes_to(&tokenizer, text, ids[k]));
        }
    }
    answers
}

/// The id of the added token that `tokenizer`'s added vocabulary matches
/// as the whole of `text`, leaving the model nothing: then encoding `text`
/// gives that id alone. `None` when it does not.
fn whole_added(tokenizer: &Tokenizer, text: &str) -> Option<u32> {
    let split =
        (tokenizer.get_added_vocabulary()).extract_and_normalize(tokenizer.get_normalizer(), text);
    match &split.get_splits(OffsetReferential::Original, OffsetType::Byte)[..] {
        [(_, _, Some(tokens))] => match &tokens[..] {
            [token] => Some(token.id),
            _ => None,
        },
        _ => None,
    }
}

/// The tokenizer of `vocab`'s file (`parsed`) cut down to what encoding
/// `texts` needs; `None` when the file is not a BPE model this covers.
fn restricted<'t>(
    vocab: &Vocab,
    parsed: &Parsed,
    texts: impl Iterator<Item = &'t String>,
) -> Option<Tokenizer> {
    let file = &parsed.file;
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
    // The kept entries of the model vocab, in file order (the last of
    // repeated strings wins, as in the full tokenizer), then added tokens.
    // Most entries are not kept, seen without hashing by the sketch.
    let unk = m.unk_token.as_str();
    let sketch = Sketch::new(keep.iter().map(String::as_bytes));
    let added: Vec<(&str, u64)> = (file.added_tokens.iter())
        .filter_map(|a| Some((a["content"].as_str()?, a["id"].as_u64()?)))
        .collect();
    let added_sketch = Sketch::new(added.iter().map(|(content, _)| content.as_bytes()));
    let added_set: HashSet<&str> = added.iter().map(|&(content, _)| content).collect();
    let mut in_model = HashMap::new();
    let mut out = serde_json::Map::new();
    let mut model_len = 0;
    for (t, id) in vocab.model_entries() {
        model_len += 1;
        if added_sketch.may_hold(t.as_bytes()) && added_set.contains(t) {
            in_model.insert(t, id);
        }
        let byte = t.len() == 6 && t.starts_with("<0x") && t.ends_with('>');
        let kept = sketch.may_hold(t.as_bytes()) && keep.contains(t);
        if kept || byte || unk == Some(t) {
            out.insert(t.to_string(), json!(id));
        }
    }
    if !added_ids_hold(&added, &in_model, model_len) {
        return None;
    }
    for (content, id) in added {
        out.insert(content.to_string(), json!(id));
    }
    let merges = kept_merges(parsed, &out, &keep, MERGES_PER_TASK)?;
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

/// Whether the full tokenizer gives each added token (content, id, in
/// file order) the file's id: `tokenizers` does not read those ids, it
/// gives a content the id the model vocab (`in_model`, the added contents
/// it has) has for it, or else the next one past the `model_len` entries
/// of the model vocab. The cut-down tokenizer has every added content in
/// its model vocab, at the file's id, so it answers as the full one only
/// when these agree (any tokenizer.json `tokenizers` wrote; a file whose
/// model vocab repeats a string is taken at its entries' count).
fn added_ids_hold(added: &[(&str, u64)], in_model: &HashMap<&str, u32>, model_len: usize) -> bool {
    let mut given: HashMap<&str, u64> = HashMap::new();
    let mut next = model_len as u64;
    for &(content, id) in added {
        if content.is_empty() {
            return false;
        }
        let assigned = match given.get(content) {
            Some(&known) => known,
            None => match in_model.get(content) {
                Some(&model_id) => u64::from(model_id),
                None => {
                    next += 1;
                    next - 1
                }
            },
        };
        if assigned != id {
            return false;
        }
        given.insert(content, assigned);
    }
    true
}

/// Merges filtered per task by [`kept_merges`].
const MERGES_PER_TASK: usize = 1 << 14;

/// The merges of `parsed`, in order, whose parts are both `known` and
/// whose result is in `keep`, as `[a, b]` pairs, filtered on all cores,
/// `per_task` merges a task (the places of their strings split anywhere
/// between merges). Allocates
/// only for strings with escapes and for the merges kept (a few hundred of
/// Llama 3's 280k); `None` when a merge is not as the tokenizers crate
/// reads it (the full tokenizer then answers).
fn kept_merges(
    parsed: &Parsed,
    known: &serde_json::Map<String, Value>,
    keep: &HashSet<String>,
    per_task: usize,
) -> Option<Vec<Value>> {
    let known: HashSet<&[u8]> = known.keys().map(String::as_bytes).collect();
    let sketch = Sketch::new(known.iter().copied());
    let parts: Option<Vec<Vec<Value>>> = parsed
        .places
        .merges
        .par_chunks(per_task)
        .map(|merges| kept_among(parsed, merges, &known, &sketch, keep))
        .collect();
    Some(parts?.into_iter().flatten().collect())
}

/// [`kept_merges`] among the merges at `merges`.
fn kept_among(
    parsed: &Parsed,
    merges: &[MergePlace],
    known: &HashSet<&[u8]>,
    sketch: &Sketch,
    keep: &HashSet<String>,
) -> Option<Vec<Value>> {
    let part = |(r, escaped): (Range<usize>, bool)| scan::Part::new(&parsed.bytes[r], escaped);
    // Most merges have a part that is not known, seen without hashing:
    // a plain string (no escape, so as written) whose sketch bit is clear.
    let plain = |(r, escaped): (Range<usize>, bool)| {
        (!escaped).then(|| &parsed.bytes[r.start + 1..r.end - 1])
    };
    let unknown = |t: Option<&[u8]>| t.is_some_and(|t| !sketch.may_hold(t));
    let mut out = Vec::new();
    for place in merges {
        let (first, second) = (place.first(), place.second());
        let skip = match second.clone() {
            Some(b) => unknown(plain(first.clone())) || unknown(plain(b)),
            // Joined: only as the tokenizers crate splits it (one space,
            // no `#version` line), else `parts` says it is not a merge.
            None => plain(first.clone()).is_some_and(|t| match scan::joined_split(t) {
                Some(at) => unknown(Some(&t[..at])) || unknown(Some(&t[at + 1..])),
                None => false,
            }),
        };
        if skip {
            continue;
        }
        let merge = match second {
            Some(b) => Merge::Pair(part(first), part(b)),
            None => Merge::Joined(part(first)),
        };
        let [a, b] = merge.parts()?;
        if !(known.contains(&*a) && known.contains(&*b)) {
            continue;
        }
        // Both parts are known strings, so valid UTF-8.
        let (Ok(a), Ok(b)) = (std::str::from_utf8(&a), std::str::from_utf8(&b)) else {
            continue;
        };
        if keep.contains(&format!("{a}{b}")) {
            out.push(json!([a, b]));
        }
    }
    Some(out)
}

/// A bit for each (length, first byte, last byte) of a set of strings: a
/// string whose bit is clear is not in the set, known without hashing it.
struct Sketch(Vec<u64>);

impl Sketch {
    fn key(s: &[u8]) -> usize {
        let (first, last) = (s.first().copied(), s.last().copied());
        (s.len() & 15) << 12
            | usize::from(first.unwrap_or(0) & 63) << 6
            | usize::from(last.unwrap_or(0) & 63)
    }

    fn new<'a>(set: impl Iterator<Item = &'a [u8]>) -> Sketch {
        let mut bits = vec![0u64; 1 << 10];
        for s in set {
            let k = Sketch::key(s);
            bits[k >> 6] |= 1 << (k & 63);
        }
        Sketch(bits)
    }

    fn may_hold(&self, s: &[u8]) -> bool {
        let k = Sketch::key(s);
        self.0[k >> 6] >> (k & 63) & 1 == 1
    }
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
mod tests;
