//! The merges a vocabulary without a merge list implies: every cut of a
//! piece into two pieces. SentencePiece BPE models (`tokenizer.model`,
//! GGUF `llama` vocabularies) and Mistral's `tekken.json` are turned into
//! BPE tokenizers this way, as Hugging Face's converters do.
//!
//! Each piece's prefix hashes are computed once, so both halves of every
//! cut are looked up in constant time, and only the cuts found are
//! compared byte by byte: the work is the vocabulary's bytes plus the
//! merges found. Hashing each half anew at each cut would make one long
//! piece quadratic (a 1 MB piece, a trillion steps). The merges found are
//! bounded ([`MAX_MERGES`], [`MAX_MERGE_BYTES`]): pieces `a`, `aa`, …
//! 3,000 `a`s imply 4.5 million merges of 4.5 GB, which would exhaust
//! memory before a tokenizer is built.

use std::hash::BuildHasher;

use foldhash::{HashMap, HashMapExt};

/// The most merges derived. The largest real vocabularies imply about
/// half a million (Gemma 3's 262,144 pieces: 514,847).
pub(crate) const MAX_MERGES: usize = 1 << 24;

/// The most bytes of pieces cut into merges, each merge counting its
/// piece's length. Real vocabularies stay under 5 MB (Gemma 3's:
/// 4.6 MB).
pub(crate) const MAX_MERGE_BYTES: usize = 1 << 28;

/// One cut: the piece cut and its two halves, as indices into the pieces
/// given to [`cuts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The piece cut.
    pub piece: u32,
    /// The piece that is its first half.
    pub left: u32,
    /// The piece that is its second half.
    pub right: u32,
}

/// The Mersenne prime 2^61 - 1, the modulus of the prefix hashes.
const P: u64 = (1 << 61) - 1;

fn mul(a: u64, b: u64) -> u64 {
    let x = u128::from(a) * u128::from(b);
    let r = (x as u64 & P) + (x >> 61) as u64;
    if r >= P { r - P } else { r }
}

fn add(a: u64, b: u64) -> u64 {
    let r = a + b;
    if r >= P { r - P } else { r }
}

/// Polynomial hashes of byte strings, with a base drawn per run so that
/// no file can be written to make them collide.
struct Hasher {
    base: u64,
    /// `base^k` for k up to the longest piece.
    powers: Vec<u64>,
}

impl Hasher {
    fn new(longest: usize) -> Hasher {
        let seed = foldhash::fast::RandomState::default().hash_one(0x5eed_u64);
        let base = (seed % (P - (1 << 20))) + (1 << 20);
        let mut powers = Vec::with_capacity(longest + 1);
        let mut x = 1;
        for _ in 0..=longest {
            powers.push(x);
            x = mul(x, base);
        }
        Hasher { base, powers }
    }

    /// The hashes of every prefix of `s` into `out` (`out[k]` of the first
    /// `k` bytes).
    fn prefixes(&self, s: &[u8], out: &mut Vec<u64>) {
        out.clear();
        out.push(0);
        let mut h = 0;
        for &b in s {
            h = add(mul(h, self.base), u64::from(b) + 1);
            out.push(h);
        }
    }

    /// The hash of `s[from..to]` from the prefix hashes of `s`.
    fn range(&self, prefixes: &[u64], from: usize, to: usize) -> u64 {
        let shifted = mul(prefixes[from], self.powers[to - from]);
        add(prefixes[to], P - shifted)
    }
}

/// Why no merges were derived: one of the bounds was passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooMany(String);

impl std::fmt::Display for TooMany {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every cut of the pieces `split` (indices into `pieces`) into two of
/// `pieces`, by piece in the order given, then by where it cuts, first
/// cut first. With `on_chars` a piece is cut between UTF-8 characters
/// only. A string given twice in `pieces` is found at its first index.
/// An error when the cuts pass [`MAX_MERGES`] or [`MAX_MERGE_BYTES`].
pub(crate) fn cuts(
    pieces: &[&[u8]],
    split: impl IntoIterator<Item = u32>,
    on_chars: bool,
) -> Result<Vec<Cut>, TooMany> {
    let longest = pieces.iter().map(|p| p.len()).max().unwrap_or(0);
    let hasher = Hasher::new(longest);
    // (hash, length) → the first piece with them; `next` chains the
    // other pieces with the same key, so a collision is never a miss.
    let mut first: HashMap<(u64, usize), u32> = HashMap::with_capacity(pieces.len());
    let mut next = vec![u32::MAX; pieces.len()];
    let mut prefixes = Vec::new();
    for (i, p) in pieces.iter().enumerate().rev() {
        hasher.prefixes(p, &mut prefixes);
        let key = (prefixes[p.len()], p.len());
        if let Some(old) = first.insert(key, i as u32) {
            next[i] = old;
        }
    }
    let find = |hash: u64, bytes: &[u8]| {
        let mut at = *first.get(&(hash, bytes.len()))?;
        while pieces[at as usize] != bytes {
            at = *next.get(at as usize).filter(|&&n| n != u32::MAX)?;
        }
        Some(at)
    };
    let (mut out, mut bytes) = (Vec::new(), 0usize);
    for piece in split {
        let p = pieces[piece as usize];
        hasher.prefixes(p, &mut prefixes);
        for at in 1..p.len() {
            if on_chars && p[at] & 0xC0 == 0x80 {
                continue;
            }
            let l = hasher.range(&prefixes, 0, at);
            let Some(left) = find(l, &p[..at]) else {
                continue;
            };
            let r = hasher.range(&prefixes, at, p.len());
            let Some(right) = find(r, &p[at..]) else {
                continue;
            };
            out.push(Cut { piece, left, right });
            bytes += p.len();
            if out.len() > MAX_MERGES {
                return Err(TooMany(format!(
                    "its pieces split into more than {MAX_MERGES} merges (real vocabularies make about 500,000 at most)"
                )));
            }
            if bytes > MAX_MERGE_BYTES {
                return Err(TooMany(format!(
                    "its pieces split into merges of more than {MAX_MERGE_BYTES} bytes (real vocabularies make under 5 MB)"
                )));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cut, found by trying each one.
    fn slow(pieces: &[&[u8]], on_chars: bool) -> Vec<Cut> {
        let index = |s: &[u8]| pieces.iter().position(|p| *p == s).map(|i| i as u32);
        let mut out = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            for at in 1..p.len() {
                if on_chars && p[at] & 0xC0 == 0x80 {
                    continue;
                }
                if let (Some(left), Some(right)) = (index(&p[..at]), index(&p[at..])) {
                    out.push(Cut {
                        piece: i as u32,
                        left,
                        right,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn the_cuts_of_trying_each_one() {
        let words = [
            "a", "b", "ab", "ba", "aba", "abab", "é", "aé", "éa", "▁", "▁a", "▁ab", "a", "", "bé",
        ];
        let pieces: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        // Bytes too: `é` is two, and with byte cuts its halves are not pieces.
        let mut bytes = pieces.clone();
        bytes.extend([&b"\xc3"[..], b"\xa9", b"b\xc3"]);
        for (set, on_chars) in [(&pieces, true), (&bytes, false), (&bytes, true)] {
            let all = 0..set.len() as u32;
            assert_eq!(cuts(set, all, on_chars).unwrap(), slow(set, on_chars));
        }
        // `a` twice: found at its first index.
        let got = cuts(&pieces, [2], true).unwrap();
        assert_eq!(
            got,
            [Cut {
                piece: 2,
                left: 0,
                right: 1
            }]
        );
    }

    #[test]
    fn a_long_piece_is_linear_and_many_are_bounded() {
        // One piece of a million bytes: no quadratic hashing.
        let long = vec![b'a'; 1 << 20];
        let pieces: Vec<&[u8]> = vec![b"a", &long];
        let start = std::time::Instant::now();
        assert_eq!(cuts(&pieces, [0, 1], false).unwrap(), []);
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
        // `a` … 3,000 `a`s: millions of merges of gigabytes, refused.
        let runs: Vec<Vec<u8>> = (1..=3000).map(|n| vec![b'a'; n]).collect();
        let pieces: Vec<&[u8]> = runs.iter().map(Vec::as_slice).collect();
        let err = cuts(&pieces, 0..3000, false).unwrap_err().to_string();
        assert!(err.contains("merges of more than 268435456 bytes"), "{err}");
    }
}
