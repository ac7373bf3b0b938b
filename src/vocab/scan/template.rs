//! The layout a merges array or a vocab object repeats: in a pretty-printed
//! file every merge is laid out the same (`[\n        "a",\n        "b"\n
//! ],\n      `), and every vocab entry (`"a": 64,\n      `), so once one
//! was read in full, the next ones are read by comparing the bytes between
//! their strings (and ids) with the same bytes of that one, a word
//! comparison each, and finding each short string's closing quote in one
//! 16-byte word. Anything else (a longer string, an escape, another
//! layout, the end) is left to the exact readers of the scan (`super`), which
//! learn the layout again.

use std::ops::Range;

use super::strings::{Merge, Part, uint};

/// Up to 16 bytes, compared in one word.
#[derive(Clone, Copy)]
struct Gap {
    bytes: u128,
    len: usize,
}

impl Gap {
    fn new(s: &[u8]) -> Option<Gap> {
        let mut padded = [0; 16];
        padded.get_mut(..s.len())?.copy_from_slice(s);
        Some(Gap {
            bytes: u128::from_le_bytes(padded),
            len: s.len(),
        })
    }

    /// The index past the gap when `b[i..]` starts with it (and 16 bytes
    /// are left).
    #[inline(always)]
    fn at(self, b: &[u8], i: usize) -> Option<usize> {
        let x = word(b, i)?;
        let mask = u128::MAX
            .checked_shr(8 * (16 - self.len) as u32)
            .unwrap_or(0);
        ((x ^ self.bytes) & mask == 0).then_some(i + self.len)
    }
}

/// The gaps of a merge read in full: before its first string (`[` and
/// whitespace; nothing for a joined merge), between its strings, and after
/// its last one up to the next merge (`]`, `,`, whitespace).
#[derive(Clone, Copy)]
pub(super) struct Template {
    open: Gap,
    mid: Gap,
    close: Gap,
    pairs: bool,
}

impl Template {
    /// The template of the merge at `b[open..next]` whose strings are
    /// `parts` (two for a pair, one when joined) and that the exact reader
    /// checked; `None` when a gap is longer than 16 bytes.
    pub fn learn(b: &[u8], open: usize, parts: &[Part], next: usize) -> Option<Template> {
        let range = |p: &Part| p.range_in(b);
        let (first, last) = (range(parts.first()?), range(parts.last()?));
        let mid = match parts {
            [a, z] => &b[range(a).end..range(z).start],
            _ => &[],
        };
        Some(Template {
            open: Gap::new(&b[open..first.start])?,
            mid: Gap::new(mid)?,
            close: Gap::new(&b[last.end..next])?,
            pairs: parts.len() == 2,
        })
    }

    /// The merge at `b[i]` and where the next one starts, when it is laid
    /// out as the template and its strings are short and plain.
    #[inline(always)]
    pub fn read<'a>(&self, b: &'a [u8], i: usize) -> Option<(Merge<'a>, usize)> {
        let (first, end) = short_string(b, self.open.at(b, i)?)?;
        if !self.pairs {
            return Some((Merge::Joined(first), self.close.at(b, end)?));
        }
        let (second, end) = short_string(b, self.mid.at(b, end)?)?;
        Some((Merge::Pair(first, second), self.close.at(b, end)?))
    }
}

/// The gaps of a vocab entry read in full: between its token and its id
/// (`:` and whitespace), and after its id up to the next entry (`,`,
/// whitespace).
#[derive(Clone, Copy)]
pub(super) struct EntryTemplate {
    colon: Gap,
    close: Gap,
}

impl EntryTemplate {
    /// The template of the vocab entry whose token is `key`, whose id is
    /// written at `b[digits]` and after which the next entry starts at
    /// `b[next]`, as the exact reader checked it.
    pub fn learn(b: &[u8], key: Part, digits: Range<usize>, next: usize) -> Option<EntryTemplate> {
        Some(EntryTemplate {
            colon: Gap::new(&b[key.range_in(b).end..digits.start])?,
            close: Gap::new(&b[digits.end..next])?,
        })
    }

    /// The vocab entry at `b[i]` (token and id) and where the next one
    /// starts, when it is laid out as the template and its token is short
    /// and plain.
    #[inline(always)]
    pub fn read<'a>(&self, b: &'a [u8], i: usize) -> Option<(Part<'a>, u32, usize)> {
        let (key, end) = short_string(b, i)?;
        let (id, end) = uint(b, self.colon.at(b, end)?)?;
        Some((key, id, self.close.at(b, end)?))
    }
}

/// The 16 bytes at `b[i..]`, first byte lowest.
#[inline(always)]
fn word(b: &[u8], i: usize) -> Option<u128> {
    Some(u128::from_le_bytes(b.get(i..i + 16)?.try_into().ok()?))
}

/// The string at `b[i]` and the index past it, when it closes within the
/// next 16 bytes and has no escape or control character before.
#[inline(always)]
fn short_string(b: &[u8], i: usize) -> Option<(Part<'_>, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let chunk: &[u8; 16] = b.get(i + 1..i + 17)?.try_into().ok()?;
    let stop = stops(chunk);
    if stop == 0 {
        return None;
    }
    let close = i + 1 + stop.trailing_zeros() as usize;
    if b[close] != b'"' {
        return None;
    }
    let part = Part {
        quoted: &b[i..=close],
        escaped: false,
    };
    Some((part, close + 1))
}

/// A bit for each quote, backslash or control character of `chunk`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stops(chunk: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline; the load reads the 16
    // bytes of `chunk` (unaligned loads are allowed).
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned `v <= 0x1f`: the max with 0x1f leaves it 0x1f.
        let low = _mm_set1_epi8(0x1f);
        let ctrl = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        let any = _mm_or_si128(_mm_or_si128(quote, backslash), ctrl);
        _mm_movemask_epi8(any) as u32
    }
}

/// A bit for each quote, backslash or control character of `chunk`.
#[cfg(not(target_arch = "x86_64"))]
fn stops(chunk: &[u8; 16]) -> u32 {
    chunk.iter().enumerate().fold(0, |m, (k, &c)| {
        m | u32::from(c == b'"' || c == b'\\' || c < 0x20) << k
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_plain_strings_only() {
        let pad = " ".repeat(20);
        let read = |s: &str| {
            let text = format!("{s}{pad}");
            short_string(text.as_bytes(), 0).map(|(p, end)| (p.quoted.to_vec(), end))
        };
        assert_eq!(read("\"ab\" x"), Some((b"\"ab\"".to_vec(), 4)));
        assert_eq!(read("\"\""), Some((b"\"\"".to_vec(), 2)));
        let fifteen = format!("\"{}\"", "é".repeat(7) + "x");
        assert_eq!(read(&fifteen).map(|r| r.1), Some(17));
        for other in [
            "\"a\\\"b\"",
            "\"a\nb\"",
            "a\"",
            &format!("\"{}\"", "x".repeat(16)),
        ] {
            assert_eq!(read(other), None, "{other}");
        }
    }

    #[test]
    fn stops_of_every_byte() {
        for j in 0..16 {
            let chunk: [u8; 16] = std::array::from_fn(|k| (j * 16 + k) as u8);
            let m = stops(&chunk);
            for (k, &c) in chunk.iter().enumerate() {
                let want = c == b'"' || c == b'\\' || c < 0x20;
                assert_eq!(m >> k & 1 == 1, want, "{c}");
            }
        }
    }

    #[test]
    fn gaps_match_exactly() {
        let gap = Gap::new(b",\n  ").unwrap();
        let b = b",\n  \"a\"                 ";
        assert_eq!(gap.at(b, 0), Some(4));
        assert_eq!(gap.at(b",\n \"a\"                  ", 0), None);
        assert_eq!(gap.at(b",\n  ", 0), None, "fewer than 16 bytes left");
        assert!(Gap::new(&[b' '; 17]).is_none());
        let empty = Gap::new(b"").unwrap();
        assert_eq!(empty.at(b, 3), Some(3));
    }
}
