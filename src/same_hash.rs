//! Which items share a 64-bit hash with another: `check` looks for
//! duplicate rows by their keys and duplicate token strings by their
//! hashes so, and confirms the few it finds exactly.

use foldhash::{HashSet, HashSetExt};

/// The `items` whose hash another item has too, in the order given: two
/// passes over them, the first noting the hashes seen more than once.
pub(crate) fn sharing_hash<T>(
    items: impl ExactSizeIterator<Item = T> + Clone,
    hash: impl Fn(&T) -> u64,
) -> Vec<T> {
    let mut seen = HashSet::with_capacity(items.len());
    let mut repeated = HashSet::new();
    for item in items.clone() {
        let h = hash(&item);
        if !seen.insert(h) {
            repeated.insert(h);
        }
    }
    if repeated.is_empty() {
        return Vec::new();
    }
    items
        .filter(|item| repeated.contains(&hash(item)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_items_whose_hash_repeats_pass_in_order() {
        let n = 10_000u64;
        let mut hashes: Vec<u64> = (0..n)
            .map(|i| i.wrapping_mul(0xD6E8_FEB8_6659_FD93))
            .collect();
        hashes.extend([hashes[7], hashes[9000], hashes[7]]);
        let got = sharing_hash(hashes.iter().enumerate(), |&(_, &h)| h);
        let got: Vec<usize> = got.into_iter().map(|(i, _)| i).collect();
        assert_eq!(got, [7, 9000, 10_000, 10_001, 10_002]);
        assert!(sharing_hash(0..5u32, |&h| u64::from(h)).is_empty());
        assert_eq!(sharing_hash([3u64; 4].into_iter(), |&h| h), [3; 4]);
    }
}
