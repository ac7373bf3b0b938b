//! The streaming exact search over a vocabulary matrix, shared by
//! `neighbors` and `check`.
//!
//! One pass reads the mapped rows in cache-sized blocks on all cores. Inside
//! a block every query meets every row while the block is in cache (a small
//! block matrix product), row norms come from the same pass, and each worker
//! keeps a bounded top-k per query; the workers' lists are merged at the end.
//! Nothing the size of the matrix is ever allocated.
//!
//! The arithmetic picks the widest path the CPU has at run time (see the
//! `kernels` module): AMX tile products or AVX-512 BF16 dot products straight
//! on the stored bytes of a BF16 matrix, AVX-512 or AVX2 on blocks converted
//! to f32 otherwise, and a portable path everywhere else. All paths
//! accumulate in f32 and agree to about 1e-5 of `|row| * |query|`; the BF16
//! instructions treat subnormal BF16 values (below 1.2e-38) as zero.

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod amx;
mod kernels;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rayon::prelude::*;
use serde::Serialize;

use crate::matrix::Matrix;
use crate::progress::Progress;
use kernels::Kernel;

/// Raw bytes per block of rows for [`scan`].
const SCAN_BLOCK_BYTES: usize = 1 << 20;

/// How a row is scored against a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// `dot / (|row| * |query|)`; 0 when either vector is all zeros. Like
    /// every score it is accurate to about 1e-5, so a row against itself
    /// may score a hair above 1.
    Cosine,
    /// The plain dot product.
    Dot,
}

/// One result: a row id and its score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// The row (token id).
    pub id: u32,
    /// The row's score against the query.
    pub score: f32,
}

/// The `k` best rows for each query, in one pass over the matrix.
///
/// `queries[q]` must have `cols` values; with `mask` (`rows` long), rows
/// marked `false` are never results. Each list is sorted by score
/// descending, then id ascending, and holds `min(k, candidates)` hits.
/// Rows whose score is NaN (a row or query holding NaN or infinities) are
/// not candidates at all. The result does not depend on the number of
/// threads.
///
/// Panics if a query or the mask has the wrong length; callers check
/// these. ([`Matrix::new`] keeps row ids within 32 bits.)
pub fn top_k(
    m: &Matrix,
    queries: &[Vec<f32>],
    k: usize,
    metric: Metric,
    mask: Option<&[bool]>,
    progress: &Progress,
) -> Vec<Vec<Hit>> {
    top_k_with(
        Kernel::best_for(m.dtype(), queries.len()),
        m,
        queries,
        k,
        metric,
        mask,
        progress,
    )
}

/// [`top_k`] with a chosen kernel, so tests can compare the paths.
fn top_k_with(
    kernel: Kernel,
    m: &Matrix,
    queries: &[Vec<f32>],
    k: usize,
    metric: Metric,
    mask: Option<&[bool]>,
    progress: &Progress,
) -> Vec<Vec<Hit>> {
    let (rows, cols, nq) = (m.rows(), m.cols(), queries.len());
    for (i, q) in queries.iter().enumerate() {
        assert_eq!(q.len(), cols, "query {i} length");
    }
    if let Some(mask) = mask {
        assert_eq!(mask.len(), rows, "mask length");
    }
    let k = k.min(rows);
    if nq == 0 || k == 0 {
        progress.finish();
        return vec![Vec::new(); nq];
    }
    let prepared = kernels::Queries::new(kernel, m.dtype(), queries);
    let cosine = metric == Metric::Cosine;
    let q_norms: Vec<f64> = queries.iter().map(|q| norm(q)).collect();
    let block_rows = block_rows(m, prepared.block_bytes());
    let blocks = rows.div_ceil(block_rows);

    let best = (0..blocks)
        .into_par_iter()
        .fold(
            || Worker::new(nq, k),
            |mut w, b| {
                let range = b * block_rows..((b + 1) * block_rows).min(rows);
                let n = range.len();
                w.dots.resize(n * nq, 0.0);
                w.norms.resize(n, 0.0);
                let norms = cosine.then_some(&mut w.norms[..]);
                prepared.score_block(m, range.clone(), &mut w.scratch, norms, &mut w.dots);
                for (i, row) in range.enumerate() {
                    if mask.is_some_and(|mask| !mask[row]) {
                        continue;
                    }
                    let row_norm = f64::from(w.norms[i]).sqrt();
                    for (q, list) in w.lists.iter_mut().enumerate() {
                        let dot = w.dots[i * nq + q];
                        let score = if cosine {
                            cosine_of(dot, row_norm, q_norms[q])
                        } else {
                            dot
                        };
                        list.offer(row as u32, score);
                    }
                }
                progress.inc(n as u64);
                w
            },
        )
        .reduce_with(Worker::merge);
    progress.finish();
    match best {
        Some(w) => w.lists.into_iter().map(TopK::into_sorted).collect(),
        None => vec![Vec::new(); nq],
    }
}

/// Visits the whole matrix once on all cores, a block of rows at a time,
/// counting rows on `progress` (the caller finishes it, so one bar can
/// span several scans). Once `progress` is cancelled, the remaining blocks
/// are skipped and the result is partial.
///
/// Each worker starts from `init()`; `visit(state, first_row, raw)` sees
/// the stored bytes of whole rows from `first_row` on, and reads them as it
/// likes (in place, or converted a row at a time). States of adjacent row
/// ranges are combined by `merge(left, right)`, so with an associative
/// `merge` the result does not depend on the number of threads.
pub fn scan<S: Send>(
    m: &Matrix,
    progress: &Progress,
    init: impl Fn() -> S + Sync,
    visit: impl Fn(&mut S, usize, &[u8]) + Sync,
    merge: impl Fn(S, S) -> S + Sync,
) -> S {
    let rows = m.rows();
    let block_rows = block_rows(m, SCAN_BLOCK_BYTES);
    let state = (0..rows.div_ceil(block_rows))
        .into_par_iter()
        .fold(&init, |mut state, b| {
            if progress.is_cancelled() {
                return state;
            }
            let range = b * block_rows..((b + 1) * block_rows).min(rows);
            visit(&mut state, range.start, m.block_bytes(range.clone()));
            progress.inc(range.len() as u64);
            state
        })
        .reduce_with(&merge);
    state.unwrap_or_else(init)
}

/// Rows per block of about `bytes`: a multiple of 32 (the AMX tile pair) or
/// else of 8 (the AVX-512 row tile) when possible.
fn block_rows(m: &Matrix, bytes: usize) -> usize {
    let n = (bytes / m.row_len_bytes()).max(1);
    match n {
        32.. => n / 32 * 32,
        8.. => n / 8 * 8,
        _ => n,
    }
}

/// The Euclidean norm of `v`, accumulated in f64.
fn norm(v: &[f32]) -> f64 {
    v.iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
}

/// Cosine from a dot product and the two norms; 0 when a norm is 0.
fn cosine_of(dot: f32, row_norm: f64, query_norm: f64) -> f32 {
    if row_norm == 0.0 || query_norm == 0.0 {
        0.0
    } else {
        (f64::from(dot) / (row_norm * query_norm)) as f32
    }
}

/// One worker's buffers and its per-query best lists.
struct Worker {
    scratch: Vec<f32>,
    norms: Vec<f32>,
    dots: Vec<f32>,
    lists: Vec<TopK>,
}

impl Worker {
    fn new(nq: usize, k: usize) -> Self {
        Worker {
            scratch: Vec::new(),
            norms: Vec::new(),
            dots: Vec::new(),
            lists: (0..nq).map(|_| TopK::new(k)).collect(),
        }
    }

    fn merge(mut self, other: Worker) -> Worker {
        for (mine, theirs) in self.lists.iter_mut().zip(other.lists) {
            for Reverse(c) in theirs.heap {
                mine.offer(c.0.id, c.0.score);
            }
        }
        self
    }
}

/// A hit ordered so that greater is better: higher score, then lower id.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ranked(Hit);

impl Eq for Ranked {}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.score.total_cmp(&other.0.score)).then(other.0.id.cmp(&self.0.id))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `k` hits seen so far, worst on top.
struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
    /// The worst kept score once the heap is full, for a cheap first test.
    floor: f32,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16)),
            floor: f32::NEG_INFINITY,
        }
    }

    /// Keeps `(id, score)` if it is among the best `k`; NaN is never kept.
    fn offer(&mut self, id: u32, score: f32) {
        if score.is_nan() || score < self.floor {
            return;
        }
        let hit = Ranked(Hit { id, score });
        if self.heap.len() < self.k {
            self.heap.push(Reverse(hit));
        } else if let Some(mut worst) = self.heap.peek_mut()
            && hit > worst.0
        {
            *worst = Reverse(hit);
        } else {
            return;
        }
        if self.heap.len() == self.k {
            self.floor = self.heap.peek().map_or(f32::NEG_INFINITY, |w| w.0.0.score);
        }
    }

    fn into_sorted(self) -> Vec<Hit> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(r)| r.0)
            .collect()
    }
}

#[cfg(test)]
mod tests;
