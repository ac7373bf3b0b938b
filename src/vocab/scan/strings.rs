//! The pieces of JSON text the scan reads exactly: a string as written
//! ([`Part`]: quotes and escapes kept, decoded on demand), a merge of one
//! or two of them ([`Merge`]), and a plain integer id; with the word-wide
//! byte tests that find a string's end eight bytes at a time.

use std::borrow::Cow;
use std::ops::Range;

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
