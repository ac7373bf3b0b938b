//! Exact answers whatever kernel ran: the kernels' f32 scores only choose a
//! shortlist, which is then re-scored exactly (f64 over the stored values)
//! and ordered by that score, ties to the lower id.
//!
//! # The error bound
//!
//! For each row and query the scan knows an approximate score `a` and a
//! bound `e` with `|a - exact| <= e`, so the exact score lies in
//! `[a - e, a + e]`. Let `tau` be the k-th largest lower bound `a - e` seen;
//! a row whose upper bound `a + e` is below `tau` has k rows strictly better
//! than it, so it cannot be in the top k under any tie order. The shortlist
//! keeps every other row: the true top k is always inside it.
//!
//! The bound (Higham, *Accuracy and Stability of Numerical Algorithms*,
//! §3.1): a kernel's f32 sum of products in which each product goes
//! through at most `D` roundings ([`KernelBounds`]) errs by at most
//! `gamma_D * sum |r_i q_i| <= gamma_D |r| |q|`, with
//! `gamma_D = D u / (1 - D u)` and `u = 2^-24`. The BF16 kernels multiply
//! BF16 values exactly in f32, but split each f32 query value into
//! `hi + lo` halves off by at most `2^-18 |q_i|` (bound taken as `2^-17`);
//! they also flush values below `2^-126` to zero, which moves a sum by at
//! most `2^-126 (sqrt(n) (|q| + |r|) + 4 n + 64)` over `n` columns; that
//! absolute term is doubled here. The row norm `|r|` is itself approximate
//! (its square is summed with the same depth), so it is bounded from the
//! kernel's squared norm before use. For cosine,
//! `|a - exact| <= e_dot / (|r|~ |q|) + ||r| - |r|~| / |r|~` (as
//! `|cos| <= 1`), with `|r|~` the kernel's norm. Rows whose bounds cannot be
//! trusted (a non-finite sum, a norm that is zero or not well above its own
//! error) get the bounds `[-inf, inf]` and are always re-scored.
//!
//! The shortlist is usually k plus a few rows; when many rows tie within
//! the bound (for example, identical rows), it holds them all (8 bytes
//! each).
//!
//! The VNNI kernel (`kernel::avx512vnni`) filters first with a much wider int8 bound
//! against the same threshold, and offers only the rows it cannot rule out,
//! re-scored with AVX-512 BF16, through [`Scorer::row`] and
//! [`Scorer::offer_one`].

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rayon::prelude::*;

use serde::Serialize;

use crate::matrix::Matrix;

/// The unit roundoff of f32.
const U: f64 = 1.0 / (1u64 << 24) as f64;
/// The flush-to-zero threshold of the BF16 instructions, doubled.
const FLUSH: f64 = 2.0 * f32::MIN_POSITIVE as f64;
/// The relative error of a query's BF16 halves, `hi + lo`.
const HALVES: f64 = 1.0 / (1u64 << 17) as f64;
/// Slack for rounding the bounds themselves in f64.
const SLACK: f64 = 1e-12;

/// How a row is scored against a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// `dot / (|row| * |query|)`; 0 when either vector is all zeros.
    Cosine,
    /// The plain dot product.
    Dot,
}

/// One result: a row id and its score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// The row (token id).
    pub id: u32,
    /// The row's exact score against the query (computed in f64 over the
    /// stored values), rounded to f32.
    pub score: f32,
}

/// What a kernel's f32 sums owe to rounding: the terms of its error bound.
#[derive(Clone, Copy, Debug)]
pub(super) struct KernelBounds {
    /// An upper bound on the number of successive f32 roundings any one
    /// product goes through on its way into a dot product or squared norm
    /// (the "depth" of the sum in Higham's bound).
    pub(super) depth: usize,
    /// The kernel reads the queries as BF16 halves (see [`HALVES`]).
    pub(super) halves: bool,
}

/// Turns a kernel's f32 dot products and squared norms into approximate
/// scores with error bounds, and offers them to the shortlists.
pub(super) struct Scorer {
    metric: Metric,
    /// `gamma_D` plus the query halves' error, relative to `|r| |q|`.
    rel: f64,
    /// `gamma_D` of the squared norms.
    rel_norm: f64,
    /// `sqrt(n)` and `4 n + 64` of the flush term, times [`FLUSH`].
    flush_sqrt_n: f64,
    flush_n: f64,
    /// Per query: its exact norm, and `1 / norm` (0 for a zero query).
    q_norm: Vec<f64>,
    q_inv: Vec<f64>,
}

impl Scorer {
    /// The bounds of a kernel's sums (`kernel`) on `cols` columns, for
    /// queries of norms `q_norms`.
    pub(super) fn new(kernel: KernelBounds, cols: usize, metric: Metric, q_norms: &[f64]) -> Self {
        let d = kernel.depth as f64;
        let gamma = if d * U < 0.5 {
            d * U / (1.0 - d * U)
        } else {
            f64::INFINITY
        };
        let halves = if kernel.halves { HALVES } else { 0.0 };
        Scorer {
            metric,
            rel: gamma + halves + SLACK,
            rel_norm: gamma + SLACK,
            flush_sqrt_n: FLUSH * (cols as f64).sqrt(),
            flush_n: FLUSH * (4.0 * cols as f64 + 64.0),
            q_norm: q_norms.to_vec(),
            q_inv: q_norms
                .iter()
                .map(|&n| if n > 0.0 { 1.0 / n } else { 0.0 })
                .collect(),
        }
    }

    /// Offers row `id`, whose kernel squared norm is `norm2` and whose dot
    /// products with the queries are `dots`, to each query's shortlist.
    /// Zero queries under cosine score 0 everywhere and are skipped (see
    /// [`rescore`]).
    #[inline]
    pub(super) fn offer(&self, id: u32, norm2: f32, dots: &[f32], lists: &mut [Shortlist]) {
        let row = self.row(norm2);
        for (q, list) in lists.iter_mut().enumerate() {
            self.offer_one(&row, id, q, dots[q], list);
        }
    }

    /// The bounds of a row whose kernel squared norm is `norm2`, shared by
    /// all queries.
    #[inline]
    pub(super) fn row(&self, norm2: f32) -> RowBounds {
        let norm2 = f64::from(norm2);
        // Bounds on the exact norm from the kernel's squared norm.
        let up = ((norm2 + self.flush_n) / (1.0 - self.rel_norm)).sqrt() * (1.0 + SLACK);
        let low = ((norm2 - self.flush_n).max(0.0) / (1.0 + self.rel_norm)).sqrt();
        let nr = norm2.sqrt();
        let err_norm = (up - nr).max(nr - low);
        let finite = norm2.is_finite();
        let trusted = finite && nr > 0.0 && err_norm < 0.25 * nr;
        let inv = if trusted { 1.0 / nr } else { 0.0 };
        RowBounds {
            finite,
            trusted,
            up,
            inv,
            err_norm,
            // e = e_dot / (nr |q|) + err_norm / nr, split into the part
            // that does not depend on the query and the part over |q|.
            fixed: (self.rel * up + self.flush_sqrt_n + err_norm) * inv + SLACK,
            per_q: (self.flush_sqrt_n * up + self.flush_n) * inv,
        }
    }

    /// Offers `row` (bounds from [`Scorer::row`]) with kernel dot product
    /// `dot` against query `q` to that query's shortlist.
    #[inline]
    pub(super) fn offer_one(
        &self,
        row: &RowBounds,
        id: u32,
        q: usize,
        dot: f32,
        list: &mut Shortlist,
    ) {
        let unsure = |list: &mut Shortlist| list.offer(id, f64::NEG_INFINITY, f64::INFINITY);
        if !row.finite {
            unsure(list);
            return;
        }
        let a = f64::from(dot);
        match self.metric {
            Metric::Dot => {
                if !a.is_finite() {
                    unsure(list);
                    return;
                }
                let (qn, up) = (self.q_norm[q], row.up);
                let e = self.rel * up * qn + self.flush_sqrt_n * (qn + up) + self.flush_n;
                let e = e + a.abs() * SLACK;
                if a + e >= list.tau {
                    list.offer(id, a - e, a + e);
                }
            }
            Metric::Cosine => {
                let qi = self.q_inv[q];
                if qi == 0.0 {
                    return;
                }
                let a = a * row.inv * qi;
                if !row.trusted || !a.is_finite() {
                    unsure(list);
                    return;
                }
                let e = row.fixed + row.per_q * qi;
                if a + e >= list.tau {
                    list.offer(id, a - e, a + e);
                }
            }
        }
    }

    /// The metric scored.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn metric(&self) -> Metric {
        self.metric
    }

    /// Query `q`'s exact norm.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn q_norm(&self, q: usize) -> f64 {
        self.q_norm[q]
    }
}

/// What [`Scorer`] knows of one row from its kernel squared norm.
pub(super) struct RowBounds {
    /// The squared norm is finite (otherwise every score is unsure).
    finite: bool,
    /// The norm is well above its own error (cosine bounds can be trusted).
    pub(super) trusted: bool,
    /// An upper bound on the row's exact norm.
    pub(super) up: f64,
    /// `1 / norm` from the kernel's norm, 0 when not `trusted`.
    pub(super) inv: f64,
    /// A bound on the error of the kernel's norm.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) err_norm: f64,
    /// The cosine error bound, minus `per_q / |q|`.
    fixed: f64,
    /// The part of the cosine error bound that scales with `1 / |q|`.
    per_q: f64,
}

/// A lower bound, ordered (never NaN).
#[derive(Clone, Copy, PartialEq)]
struct Low(f64);

impl Eq for Low {}

impl Ord for Low {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl PartialOrd for Low {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One query's candidates during a scan: every row whose upper bound
/// reaches the k-th largest lower bound seen (`tau`).
pub(super) struct Shortlist {
    k: usize,
    /// The `k` largest lower bounds seen, smallest on top.
    lows: BinaryHeap<Reverse<Low>>,
    /// The k-th largest lower bound seen (-inf until `k` are seen).
    pub(super) tau: f64,
    /// Candidates: id and upper bound.
    rows: Vec<(u32, f32)>,
    /// `rows` is pruned when it reaches this length.
    prune_at: usize,
}

impl Shortlist {
    /// An empty list for the best `k` (`k > 0`).
    pub(super) fn new(k: usize) -> Self {
        Shortlist {
            k,
            lows: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
            tau: f64::NEG_INFINITY,
            rows: Vec::new(),
            prune_at: 2 * k + 64,
        }
    }

    /// Takes row `id` with exact score in `[low, up]`.
    fn offer(&mut self, id: u32, low: f64, up: f64) {
        if up < self.tau {
            return;
        }
        self.push_low(low);
        // Rounded up, so that the f32 bound stays an upper bound.
        let up32 = up as f32;
        let up32 = if f64::from(up32) < up {
            up32.next_up()
        } else {
            up32
        };
        self.rows.push((id, up32));
        if self.rows.len() >= self.prune_at {
            self.prune();
        }
    }

    fn push_low(&mut self, low: f64) {
        if self.lows.len() < self.k || low > self.tau {
            self.lows.push(Reverse(Low(low)));
            if self.lows.len() > self.k {
                self.lows.pop();
            }
            if self.lows.len() == self.k {
                self.tau = self.lows.peek().map_or(f64::NEG_INFINITY, |l| l.0.0);
            }
        }
    }

    fn prune(&mut self) {
        let tau = self.tau;
        self.rows.retain(|r| f64::from(r.1) >= tau);
        self.prune_at = (2 * self.rows.len()).max(2 * self.k + 64);
    }

    /// Both lists' candidates, under the tighter threshold.
    pub(super) fn merge(mut self, other: Shortlist) -> Shortlist {
        for Reverse(Low(low)) in other.lows {
            self.push_low(low);
        }
        self.rows.extend(other.rows);
        self.prune();
        self
    }

    /// The candidate ids, ascending.
    pub(super) fn into_ids(mut self) -> Vec<u32> {
        self.prune();
        let mut ids: Vec<u32> = self.rows.into_iter().map(|r| r.0).collect();
        ids.sort_unstable();
        ids
    }
}

/// The best `k` of each query's `candidates` by exact score, best first,
/// ties to the lower id; NaN scores are dropped. A zero query under cosine
/// scores 0 against every row: its answer is the first `k` rows `allowed`.
#[allow(clippy::too_many_arguments)]
pub(super) fn rescore(
    m: &Matrix,
    queries: &[Vec<f32>],
    q_norms: &[f64],
    metric: Metric,
    candidates: Vec<Vec<u32>>,
    k: usize,
    allowed: impl Fn(usize) -> bool + Sync,
) -> Vec<Vec<Hit>> {
    let cosine = metric == Metric::Cosine;
    // Exact norms of every candidate row, computed once.
    let mut distinct: Vec<u32> = if cosine {
        candidates.iter().flatten().copied().collect()
    } else {
        Vec::new()
    };
    distinct.sort_unstable();
    distinct.dedup();
    let norms: Vec<f64> = distinct
        .par_iter()
        .map_init(Vec::new, |buf, &id| {
            let row = row_into(m, id, buf);
            dot64(row, row).sqrt()
        })
        .collect();
    candidates
        .into_par_iter()
        .enumerate()
        .map_init(Vec::new, |buf, (q, ids)| {
            let query = &queries[q];
            if cosine && q_norms[q] == 0.0 {
                let first = (0..m.rows()).filter(|&i| allowed(i)).take(k);
                return first
                    .map(|i| Hit {
                        id: i as u32,
                        score: 0.0,
                    })
                    .collect();
            }
            let mut scored: Vec<(f64, u32)> = ids
                .into_iter()
                .map(|id| {
                    let score = if cosine {
                        let i = distinct.binary_search(&id).expect("norm computed");
                        if norms[i] == 0.0 {
                            0.0
                        } else {
                            dot64(row_into(m, id, buf), query) / (norms[i] * q_norms[q])
                        }
                    } else {
                        dot64(row_into(m, id, buf), query)
                    };
                    (score, id)
                })
                .filter(|s| !s.0.is_nan())
                .collect();
            scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored.truncate(k);
            scored
                .into_iter()
                .map(|(score, id)| Hit {
                    id,
                    score: score as f32,
                })
                .collect()
        })
        .collect()
}

/// Row `id` of `m` as stored, converted to f32 in `buf` (the same
/// conversion the f32 kernels read).
fn row_into<'b>(m: &Matrix, id: u32, buf: &'b mut Vec<f32>) -> &'b [f32] {
    let i = id as usize;
    buf.resize(m.cols(), 0.0);
    m.block_into(i..i + 1, buf);
    buf
}

/// A dot product in f64 (each f32 product exact), in 8 lanes summed in a
/// fixed order, so the result depends on the values alone.
pub(super) fn dot64(a: &[f32], b: &[f32]) -> f64 {
    let mut acc = [0f64; 8];
    let (a_chunks, a_tail) = a.as_chunks::<8>();
    let (b_chunks, b_tail) = b.as_chunks::<8>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for j in 0..8 {
            acc[j] += f64::from(x[j]) * f64::from(y[j]);
        }
    }
    for (j, (x, y)) in a_tail.iter().zip(b_tail).enumerate() {
        acc[j] += f64::from(*x) * f64::from(*y);
    }
    ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}
