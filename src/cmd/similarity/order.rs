//! An order of the queries in which similar ones stand together: the
//! leaves of a hierarchical clustering with average linkage (UPGMA) on the
//! distance `1 - cosine`, as scipy's `linkage(method="average")` builds
//! it. The tree is found by the nearest-neighbour chain, `O(n²)` for `n`
//! queries (average linkage is reducible, so the chain finds the same
//! merges as the greedy algorithm, in another sequence). At each merge
//! the cluster holding the query given first goes first, so the order
//! keeps the user's where the tree leaves it free.

/// The indices `0..n` of the `n × n` matrix `cosine` in leaf order. A
/// NaN cosine counts as the largest distance.
pub fn leaves(cosine: &[Vec<f64>]) -> Vec<usize> {
    let n = cosine.len();
    let mut d: Vec<Vec<f64>> = cosine
        .iter()
        .map(|row| {
            row.iter()
                .map(|&c| {
                    if c.is_nan() {
                        2.0
                    } else {
                        (1.0 - c).clamp(0.0, 2.0)
                    }
                })
                .collect()
        })
        .collect();
    // Each cluster lives at the slot of one of its members; `leaves[a]`
    // is its members in order, empty once merged into another.
    let mut leaves: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut active: Vec<usize> = (0..n).collect();
    let mut chain: Vec<usize> = Vec::new();
    while active.len() > 1 {
        if chain.is_empty() {
            chain.push(active[0]);
        }
        let a = *chain.last().expect("not empty");
        let previous = chain.len().checked_sub(2).map(|i| chain[i]);
        // The nearest other cluster; on a tie the previous link of the
        // chain, so the chain cannot cycle, then the lowest slot.
        let mut best = previous.unwrap_or(usize::MAX);
        let mut best_d = previous.map_or(f64::INFINITY, |p| d[a][p]);
        for &b in &active {
            if b != a && (d[a][b] < best_d || (best == usize::MAX && d[a][b] <= best_d)) {
                (best, best_d) = (b, d[a][b]);
            }
        }
        if Some(best) != previous {
            chain.push(best);
            continue;
        }
        chain.truncate(chain.len() - 2);
        let b = best;
        // Average linkage: the new cluster's distance to each other one
        // is the size-weighted mean of its parts' distances.
        let (na, nb) = (leaves[a].len() as f64, leaves[b].len() as f64);
        for &k in &active {
            if k != a && k != b {
                let v = (na * d[a][k] + nb * d[b][k]) / (na + nb);
                d[a][k] = v;
                d[k][a] = v;
            }
        }
        let moved = std::mem::take(&mut leaves[b]);
        let first_a = leaves[a].iter().min() < moved.iter().min();
        leaves[a] = if first_a {
            [std::mem::take(&mut leaves[a]), moved].concat()
        } else {
            [moved, std::mem::take(&mut leaves[a])].concat()
        };
        active.retain(|&k| k != b);
    }
    active
        .first()
        .map(|&a| std::mem::take(&mut leaves[a]))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cosines of unit vectors at the angles given, in degrees.
    fn on_circle(degrees: &[f64]) -> Vec<Vec<f64>> {
        degrees
            .iter()
            .map(|a| degrees.iter().map(|b| (a - b).to_radians().cos()).collect())
            .collect()
    }

    #[test]
    fn groups_stand_together() {
        // Two groups, interleaved as given: 0, 2, 4 near 0°, 1, 3 near 90°.
        let c = on_circle(&[0.0, 90.0, 5.0, 85.0, 10.0]);
        assert_eq!(leaves(&c), [0, 2, 4, 1, 3]);
    }

    #[test]
    fn merges_follow_the_average_distance() {
        // 0 and 3 are nearest (30°); then 1 is nearer to them on average
        // (40° and 70°: 1 - cos, 0.45) than to 2 (60°: 0.5); 2 comes last.
        let c = on_circle(&[0.0, 40.0, 100.0, -30.0]);
        assert_eq!(leaves(&c), [0, 3, 1, 2]);
    }

    #[test]
    fn small_and_odd_inputs() {
        assert!(leaves(&[]).is_empty());
        assert_eq!(leaves(&[vec![1.0]]), [0]);
        let nan = vec![vec![1.0, f64::NAN], vec![f64::NAN, f64::NAN]];
        assert_eq!(leaves(&nan), [0, 1]);
        // Equal distances everywhere: the order given.
        let flat = vec![vec![0.5; 6]; 6];
        assert_eq!(leaves(&flat), [0, 1, 2, 3, 4, 5]);
    }
}
