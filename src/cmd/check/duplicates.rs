//! The `duplicate-rows` finding: rows whose duplicate keys (see
//! `rows::row_key`) are equal, confirmed byte for byte.

use serde_json::{Value, json};

use super::pass::Stats;
use super::{Finding, MAX_LISTED, Severity, cut, id_list, ids_phrase};
use crate::matrix::Matrix;
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
    // Rows with equal keys end up next to each other.
    let by_hash = sorted(
        live.iter()
            .map(|&(id, _)| (stats.hashes[id as usize], id))
            .collect(),
    );
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
    groups.iter_mut().for_each(|g| g.sort_unstable());
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

/// `(key, id)` pairs sorted by key, then id: a counting pass on the top
/// bits of the keys (as many as the pairs need, up to 16), then each bucket
/// sorted alone. Keys are hashes, so buckets hold a few pairs each; crafted
/// keys that share their top bits fall in one bucket, still sorted in
/// `O(n log n)`.
fn sorted(pairs: Vec<(u64, u32)>) -> Vec<(u64, u32)> {
    let bits = (usize::BITS - pairs.len().leading_zeros()).clamp(1, 16);
    let bucket = |key: u64| (key >> (64 - bits)) as usize;
    let mut starts = vec![0usize; (1 << bits) + 1];
    for &(key, _) in &pairs {
        starts[bucket(key) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut next = starts.clone();
    let mut out = vec![(0, 0); pairs.len()];
    for p in pairs {
        let b = bucket(p.0);
        out[next[b]] = p;
        next[b] += 1;
    }
    for b in starts.windows(2) {
        out[b[0]..b[1]].sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_by_key_then_id() {
        let mut pairs: Vec<(u64, u32)> = (0..5000u32)
            .map(|i| (u64::from(i % 97).wrapping_mul(0x9E37_79B9_7F4A_7C15), i))
            .collect();
        // Keys sharing their top bits land in one bucket.
        pairs.extend((0..300).map(|i| (7 - i as u64 % 3, 9000 - i)));
        pairs.push((u64::MAX, 1));
        pairs.push((0, 2));
        let mut want = pairs.clone();
        want.sort_unstable();
        assert_eq!(sorted(pairs), want);
        assert!(sorted(Vec::new()).is_empty());
        assert_eq!(sorted(vec![(3, 1)]), [(3, 1)]);
    }
}
