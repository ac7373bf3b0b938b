//! A forward cursor over JSON text that finds the next non-whitespace byte,
//! the next quote or bracket and the end of a string from bitmasks of
//! 64-byte blocks (whitespace, quotes, backslashes, control characters,
//! brackets), so that the runs of
//! indentation and the short strings of a pretty-printed merges array cost
//! a bit scan each instead of a loop of unpredictable length.
//!
//! The masks are made with SSE2 on x86-64 (part of its baseline), with a
//! plain loop elsewhere.

use super::strings::{Part, string};

/// The length of a block.
const BLOCK: usize = 64;

/// The byte classes of one block: bit `k` for the byte at `start + k`.
#[derive(Default)]
struct Masks {
    /// ` `, `\n`, `\r`, `\t`.
    ws: u64,
    /// `"`.
    quote: u64,
    /// `\` and the control characters (below 0x20), never raw in a string.
    special: u64,
    /// `{`, `}`, `[`, `]`.
    bracket: u64,
}

/// See the module docs. Positions only move forward.
pub(super) struct Cursor<'a> {
    b: &'a [u8],
    /// Where the current block starts (its masks past the end of `b` read
    /// as whitespace).
    start: usize,
    masks: Masks,
}

impl<'a> Cursor<'a> {
    /// A cursor over `b`, at no block yet.
    pub fn new(b: &'a [u8]) -> Cursor<'a> {
        Cursor {
            b,
            start: usize::MAX - BLOCK,
            masks: Masks::default(),
        }
    }

    /// Makes `i` inside the current block, loading the block at `i` when
    /// it is not.
    #[inline(always)]
    fn at(&mut self, i: usize) -> u32 {
        if i < self.start || i >= self.start + BLOCK {
            self.start = i;
            self.masks = match self.b.get(i..i + BLOCK) {
                Some(chunk) => classify(chunk.try_into().expect("a block")),
                None => {
                    let mut padded = [b' '; BLOCK];
                    let tail = &self.b[i.min(self.b.len())..];
                    padded[..tail.len()].copy_from_slice(tail);
                    classify(&padded)
                }
            };
        }
        (i - self.start) as u32
    }

    /// The index of the first byte at or after `i` that is not JSON
    /// whitespace (`b.len()` when none is).
    #[inline(always)]
    pub fn non_ws(&mut self, i: usize) -> usize {
        self.first(i, |m| !m.ws)
    }

    /// The index of the first quote or bracket at or after `i` (`b.len()`
    /// when there is none).
    #[inline(always)]
    pub fn quote_or_bracket(&mut self, i: usize) -> usize {
        self.first(i, |m| m.quote | m.bracket)
    }

    /// The index of the first byte at or after `i` whose bit `mask` sets
    /// (`b.len()` when there is none).
    #[inline(always)]
    fn first(&mut self, mut i: usize, mask: impl Fn(&Masks) -> u64) -> usize {
        while i < self.b.len() {
            let k = self.at(i);
            let found = mask(&self.masks) >> k;
            if found != 0 {
                return (i + found.trailing_zeros() as usize).min(self.b.len());
            }
            i = self.start + BLOCK;
        }
        self.b.len()
    }

    /// The string at `b[i]` (a quote) and the index past it, as
    /// [`string`] reads it (which reads strings with escapes).
    #[inline(always)]
    pub fn string(&mut self, i: usize) -> Option<(Part<'a>, usize)> {
        if self.b.get(i) != Some(&b'"') {
            return None;
        }
        let mut j = i + 1;
        loop {
            if j >= self.b.len() {
                return None;
            }
            let k = self.at(j);
            let quote = self.masks.quote >> k;
            let special = self.masks.special >> k;
            // Anything special before the closing quote (or in the rest of
            // the block when there is none): the exact reader decides.
            let first = quote & quote.wrapping_neg();
            if special & (first | first.wrapping_sub(1)) != 0 {
                return string(self.b, i);
            }
            if quote != 0 {
                let end = j + quote.trailing_zeros() as usize;
                let part = Part {
                    quoted: self.b.get(i..end + 1)?,
                    escaped: false,
                };
                return Some((part, end + 1));
            }
            j = self.start + BLOCK;
        }
    }
}

/// The masks of `chunk`.
#[cfg(target_arch = "x86_64")]
fn classify(chunk: &[u8; BLOCK]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let mut m = Masks::default();
    for k in 0..BLOCK / 16 {
        // SAFETY: SSE2 is part of the x86-64 baseline; the load reads
        // 16 bytes inside `chunk` (unaligned loads are allowed).
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast::<__m128i>());
            let eq = |c: u8| {
                let bits = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)));
                u64::from(bits as u16)
            };
            // Unsigned `v <= 0x1f`: the max with 0x1f leaves it 0x1f.
            let low = _mm_set1_epi8(0x1f);
            let ctrl = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, low), low));
            let shift = 16 * k;
            m.ws |= (eq(b' ') | eq(b'\n') | eq(b'\r') | eq(b'\t')) << shift;
            m.quote |= eq(b'"') << shift;
            m.special |= (eq(b'\\') | u64::from(ctrl as u16)) << shift;
            m.bracket |= (eq(b'{') | eq(b'}') | eq(b'[') | eq(b']')) << shift;
        }
    }
    m
}

/// The masks of `chunk`.
#[cfg(not(target_arch = "x86_64"))]
fn classify(chunk: &[u8; BLOCK]) -> Masks {
    let mut m = Masks::default();
    for (k, &c) in chunk.iter().enumerate() {
        m.ws |= u64::from(matches!(c, b' ' | b'\n' | b'\r' | b'\t')) << k;
        m.quote |= u64::from(c == b'"') << k;
        m.special |= u64::from(c == b'\\' || c < 0x20) << k;
        m.bracket |= u64::from(matches!(c, b'{' | b'}' | b'[' | b']')) << k;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_strings_and_whitespace_across_blocks() {
        // Strings and runs of whitespace crossing block boundaries, escapes
        // and control characters: as the exact reader reads them.
        let long = "x".repeat(100);
        let text = format!(
            "{}\"{long}\" \t\r\n{}\"a\\\"b\" \"c\nd\" \"é\"{}\"open",
            " ".repeat(60),
            " ".repeat(70),
            " ".repeat(3)
        );
        let b = text.as_bytes();
        let mut c = Cursor::new(b);
        let mut i = c.non_ws(0);
        assert_eq!(i, 60);
        let mut seen = Vec::new();
        while i < b.len() {
            let got = c.string(i);
            assert_eq!(
                got.map(|(p, end)| (p.quoted, end)),
                string(b, i).map(|(p, end)| (p.quoted, end)),
                "at {i}"
            );
            let Some((part, end)) = got else { break };
            seen.push(String::from_utf8_lossy(part.quoted).into_owned());
            i = c.non_ws(end);
        }
        assert_eq!(seen, [format!("\"{long}\""), "\"a\\\"b\"".to_string()]);
        // Both stop at the string with a raw newline.
        assert_eq!(&b[i..i + 2], b"\"c");
        assert_eq!(Cursor::new(b"  ").non_ws(0), 2);
    }

    #[test]
    fn masks_of_every_byte() {
        for j in 0..256 / BLOCK {
            let chunk: [u8; BLOCK] = std::array::from_fn(|k| (j * BLOCK + k) as u8);
            let m = classify(&chunk);
            for (k, &c) in chunk.iter().enumerate() {
                let bit = |mask: u64| mask >> k & 1 == 1;
                assert_eq!(bit(m.ws), b" \n\r\t".contains(&c), "{c}");
                assert_eq!(bit(m.quote), c == b'"', "{c}");
                assert_eq!(bit(m.special), c == b'\\' || c < 0x20, "{c}");
                assert_eq!(bit(m.bracket), b"{}[]".contains(&c), "{c}");
            }
        }
    }
}
