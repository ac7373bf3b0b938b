//! A hand-written scan of a tokenizer.json's layout: where `model.merges`
//! and `model.vocab` lie in the bytes, so that serde parses the rest
//! without walking hundreds of thousands of merges and entries, and both
//! are read in place, in the same walk (see [`merges`] and [`vocab`]).
//!
//! The scan reads strictly what it expects (objects of keys, strings with
//! valid escapes, the merges' two shapes, ids as plain integers) and gives
//! up, `None`, on anything else: callers then parse the whole file with
//! serde, so an unexpected layout costs time, never an answer or an error
//! message. Values it only skips are checked by the serde parse of the
//! rest, when they are parsed.

use std::borrow::Cow;
use std::ops::Range;

use super::cursor::Cursor;
use super::template::{EntryTemplate, Template};

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

/// One merge as written: `"a b"` (joined) or `["a", "b"]` (a pair).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Merge<'a> {
    Joined(Part<'a>),
    Pair(Part<'a>, Part<'a>),
}

/// A string of the file as written, quotes included.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part<'a> {
    pub(super) quoted: &'a [u8],
    /// Whether it has a backslash escape.
    pub(super) escaped: bool,
}

impl<'a> Part<'a> {
    /// The string written `quoted` (quotes included), with backslash
    /// escapes or not, as [`merges`] found it in a file.
    pub(crate) fn new(quoted: &'a [u8], escaped: bool) -> Part<'a> {
        Part { quoted, escaped }
    }

    /// Whether the string has backslash escapes.
    pub(crate) fn escaped(self) -> bool {
        self.escaped
    }

    /// Where the string lies in `file`, which holds it.
    pub(crate) fn range_in(self, file: &[u8]) -> Range<usize> {
        let start = self.quoted.as_ptr() as usize - file.as_ptr() as usize;
        start..start + self.quoted.len()
    }

    /// The string's bytes: borrowed when it has no escape, else decoded
    /// (`None` when the escapes do not make a string, as a lone surrogate).
    pub(crate) fn text(self) -> Option<Cow<'a, [u8]>> {
        if self.escaped {
            let s: String = serde_json::from_slice(self.quoted).ok()?;
            Some(Cow::Owned(s.into_bytes()))
        } else {
            Some(Cow::Borrowed(&self.quoted[1..self.quoted.len() - 1]))
        }
    }
}

/// Where each merge's strings lie in a tokenizer.json, recorded while
/// [`merges`] checks them, so that a later reader can filter the merges
/// without scanning them again (`undertrained`'s reachability test): a
/// [`MergePlace`] of 8 bytes per merge. A merge that does not fit one
/// (a file of 4 GiB or more, a string of 4 KiB or more, or 64 bytes or
/// more between a pair's strings) leaves the places incomplete.
#[derive(Debug, Default)]
pub(crate) struct MergePlaces {
    /// One place a merge, in order.
    pub merges: Vec<MergePlace>,
    /// Whether the merges are pairs of strings (the last one recorded was).
    pub pairs: bool,
    /// A merge did not fit its place.
    overflow: bool,
}

/// Where a merge's strings lie, quotes included, packed in 64 bits (16
/// bytes, a start and an end for each string, took a page fault per 256
/// merges more while the tokenizer loaded): from bit 0, the first
/// string's start (32 bits), its length and the second's (12 bits each,
/// 0 for a joined merge), the bytes between them (6 bits), and whether
/// each has escapes (a bit each).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MergePlace(u64);

impl MergePlace {
    /// The place of the strings at `a` and `b` (none for a joined merge)
    /// with escapes as said; `None` when they do not fit.
    fn new((a, a_esc): (Range<usize>, bool), b: Option<(Range<usize>, bool)>) -> Option<Self> {
        let fits = |x: usize, bits: u32| (x < 1 << bits).then_some(x as u64);
        let (len_b, gap, b_esc) = match b {
            Some((b, esc)) => (b.len(), b.start.checked_sub(a.end)?, esc),
            None => (0, 0, false),
        };
        Some(MergePlace(
            fits(a.start, 32)?
                | fits(a.len(), 12)? << 32
                | fits(len_b, 12)? << 44
                | fits(gap, 6)? << 56
                | u64::from(a_esc) << 62
                | u64::from(b_esc) << 63,
        ))
    }

    /// Where its first string lies, and whether it has escapes.
    pub(crate) fn first(self) -> (Range<usize>, bool) {
        let start = (self.0 & 0xFFFF_FFFF) as usize;
        let len = (self.0 >> 32 & 0xFFF) as usize;
        (start..start + len, self.0 >> 62 & 1 == 1)
    }

    /// Where its second string lies, and whether it has escapes (`None`:
    /// a joined merge).
    pub(crate) fn second(self) -> Option<(Range<usize>, bool)> {
        let len = (self.0 >> 44 & 0xFFF) as usize;
        let start = self.first().0.end + (self.0 >> 56 & 0x3F) as usize;
        (len > 0).then_some((start..start + len, self.0 >> 63 == 1))
    }
}

impl MergePlaces {
    /// Places with room for the merges of a file of `len` bytes (a merge
    /// takes 6 bytes at the least, `"a b",`): the vector never grows by
    /// copying, and the pages past what the merges use are never touched.
    pub(crate) fn for_file(len: usize) -> MergePlaces {
        MergePlaces {
            merges: Vec::with_capacity(len / 6),
            ..MergePlaces::default()
        }
    }

    /// Records the places of `merge`'s strings in `file`.
    pub(crate) fn record(&mut self, file: &[u8], merge: Merge) {
        let at = |part: Part| (part.range_in(file), part.escaped());
        let place = match merge {
            Merge::Pair(a, b) => {
                self.pairs = true;
                MergePlace::new(at(a), Some(at(b)))
            }
            Merge::Joined(s) => {
                self.pairs = false;
                MergePlace::new(at(s), None)
            }
        };
        match place {
            Some(p) => self.merges.push(p),
            None => self.overflow = true,
        }
    }

    /// The places, unless one did not fit.
    pub(crate) fn complete(self) -> Option<MergePlaces> {
        (!self.overflow).then_some(self)
    }
}

impl<'a> Merge<'a> {
    /// The merge's two parts, as the tokenizers crate reads them: a joined
    /// merge splits at its one space (`None` with none or several; `None`
    /// too for a `#version` line, which it skips). Allocates only for a
    /// string with escapes.
    pub(crate) fn parts(self) -> Option<[Cow<'a, [u8]>; 2]> {
        match self {
            Merge::Pair(a, b) => Some([a.text()?, b.text()?]),
            Merge::Joined(s) => match s.text()? {
                Cow::Borrowed(t) => {
                    let at = joined_split(t)?;
                    Some([Cow::Borrowed(&t[..at]), Cow::Borrowed(&t[at + 1..])])
                }
                Cow::Owned(t) => {
                    let at = joined_split(&t)?;
                    Some([
                        Cow::Owned(t[..at].to_vec()),
                        Cow::Owned(t[at + 1..].to_vec()),
                    ])
                }
            },
        }
    }
}

/// Where the tokenizers crate splits the text `t` of a joined merge: at
/// its one space (`None` with none or several; `None` too for a
/// `#version` line, which it skips).
pub(crate) fn joined_split(t: &[u8]) -> Option<usize> {
    let at = t.iter().position(|&c| c == b' ')?;
    (!t[at + 1..].contains(&b' ') && !t.starts_with(b"#version")).then_some(at)
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

/// The JSON integer at `b[i]` (`0` or digits without a leading zero) when
/// it fits a `u32`, and the index past it.
#[inline(always)]
pub(super) fn uint(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let digits = b
        .get(i..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits == 0 || digits > 10 || (digits > 1 && b[i] == b'0') {
        return None;
    }
    let id = b[i..i + digits].iter().try_fold(0u32, |n, &c| {
        n.checked_mul(10)?.checked_add(u32::from(c - b'0'))
    })?;
    Some((id, i + digits))
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

/// The string starting at `b[i]` (a quote) and the index past it; `None`
/// unless it is a JSON string: closed, no control characters, escapes
/// among `\" \\ \/ \b \f \n \r \t \uXXXX`.
#[inline(always)]
pub(super) fn string(b: &[u8], i: usize) -> Option<(Part<'_>, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let mut j = i + 1;
    loop {
        // To the next quote, backslash or control character, eight bytes
        // at a time.
        while let Some(x) = word(b, j) {
            let m = eq(x, b'"') | eq(x, b'\\') | zero(x & 0xE0E0_E0E0_E0E0_E0E0);
            if m != 0 {
                j += (m.trailing_zeros() / 8) as usize;
                break;
            }
            j += 8;
        }
        match *b.get(j)? {
            b'"' => break,
            b'\\' => {
                escaped = true;
                j += match *b.get(j + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                    _ => return None,
                };
            }
            0..=0x1f => return None,
            _ => j += 1,
        }
    }
    let part = Part {
        quoted: &b[i..=j],
        escaped,
    };
    Some((part, j + 1))
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

/// The high bit of every byte.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `b[i..]`, first byte lowest, when there are eight.
#[inline(always)]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let bytes = b.get(i..i + 8)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// The high bit set in each byte of `x` that is zero (exactly: no carries
/// between bytes).
#[inline(always)]
fn zero(x: u64) -> u64 {
    !(((x & !HIGH) + !HIGH) | x) & HIGH
}

/// The high bit set in each byte of `x` equal to `c`.
#[inline(always)]
fn eq(x: u64, c: u8) -> u64 {
    zero(x ^ (u64::from(c) * 0x0101_0101_0101_0101))
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
