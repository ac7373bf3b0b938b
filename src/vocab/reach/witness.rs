//! The witness texts of a token (the rule is in the module docs of
//! `reach`): its own text, and for a piece that only occurs after other
//! text, that text behind a neighbour that cannot merge with it.

use std::cell::OnceCell;

use foldhash::{HashSet, HashSetExt};

use crate::vocab::Vocab;
use crate::vocab::kind::Text;
use crate::vocab::readable::{TokenStyle, byte_to_char};

/// Witness texts longer than this are not tried (the token's reach is
/// then not known): the longest entries of real vocabularies stand for
/// at most 1,024 bytes, and the cut-down tokenizer's work grows with the
/// square of a text's length.
pub(super) const MAX_WITNESS_BYTES: usize = 2048;

/// The neighbour put before a byte-level piece: a letter, so the
/// pre-tokenizer keeps it in the piece's word, of a script real
/// vocabularies hardly merge (U+A66E, CYRILLIC LETTER MULTIOCULAR O).
const BYTE_LEVEL_NEIGHBOUR: char = '\u{A66E}';

/// Chars containing a byte tried for a byte piece, at most.
const BYTE_CHARS: usize = 4;

/// Completions of a byte-level fragment looked at, at most.
const COMPLETIONS: usize = 64;

/// Chooses the witnesses of a vocabulary's ids, sharing what the choices
/// look up.
pub(super) struct Witnesses<'v> {
    vocab: &'v Vocab,
    /// SentencePiece: a char the vocabulary has no entry for.
    absent: OnceCell<Option<char>>,
    /// WordPiece: the first two chars of every entry that starts a word.
    starts: OnceCell<HashSet<(char, char)>>,
    /// Every entry of one char, as stored.
    chars: OnceCell<HashSet<char>>,
    /// Every entry of at most [`SHORT`] bytes, as stored.
    short: OnceCell<HashSet<&'v str>>,
}

/// The longest entries [`Witnesses::entries_across`] looks for: a
/// completed fragment of byte-level chars is at most 11 bytes of text.
const SHORT: usize = 32;

impl<'v> Witnesses<'v> {
    pub(super) fn new(vocab: &'v Vocab) -> Witnesses<'v> {
        Witnesses {
            vocab,
            absent: OnceCell::new(),
            starts: OnceCell::new(),
            chars: OnceCell::new(),
            short: OnceCell::new(),
        }
    }

    /// The witness texts of `id`: `None` when there is no entry or a
    /// witness is longer than [`MAX_WITNESS_BYTES`]; empty when no text
    /// can hold the token (a byte no UTF-8 text has, an empty entry).
    pub(super) fn of(&self, id: u32) -> Option<Vec<String>> {
        let e = self.vocab.entry(id)?;
        let texts = if e.added {
            vec![e.token.to_string()]
        } else {
            let Text {
                bytes,
                lone_byte,
                continuation,
            } = self.vocab.text(id)?;
            match (&self.vocab.style, String::from_utf8(bytes)) {
                (TokenStyle::Metaspace { .. }, text) if lone_byte => {
                    let bytes = text.map_or_else(|e| e.into_bytes(), String::into_bytes);
                    self.byte_chars(bytes[0])
                }
                (TokenStyle::ByteLevel, Ok(t)) if !lone_byte && !t.is_empty() => {
                    let after = format!("{BYTE_LEVEL_NEIGHBOUR}{t}");
                    vec![t, after]
                }
                (TokenStyle::ByteLevel, Err(e)) => self.completions(e.as_bytes()),
                (_, Ok(t)) if t.is_empty() => Vec::new(),
                (TokenStyle::Metaspace { .. }, Ok(t)) => self.sentence_piece(t),
                (TokenStyle::WordPiece { .. }, Ok(t)) if continuation => self.continuation(&t),
                (_, Ok(t)) => vec![t],
                (_, Err(_)) => Vec::new(),
            }
        };
        texts
            .iter()
            .all(|t| t.len() <= MAX_WITNESS_BYTES)
            .then_some(texts)
    }

    /// A SentencePiece piece (`▁` already a space): without its leading
    /// space (which the dummy prefix gives back), as it is, and behind a
    /// char the vocabulary lacks (which falls back to bytes or the unknown
    /// token, and merges with nothing).
    fn sentence_piece(&self, text: String) -> Vec<String> {
        let mut out = Vec::with_capacity(3);
        if let Some(rest) = text.strip_prefix(' ').filter(|r| !r.is_empty()) {
            out.push(rest.to_string());
        }
        let after = self.absent().map(|x| format!("{x}{text}"));
        out.push(text);
        out.extend(after);
        out
    }

    /// A char the vocabulary has no entry for, found once: from the
    /// private use area, which vocabularies hardly hold.
    pub(super) fn absent(&self) -> Option<char> {
        *self.absent.get_or_init(|| {
            ('\u{E000}'..='\u{F8FF}')
                .chain('\u{F0000}'..='\u{FFFFD}')
                .take(4096)
                .find(|c| !self.has_char(*c))
        })
    }

    /// Whether the vocabulary has an entry for `c` alone, as stored.
    fn has_char(&self, c: char) -> bool {
        let stored = match (&self.vocab.style, c) {
            (TokenStyle::Metaspace { replacement }, ' ') => *replacement,
            _ => c,
        };
        let chars = self.chars.get_or_init(|| {
            let one = |t: &str| {
                let mut it = t.chars();
                it.next().filter(|_| it.next().is_none())
            };
            (self.vocab.entries.iter())
                .filter(|e| e.token.len() <= 4)
                .filter_map(|e| one(e.token))
                .collect()
        });
        chars.contains(&stored)
    }

    /// A SentencePiece byte piece: chars holding the byte that the
    /// vocabulary lacks (so they fall back to bytes), printable ones
    /// first. None when every char holding it is an entry.
    fn byte_chars(&self, b: u8) -> Vec<String> {
        let absent: Vec<char> = chars_with(b)
            .filter(|&c| !self.has_char(c))
            .take(64)
            .collect();
        let (printable, control): (Vec<char>, Vec<char>) = absent
            .into_iter()
            .partition(|c| !c.is_control() && !c.is_whitespace());
        printable
            .into_iter()
            .chain(control)
            .take(BYTE_CHARS)
            .map(String::from)
            .collect()
    }

    /// A WordPiece continuation `##s`: `s` after a one-char word `c` that
    /// no entry continues with `s`'s first char, so the greedy match
    /// takes `c` alone and then the longest continuation, `##s` itself.
    fn continuation(&self, s: &str) -> Vec<String> {
        let Some(first) = s.chars().next() else {
            return Vec::new();
        };
        let starts = self.starts.get_or_init(|| {
            let mut set = HashSet::new();
            for (t, _) in self.vocab.model_entries() {
                let mut chars = t.chars();
                if let (Some(a), Some(b), false) = (chars.next(), chars.next(), self.continues(t)) {
                    set.insert((a, b));
                }
            }
            set
        });
        let words: Vec<char> = ('a'..='z')
            .chain('0'..='9')
            .filter(|&c| self.has_char(c))
            .collect();
        let clean = words.iter().filter(|&&c| !starts.contains(&(c, first)));
        let mut out: Vec<String> = clean.take(3).map(|c| format!("{c}{s}")).collect();
        if out.is_empty() {
            out = words.iter().take(3).map(|c| format!("{c}{s}")).collect();
        }
        out
    }

    /// Whether raw entry `t` is a WordPiece continuation.
    fn continues(&self, t: &str) -> bool {
        match &self.vocab.style {
            TokenStyle::WordPiece { prefix } => {
                t.len() > prefix.len() && t.starts_with(prefix.as_str())
            }
            _ => false,
        }
    }

    /// A byte-level fragment (a lone byte, or bytes cutting a char): the
    /// texts whose one or two cut chars it completes, those where no entry
    /// spans its edges first (then nothing can merge across them).
    fn completions(&self, bytes: &[u8]) -> Vec<String> {
        let Some(shape) = Fragment::of(bytes) else {
            return Vec::new();
        };
        let mut scored: Vec<(usize, String)> = Vec::new();
        for (before, after) in shape.completions().take(COMPLETIONS) {
            let full: Vec<u8> = [&before[..], bytes, &after[..]].concat();
            let Ok(text) = String::from_utf8(full) else {
                continue;
            };
            let spans =
                self.entries_across(text.as_bytes(), before.len(), before.len() + bytes.len());
            scored.push((spans, text));
            if scored.iter().filter(|(s, _)| *s == 0).count() == 2 {
                break;
            }
        }
        scored.sort_by_key(|(spans, _)| *spans);
        let clean = scored.iter().filter(|(s, _)| *s == 0).count();
        let n = if clean > 0 { clean } else { BYTE_CHARS };
        scored.into_iter().take(n).map(|(_, t)| t).collect()
    }

    /// How many byte-level entries are substrings of `text` crossing
    /// byte `from` or byte `to` (the fragment's edges).
    fn entries_across(&self, text: &[u8], from: usize, to: usize) -> usize {
        let short = self.short.get_or_init(|| {
            (self.vocab.entries.iter())
                .filter(|e| e.token.len() <= SHORT)
                .map(|e| e.token)
                .collect()
        });
        let mut n = 0;
        for i in 0..text.len() {
            for j in i + 2..=text.len() {
                let crosses = |edge: usize| i < edge && edge < j;
                if crosses(from) || crosses(to) {
                    let raw: String = text[i..j].iter().map(|&b| byte_to_char(b)).collect();
                    n += usize::from(short.contains(raw.as_str()));
                }
            }
        }
        n
    }
}

/// Chars whose UTF-8 holds byte `b`: ASCII itself; a lead byte's chars;
/// a continuation byte's two-byte chars, then three-byte ones ending in
/// it. None for bytes no UTF-8 has (`C0`, `C1`, `F5`..`FF`).
fn chars_with(b: u8) -> Box<dyn Iterator<Item = char>> {
    let low = u32::from(b & 0x3F);
    let from = |cps: Box<dyn Iterator<Item = u32>>| -> Box<dyn Iterator<Item = char>> {
        Box::new(cps.filter_map(char::from_u32))
    };
    match b {
        0x00..=0x7F => Box::new(std::iter::once(char::from(b))),
        0x80..=0xBF => from(Box::new(
            (0x02..0x20).chain(0x20..0x400).map(move |hi| hi << 6 | low),
        )),
        0xC2..=0xDF => from(Box::new((0..64).map(move |x| u32::from(b & 0x1F) << 6 | x))),
        0xE0..=0xEF => from(Box::new(
            (0..4096)
                .rev()
                .map(move |x| u32::from(b & 0x0F) << 12 | x)
                .filter(|&cp| cp >= 0x800),
        )),
        0xF0..=0xF4 => from(Box::new(
            (0..1 << 18)
                .rev()
                .map(move |x| u32::from(b & 0x07) << 18 | x)
                .filter(|&cp| (0x10000..=0x10FFFF).contains(&cp)),
        )),
        _ => Box::new(std::iter::empty()),
    }
}

/// Where a byte-level fragment cuts chars: continuation bytes it starts
/// with (of a char begun before it), and continuation bytes its last char
/// still needs.
struct Fragment {
    /// Continuation bytes at its start.
    leading: usize,
    /// Continuation bytes missing at its end.
    missing: usize,
}

impl Fragment {
    /// The cuts of `b`, or `None` when no UTF-8 text holds it.
    fn of(b: &[u8]) -> Option<Fragment> {
        let is_cont = |x: u8| x & 0xC0 == 0x80;
        let leading = b.iter().take_while(|&&x| is_cont(x)).count();
        if leading > 3 {
            return None;
        }
        let mut at = leading;
        while at < b.len() {
            let len = match b[at] {
                0x00..=0x7F => 1,
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF4 => 4,
                _ => return None,
            };
            let have = b[at + 1..]
                .iter()
                .take(len - 1)
                .take_while(|&&x| is_cont(x))
                .count();
            if at + 1 + have < b.len() && have < len - 1 {
                return None;
            }
            if at + len > b.len() {
                return Some(Fragment {
                    leading,
                    missing: at + len - b.len(),
                });
            }
            at += len;
        }
        Some(Fragment {
            leading,
            missing: 0,
        })
    }

    /// The bytes to put before and after the fragment, high continuation
    /// bytes first (the rarer chars of a block): a lead byte and as many
    /// continuation bytes as the char begun before needs, and the
    /// continuation bytes the last char needs. Some are not UTF-8 (a lead
    /// byte whose second byte is limited, a surrogate); the caller checks.
    fn completions(&self) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
        let befores: Vec<Vec<u8>> = match self.leading {
            0 => vec![Vec::new()],
            n => (n + 1..=4)
                .flat_map(|len| {
                    let leads: Vec<u8> = match len {
                        2 => (0xC2..=0xDF).rev().collect(),
                        3 => (0xE0..=0xEF).rev().collect(),
                        _ => (0xF0..=0xF4).rev().collect(),
                    };
                    let middle = len - 1 - n;
                    leads.into_iter().flat_map(move |lead| {
                        continuations(middle).map(move |mut c| {
                            c.insert(0, lead);
                            c
                        })
                    })
                })
                .take(COMPLETIONS)
                .collect(),
        };
        let afters: Vec<Vec<u8>> = continuations(self.missing).take(COMPLETIONS).collect();
        befores
            .into_iter()
            .flat_map(move |b| afters.clone().into_iter().map(move |a| (b.clone(), a)))
    }
}

/// Every run of `n` continuation bytes, highest first.
fn continuations(n: usize) -> impl Iterator<Item = Vec<u8>> {
    let total = 64usize.pow(n as u32);
    (0..total).map(move |mut k| {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(0xBF - (k % 64) as u8);
            k /= 64;
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_holding_a_byte() {
        let has = |b: u8, c: char| c.to_string().as_bytes().contains(&b);
        for b in [0x41, 0x80, 0xA9, 0xBF, 0xC3, 0xD0, 0xE6, 0xED, 0xF0, 0xF4] {
            let chars: Vec<char> = chars_with(b).take(70).collect();
            assert!(!chars.is_empty(), "{b:#x}");
            assert!(chars.iter().all(|&c| has(b, c)), "{b:#x}: {chars:?}");
        }
        for b in [0xC0, 0xC1, 0xF5, 0xFF] {
            assert_eq!(chars_with(b).count(), 0, "{b:#x}");
        }
    }

    #[test]
    fn fragments_and_what_completes_them() {
        let shape = |b: &[u8]| Fragment::of(b).map(|f| (f.leading, f.missing));
        assert_eq!(shape(b"\xe6"), Some((0, 2)));
        assert_eq!(shape(b"\xb8\x97"), Some((2, 0)));
        assert_eq!(shape(b"\x97a\xe5\x8c"), Some((1, 1)));
        assert_eq!(shape(b"\xf8"), None);
        assert_eq!(shape(b"\x80\x80\x80\x80"), None);
        assert_eq!(shape(b"\xe5a"), None);
        for b in [&b"\xe6"[..], b"\xb8\x97", b"\x97a\xe5\x8c", b"\xa9"] {
            let f = Fragment::of(b).unwrap();
            let valid = f
                .completions()
                .take(COMPLETIONS)
                .filter(|(x, y)| std::str::from_utf8(&[&x[..], b, &y[..]].concat()).is_ok())
                .count();
            assert!(valid > 0, "{b:?}");
        }
    }
}
