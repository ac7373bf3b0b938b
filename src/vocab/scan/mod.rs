//! A hand-written scan of a tokenizer.json's layout: where `model.merges`
//! and `model.vocab` lie in the bytes, so that serde parses the rest
//! without walking hundreds of thousands of merges and entries, and both
//! are read in place, in the same walk (see [`merges`] and [`vocab`]).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the walk: [`locate`], [`merges`], [`vocab`], skipping values, [`splice`] |
//! | `strings.rs` | JSON strings as written ([`Part`]), merges ([`Merge`]), plain integer ids |
//! | `cursor.rs` | a forward cursor over 64-byte blocks classified at once (SSE2 on x86-64) |
//! | `template.rs` | the layout a pretty-printed file repeats, learned once and compared word-wide |
//! | `places.rs` | where each merge's strings lie, eight bytes a merge ([`MergePlaces`]) |
//! | `tests.rs` | the scan against serde on both merge shapes, escapes and broken layouts |
//!
//! The scan reads strictly what it expects (objects of keys, strings with
//! valid escapes, the merges' two shapes, ids as plain integers) and gives
//! up, `None`, on anything else: callers then parse the whole file with
//! serde, so an unexpected layout costs time, never an answer or an error
//! message. Values it only skips are checked by the serde parse of the
//! rest, when they are parsed.
//!
//! Why it exists: a word query (`neighbors MODEL king`) reads the
//! tokenizer on one core before its pass over the matrix. On the
//! Llama-3-shaped checkpoint (its 17.9 MB tokenizer.json writes merges as
//! pairs), such a query takes 1.40× the plain read of the embedding with
//! the scan and 1.58× with serde alone (borrowed strings, merges skipped
//! as `IgnoredAny`); with Llama 3's own 9.1 MB tokenizer.json, 1.38× and
//! 1.50× (medians of 41 interleaved runs on a 2-core Zen 4). The load
//! alone takes 14 ms of CPU against 27, and 13 against 18. The places of
//! the merges it records also serve `undertrained`'s reachability test
//! (see [`MergePlaces`]).

mod cursor;
mod places;
mod strings;
mod template;

use std::ops::Range;

use cursor::Cursor;
pub(crate) use places::{MergePlace, MergePlaces};
pub(crate) use strings::{Merge, Part, joined_split};
use strings::{string, uint};
use template::{EntryTemplate, Template};

/// Where the parts of `model` lie in a tokenizer.json.
pub(crate) struct Layout {
    /// The `model.merges` array, brackets included, when present.
    pub merges: Option<Range<usize>>,
    /// The `model.vocab` value, when present.
    pub vocab: Option<Range<usize>>,
    /// Whether `vocab` is an object [`vocab`] read whole: every entry was
    /// passed to `on_entry` (else some may have been, to be ignored).
    pub vocab_read: bool,
}

/// Finds `model.merges` (an array of merges, see [`merges`], each passed
/// to `on_merge`) and `model.vocab` in `b`, reading the vocab as it goes
/// when it is an object [`vocab`] reads (each entry passed to `on_entry`,
/// then `on_vocab` called with where the root's `added_tokens` value lies
/// if the walk has passed it; otherwise skipped); stops as soon as both
/// are found. `None` when the file is not an object whose `model` object
/// has one of them, or its `merges` is not an array of one of the two
/// shapes.
pub(crate) fn locate<'a>(
    b: &'a [u8],
    mut on_merge: impl FnMut(Merge<'a>),
    mut on_entry: impl FnMut(Part<'a>, u32),
    mut on_vocab: impl FnMut(Option<Range<usize>>),
) -> Option<Layout> {
    let mut found_merges = None;
    let mut found_vocab = None;
    let mut vocab_read = false;
    // Where the root's `added_tokens` lies, once walked past.
    let added = std::cell::Cell::new(None);
    let mut in_model = |key: &[u8], start: usize| -> Option<Flow> {
        let end = match key {
            b"merges" => {
                let end = merges(b, start, &mut on_merge)?;
                found_merges = Some(start..end);
                end
            }
            b"vocab" => {
                let read = vocab(b, start, &mut on_entry);
                vocab_read = read.is_some();
                if vocab_read {
                    on_vocab(added.get().map(|(a, z)| a..z));
                }
                let end = match read {
                    Some(end) => end,
                    None => skip_value(b, start)?,
                };
                found_vocab = Some(start..end);
                end
            }
            _ => skip_value(b, start)?,
        };
        let done = found_merges.is_some() && found_vocab.is_some();
        Some(if done { Flow::Stop } else { Flow::Next(end) })
    };
    let found = each_member(b, ws(b, 0), &mut |key, start| match key {
        b"model" => each_member(b, start, &mut in_model),
        b"added_tokens" => {
            let end = skip_value(b, start)?;
            added.set(Some((start, end)));
            Some(Flow::Next(end))
        }
        _ => skip_value(b, start).map(Flow::Next),
    })?;
    match found {
        Flow::Stop => {}
        // The whole file walked: it must end there.
        Flow::Next(end) if ws(b, end) == b.len() => {}
        Flow::Next(_) => return None,
    }
    if found_merges.is_none() && found_vocab.is_none() {
        return None;
    }
    Some(Layout {
        merges: found_merges,
        vocab: found_vocab,
        vocab_read,
    })
}

/// `b` with the `cut` ranges (apart, in any order: [`locate`] finds
/// `model.vocab` and `model.merges` either way round) each replaced by
/// `[]`.
pub(crate) fn splice(b: &[u8], cut: &mut [Range<usize>]) -> Vec<u8> {
    cut.sort_by_key(|r| r.start);
    let removed: usize = cut.iter().map(|r| r.len()).sum();
    let mut out = Vec::with_capacity(b.len() - removed + 2 * cut.len());
    let mut from = 0;
    for r in cut.iter() {
        out.extend_from_slice(&b[from..r.start]);
        out.extend_from_slice(b"[]");
        from = r.end;
    }
    out.extend_from_slice(&b[from..]);
    out
}

/// Scans the merges array starting at `b[i]`, calling `f` on each merge in
/// order; returns the index just past the array. `None` unless it is an
/// array of strings or of two-string arrays (one shape throughout, as the
/// tokenizers crate wants) in well-formed JSON. Merges laid out as the
/// previous one are read by its [`Template`].
pub(crate) fn merges<'a>(b: &'a [u8], i: usize, mut f: impl FnMut(Merge<'a>)) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut cur = Cursor::new(b);
    let mut i = cur.non_ws(i + 1);
    let pairs = match *b.get(i)? {
        b']' => return Some(i + 1),
        first => first == b'[',
    };
    let mut template: Option<Template> = None;
    loop {
        if let Some((merge, next)) = template.and_then(|t| t.read(b, i)) {
            f(merge);
            i = next;
            continue;
        }
        let open = i;
        let merge = if pairs {
            if b.get(i) != Some(&b'[') {
                return None;
            }
            i = cur.non_ws(i + 1);
            let (a, end) = cur.string(i)?;
            i = cur.non_ws(end);
            if b.get(i) != Some(&b',') {
                return None;
            }
            i = cur.non_ws(i + 1);
            let (z, end) = cur.string(i)?;
            i = cur.non_ws(end);
            if b.get(i) != Some(&b']') {
                return None;
            }
            i += 1;
            Merge::Pair(a, z)
        } else {
            let (s, end) = cur.string(i)?;
            i = end;
            Merge::Joined(s)
        };
        f(merge);
        i = cur.non_ws(i);
        match *b.get(i)? {
            b',' => {
                i = cur.non_ws(i + 1);
                template = match merge {
                    Merge::Pair(a, z) => Template::learn(b, open, &[a, z], i),
                    Merge::Joined(s) => Template::learn(b, open, &[s], i),
                };
            }
            b']' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Reads the object of token ids at `b[i]` (`model.vocab` of BPE,
/// WordPiece and WordLevel files), calling `f` on each entry in order;
/// returns the index just past it. `None` unless every value is a plain
/// integer of `u32` (serde reads anything else, and says what is wrong).
fn vocab<'a>(b: &'a [u8], i: usize, mut f: impl FnMut(Part<'a>, u32)) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut cur = Cursor::new(b);
    let mut i = cur.non_ws(i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    let mut template: Option<EntryTemplate> = None;
    loop {
        if let Some((token, id, next)) = template.and_then(|t| t.read(b, i)) {
            f(token, id);
            i = next;
            continue;
        }
        let (token, end) = cur.string(i)?;
        i = cur.non_ws(end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = cur.non_ws(i + 1);
        let (id, end) = uint(b, start)?;
        f(token, id);
        i = cur.non_ws(end);
        match *b.get(i)? {
            b',' => {
                i = cur.non_ws(i + 1);
                template = EntryTemplate::learn(b, token, start..end, i);
            }
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// What a member's callback tells [`each_member`]: go on from the end of
/// its value, or stop the whole walk.
enum Flow {
    Next(usize),
    Stop,
}

/// Calls `f(raw key, start of value)` on each member of the object at
/// `b[i]`, which returns where the value ends; the index past the object,
/// or `Stop` as soon as `f` says so. Keys with escapes are passed raw.
fn each_member(
    b: &[u8],
    i: usize,
    f: &mut dyn FnMut(&[u8], usize) -> Option<Flow>,
) -> Option<Flow> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(Flow::Next(i + 1));
    }
    loop {
        let (key, end) = string(b, i)?;
        i = ws(b, end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let raw = &key.quoted[1..key.quoted.len() - 1];
        match f(raw, ws(b, i + 1))? {
            Flow::Stop => return Some(Flow::Stop),
            Flow::Next(end) => i = ws(b, end),
        }
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(Flow::Next(i + 1)),
            _ => return None,
        }
    }
}

/// The index past the value at `b[i]`: strings read exactly, containers
/// by their brackets and strings only, scalars up to the next delimiter
/// (serde checks the values this only skips, when it parses them).
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string(b, i).map(|(_, end)| end),
        b'{' | b'[' => {
            let mut cur = Cursor::new(b);
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => j = cur.string(j)?.1,
                    b'{' | b'[' => {
                        depth += 1;
                        j += 1;
                    }
                    _ => {
                        depth -= 1;
                        j += 1;
                        if depth == 0 {
                            return Some(j);
                        }
                    }
                }
                j = cur.quote_or_bracket(j);
            }
        }
        _ => {
            let len = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                .unwrap_or(b.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
/// Only between the members of the top object and of `model`, a few
/// dozen times a file: the merges and vocab, and the values skipped, are
/// read with a [`Cursor`].
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests;
