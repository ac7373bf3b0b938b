//! The `duplicate-rows` finding: rows whose duplicate keys (see
//! `rows::key::row_key`) are equal, confirmed byte for byte.

use serde_json::{Value, json};

use super::pass::Stats;
use super::{Finding, MAX_LISTED, Severity, cut, id_list, ids_phrase};
use crate::matrix::Matrix;
use crate::same_hash::sharing_hash;
use crate::vocab::Vocab;

/// Groups of byte-identical rows among the `live` ones `(id, norm)`, as a
/// finding pushed on `out` (none without any).
pub(super) fn duplicates(
    vocab: Option<&Vocab>,
    name: &str,
    m: &Matrix,
    stats: &Stats,
    live: &[(u32, f32)],
    out: &mut Vec<Finding>,
) {
    // Rows with equal keys, next to each other.
    let by_hash = sharing_keys(live.iter().map(|&(id, _)| (stats.hashes[id as usize], id)));
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for bucket in by_hash.chunk_by(|a, b| a.0 == b.0).filter(|b| b.len() > 1) {
        // Confirm byte for byte: sorting the bucket by the rows' bytes puts
        // equal rows next to each other in O(n log n) comparisons, however
        // many rows a crafted file makes collide.
        let bytes = |id: &u32| m.row_bytes(*id as usize);
        let mut ids: Vec<u32> = bucket.iter().map(|&(_, id)| id).collect();
        ids.sort_by(|a, b| bytes(a).cmp(bytes(b)).then(a.cmp(b)));
        groups.extend(
            ids.chunk_by(|a, b| bytes(a) == bytes(b))
                .filter(|g| g.len() > 1)
                .map(<[u32]>::to_vec),
        );
    }
    if groups.is_empty() {
        return;
    }
    // Each group is ascending already (equal bytes sort by id).
    groups.sort();
    let rows: usize = groups.iter().map(Vec::len).sum();
    let shown: Vec<Value> = groups
        .iter()
        .take(MAX_LISTED)
        .map(|g| id_list(vocab, g))
        .collect();
    // Each group lists its first MAX_LISTED ids; its size says if it has more.
    let sizes: Vec<usize> = groups.iter().take(MAX_LISTED).map(Vec::len).collect();
    out.push(Finding::new(
        Severity::Info,
        "duplicate-rows",
        format!(
            "`{name}` has {} group(s) of byte-identical rows ({rows} rows), e.g. {}",
            groups.len(),
            ids_phrase(vocab, &groups[0], 4)
        ),
        json!({
            "tensor": name, "groups": groups.len(), "rows": rows, "first_groups": shown,
            "group_sizes": sizes, "total": groups.len(), "truncated": cut(groups.len()),
        }),
    ));
}

/// The `(key, id)` pairs (ids distinct) whose key another pair has too,
/// sorted by key, then id (`O(n log n)` if crafted rows all share one
/// key).
fn sharing_keys(pairs: impl ExactSizeIterator<Item = (u64, u32)> + Clone) -> Vec<(u64, u32)> {
    let mut shared = sharing_hash(pairs, |&(key, _)| key);
    shared.sort_unstable();
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pairs_that_share_keys_sorted() {
        let mut pairs: Vec<(u64, u32)> = (0..5000u32)
            .map(|i| (u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15), i))
            .collect();
        pairs.extend([(7, 9001), (7, 9000), (u64::MAX, 1), (7, 5), (0, 2)]);
        pairs.push((0x9E37_79B9_7F4A_7C15, 8000));
        let got = sharing_keys(pairs.into_iter());
        let want = [
            (0, 0),
            (0, 2),
            (7, 5),
            (7, 9000),
            (7, 9001),
            (0x9E37_79B9_7F4A_7C15, 1),
            (0x9E37_79B9_7F4A_7C15, 8000),
        ];
        assert_eq!(got, want);
        assert!(sharing_keys(std::iter::empty()).is_empty());
        // Every key shared: all pairs, sorted.
        let same: Vec<(u64, u32)> = (0..100).rev().map(|i| (3, i)).collect();
        assert_eq!(
            sharing_keys(same.into_iter()),
            (0..100).map(|i| (3, i)).collect::<Vec<_>>()
        );
    }
}
