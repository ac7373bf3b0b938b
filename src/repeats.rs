//! A filter for finding repeated values among many: which 64-bit hashes
//! may have been seen more than once. `check` uses it for duplicate token
//! strings and duplicate rows, where repeats are few and a map of every
//! value would not stay in cache (it runs beside the streaming pass).

/// The `items` whose hash another item may share: every item that does,
/// and about one in sixteen of the others (see [`Repeats`]), in the order
/// given. The caller tells them apart exactly, by sorting these few.
pub(crate) fn maybe_repeated<T>(
    items: impl ExactSizeIterator<Item = T> + Clone,
    hash: impl Fn(&T) -> u64,
) -> Vec<T> {
    let mut repeats = Repeats::new(items.len());
    for item in items.clone() {
        repeats.mark(hash(&item));
    }
    items.filter(|item| repeats.hit_again(hash(item))).collect()
}

/// Places in a table of at least 16 bits per value, marked when a hash
/// lands on them once and again when one lands there a second time.
/// Every repeated hash [`Repeats::hit_again`]; so do about one in sixteen
/// of the others, which the caller tells apart exactly (a sort of the few
/// that pass). Hashes that all land in one place (crafted input) only make
/// every value pass.
struct Repeats {
    /// Per word of places: the places marked once, and again.
    words: Vec<[u64; 2]>,
    shift: u32,
}

impl Repeats {
    /// An empty filter for `n` values.
    fn new(n: usize) -> Self {
        let bits = (n.max(64) * 16).next_power_of_two();
        // Zeroed by writing, not as fresh zero pages: the marks read each
        // word before writing it, and a page first read as the shared zero
        // page faults a second time when written.
        let mut words = Vec::with_capacity(bits / 64);
        words.resize(bits / 64, [0; 2]);
        Repeats {
            words,
            shift: 64 - bits.trailing_zeros(),
        }
    }

    /// The word and bit of `hash`'s place (mixed first, so any bits of
    /// the hash spread over the table).
    fn place(&self, hash: u64) -> (usize, u64) {
        let at = (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        (at / 64, 1 << (at % 64))
    }

    /// Marks one value's hash.
    fn mark(&mut self, hash: u64) {
        let (word, bit) = self.place(hash);
        let [once, again] = &mut self.words[word];
        *again |= *once & bit;
        *once |= bit;
    }

    /// Whether `hash`'s place was marked more than once: always when the
    /// hash was.
    fn hit_again(&self, hash: u64) -> bool {
        let (word, bit) = self.place(hash);
        self.words[word][1] & bit != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_hashes_always_pass_and_few_others_do() {
        let n = 10_000u64;
        let hashes: Vec<u64> = (0..n)
            .map(|i| i.wrapping_mul(0xD6E8_FEB8_6659_FD93))
            .collect();
        let mut r = Repeats::new(hashes.len() + 3);
        for &h in &hashes {
            r.mark(h);
        }
        for h in [hashes[7], hashes[7], hashes[9000]] {
            r.mark(h);
        }
        assert!(r.hit_again(hashes[7]) && r.hit_again(hashes[9000]));
        let passed = hashes.iter().filter(|&&h| r.hit_again(h)).count();
        assert!(passed < n as usize / 4, "{passed} of {n} passed");
    }
}
