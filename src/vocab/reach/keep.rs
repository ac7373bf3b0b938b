//! Which entries a cut-down tokenizer keeps: those that are substrings of
//! the texts it will encode. Encoding only ever makes tokens that are
//! substrings of the text's normalised, pre-tokenized words, so keeping
//! more is harmless and keeping fewer is not: the set is of hashes of
//! substrings ([`Substrings`]), where a collision keeps an entry more and
//! no substring is ever missed. A string's hash is built byte by byte, so
//! all substrings starting at one place are hashed in one walk, without
//! allocating any of them; [`Sketch`] rules most entries out without
//! hashing them at all.

use foldhash::{HashSet, HashSetExt};

/// 64-bit FNV-1a, extended one byte at a time.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
}

/// The hash of `s` as [`Substrings`] takes it.
pub(super) fn hash(s: &[u8]) -> u64 {
    s.iter().fold(FNV_START, |h, &b| step(h, b))
}

/// The hash of `a` followed by `b`, without joining them.
pub(super) fn hash_joined(a: &[u8], b: &[u8]) -> u64 {
    b.iter().fold(hash(a), |h, &x| step(h, x))
}

/// The hashes of every substring, on char boundaries, of the texts added,
/// up to a length.
pub(super) struct Substrings {
    hashes: HashSet<u64>,
    /// Substrings longer than this many bytes are not added: no entry is
    /// longer.
    longest: usize,
}

impl Substrings {
    /// An empty set for entries of at most `longest` bytes.
    pub(super) fn new(longest: usize) -> Substrings {
        Substrings {
            hashes: HashSet::new(),
            longest,
        }
    }

    /// Adds the substrings of `s`: for `n` bytes, `n × min(n, longest)`
    /// steps.
    pub(super) fn add(&mut self, s: &str) {
        let b = s.as_bytes();
        for (start, _) in s.char_indices() {
            let mut h = FNV_START;
            let end = b.len().min(start + self.longest);
            for at in start..end {
                h = step(h, b[at]);
                if b.get(at + 1).is_none_or(|&next| next & 0xC0 != 0x80) {
                    self.hashes.insert(h);
                }
            }
        }
    }

    /// Whether `s` may be a substring of a text added (a hash collision
    /// says yes too).
    pub(super) fn may_hold(&self, s: &[u8]) -> bool {
        s.len() <= self.longest && self.hashes.contains(&hash(s))
    }

    /// Whether a string of hash `h` may be a substring of a text added.
    pub(super) fn may_hold_hash(&self, h: u64) -> bool {
        self.hashes.contains(&h)
    }
}

/// A bit for each (length, first byte, last byte) of a set of strings: a
/// string whose bit is clear is not in the set, known without hashing it.
pub(super) struct Sketch(Vec<u64>);

impl Sketch {
    fn key(s: &[u8]) -> usize {
        let (first, last) = (s.first().copied(), s.last().copied());
        (s.len() & 15) << 12
            | usize::from(first.unwrap_or(0) & 63) << 6
            | usize::from(last.unwrap_or(0) & 63)
    }

    /// The sketch of `set`.
    pub(super) fn new<'a>(set: impl Iterator<Item = &'a [u8]>) -> Sketch {
        let mut bits = vec![0u64; 1 << 10];
        for s in set {
            let k = Sketch::key(s);
            bits[k >> 6] |= 1 << (k & 63);
        }
        Sketch(bits)
    }

    /// Whether `s` may be in the set.
    pub(super) fn may_hold(&self, s: &[u8]) -> bool {
        let k = Sketch::key(s);
        self.0[k >> 6] >> (k & 63) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_on_char_boundaries_up_to_the_longest() {
        let mut set = Substrings::new(3);
        set.add("aéb");
        for s in ["a", "é", "b", "aé", "éb"] {
            assert!(set.may_hold(s.as_bytes()), "{s}");
        }
        // `é` cut in two, longer than 3 bytes, not a substring.
        for s in [&b"a\xc3"[..], b"\xa9b", "aéb".as_bytes(), b"ba"] {
            assert!(!set.may_hold(s), "{s:?}");
        }
        let mut four = Substrings::new(4);
        four.add("aéb");
        assert!(four.may_hold("aéb".as_bytes()));
        assert!(four.may_hold_hash(hash_joined(b"a", "éb".as_bytes())));
    }

    #[test]
    fn the_sketch_never_misses() {
        let set: [&[u8]; 3] = [b"king", b"a", b""];
        let sketch = Sketch::new(set.iter().copied());
        assert!(set.iter().all(|s| sketch.may_hold(s)));
        assert!(!sketch.may_hold(b"queen"));
    }
}
