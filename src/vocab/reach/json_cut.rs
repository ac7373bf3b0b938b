//! The cut-down tokenizer of a BPE tokenizer.json: its model vocab kept to
//! the entries [`Substrings`] may hold (plus the unknown token,
//! byte-fallback pieces and added tokens, at their ids), its merges to
//! those that make a kept entry of two kept ones, in their order. Llama
//! 3's full tokenizer (128k tokens, 280k merges) takes about half a second
//! and 190 MiB to build; the cut-down one a small part of that.
//!
//! The vocabulary comes from the loaded [`Vocab`], and so do the merges:
//! the load's scan (`vocab::scan`) noted where each merge's strings lie in
//! the mapped file ([`Vocab::load_keeping_merges`]), and they are filtered
//! from those places without allocating per merge; only the file's small
//! parts are parsed again. The cut-down tokenizer encodes as the full one
//! only when its added tokens have the ids the full one gives them
//! (checked: a file whose ids `tokenizers` would not give uses the full
//! tokenizer), and for plain BPE only (no subword prefix or suffix).

use std::ops::Range;

use foldhash::{HashMap, HashSet};
use serde::Deserialize;
use serde_json::{Value, json};
use tokenizers::Tokenizer;

use super::keep::{Sketch, Substrings, hash_joined};
use crate::vocab::Vocab;
use crate::vocab::contain::{contained, normalizer_fault};
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

/// Whether the reachability test cuts down the tokenizer of `vocab`'s
/// tokenizer.json: a BPE one that the load kept with its merges' places.
pub(super) fn cuts_down(vocab: &Vocab) -> bool {
    vocab.model() == "BPE" && vocab.merges_source().is_some()
}

/// The tokenizer.json of a vocabulary that [`cuts_down`], as the load
/// kept it: its small parts parsed, its merges' strings where the load's
/// scan found them, its vocab not read again (the loaded [`Vocab`] has
/// it).
pub(super) struct Parsed<'a> {
    file: File,
    bytes: &'a [u8],
    /// Where each merge's strings lie in `bytes`.
    places: &'a MergePlaces,
}

/// Parses the small parts of `source`'s file, its `model.vocab` and
/// `model.merges` cut out; `None` when they do not parse as a plain BPE
/// file (the full tokenizer is then used).
pub(super) fn parse(source: &Source) -> Option<Parsed<'_>> {
    let mut cut = [source.vocab.clone(), source.merges.clone()];
    let file: File = serde_json::from_slice(&scan::splice(&source.bytes, &mut cut)).ok()?;
    let m = &file.model;
    let plain = m.kind.as_deref().is_none_or(|k| k == "BPE")
        && m.continuing_subword_prefix.is_null()
        && m.end_of_word_suffix.is_null();
    plain.then_some(Parsed {
        file,
        bytes: &source.bytes,
        places: &source.places,
    })
}

/// The tokenizer of `vocab`'s file (`parsed`) cut down to the model
/// entries `keep` may hold (none: the unknown token, byte pieces and
/// added tokens only); `None` when it cannot encode as the full one.
pub(super) fn build(
    vocab: &Vocab,
    parsed: &Parsed,
    keep: Option<&Substrings>,
) -> Option<Tokenizer> {
    let file = &parsed.file;
    let m = &file.model;
    if normalizer_fault(&file.normalizer).is_some() {
        return None;
    }
    // The kept entries of the model vocab, in file order (the last of
    // repeated strings wins, as in the full tokenizer), then added tokens.
    let unk = m.unk_token.as_str();
    let added: Vec<(&str, u64)> = (file.added_tokens.iter())
        .filter_map(|a| Some((a["content"].as_str()?, a["id"].as_u64()?)))
        .collect();
    let added_sketch = Sketch::new(added.iter().map(|(content, _)| content.as_bytes()));
    let added_set: HashSet<&str> = added.iter().map(|&(content, _)| content).collect();
    let mut in_model = HashMap::default();
    let mut out = serde_json::Map::new();
    let mut model_len = 0;
    for (t, id) in vocab.model_entries() {
        model_len += 1;
        if added_sketch.may_hold(t.as_bytes()) && added_set.contains(t) {
            in_model.insert(t, id);
        }
        let byte = t.len() == 6 && t.starts_with("<0x") && t.ends_with('>');
        let kept = keep.is_some_and(|k| k.may_hold(t.as_bytes()));
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
    let merges = match keep {
        Some(keep) => kept_merges(parsed, &out, keep)?,
        None => Vec::new(),
    };
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
    contained(|| json.to_string().parse().ok()).ok().flatten()
}

/// Whether the full tokenizer gives each added token (content, id, in
/// file order) the file's id: `tokenizers` does not read those ids, it
/// gives a content the id the model vocab (`in_model`, the added contents
/// it has) has for it, or else the next one past the `model_len` entries
/// of the model vocab. The cut-down tokenizer has every added content in
/// its model vocab, at the file's id, so it answers as the full one only
/// when these agree (any tokenizer.json `tokenizers` wrote; a file whose
/// model vocab repeats a string is taken at its entries' count).
pub(super) fn added_ids_hold(
    added: &[(&str, u64)],
    in_model: &HashMap<&str, u32>,
    model_len: usize,
) -> bool {
    let mut given: HashMap<&str, u64> = HashMap::default();
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

/// The merges of `parsed`, in order, whose parts are both `known` and
/// whose result `keep` may hold, as `[a, b]` pairs. Allocates only for
/// strings with escapes and for the merges kept (a few hundred of Llama
/// 3's 280k); `None` when a merge is not as the tokenizers crate reads it
/// (the full tokenizer then answers). One thread walks them: Llama 3's in
/// about 3 ms, less than handing them to a pool that `undertrained` keeps
/// busy letting the matrices' pages go meanwhile.
pub(super) fn kept_merges(
    parsed: &Parsed,
    known: &serde_json::Map<String, Value>,
    keep: &Substrings,
) -> Option<Vec<Value>> {
    let known: HashSet<&[u8]> = known.keys().map(String::as_bytes).collect();
    let sketch = Sketch::new(known.iter().copied());
    kept_among(parsed, &parsed.places.merges, &known, &sketch, keep)
}

/// [`kept_merges`] among the merges at `merges`.
fn kept_among(
    parsed: &Parsed,
    merges: &[MergePlace],
    known: &HashSet<&[u8]>,
    sketch: &Sketch,
    keep: &Substrings,
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
        if !keep.may_hold_hash(hash_joined(&a, &b)) {
            continue;
        }
        // Both parts are known strings, so valid UTF-8.
        if let (Ok(a), Ok(b)) = (std::str::from_utf8(&a), std::str::from_utf8(&b)) {
            out.push(json!([a, b]));
        }
    }
    Some(out)
}
