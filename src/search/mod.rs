//! The streaming exact search over a vocabulary matrix, shared by
//! `neighbors` and `check`.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`top_k`]: the scan on all cores, the workers' shortlists |
//! | `choose.rs` | which kernel runs: forced, settled by the CPU, or a trial |
//! | `trial.rs` | the timed trial of several kernels on the scan's first blocks |
//! | `kernel/` | the block arithmetic, one file per instruction set |
//! | `shortlist.rs` | error bounds, the per-query shortlists, the exact re-scoring |
//! | `tests.rs` | the search against an f64 reference, on every kernel |
//!
//! One pass reads the mapped rows in cache-sized blocks on all cores. Inside
//! a block every query meets every row while the block is in cache (a small
//! block matrix product), row norms come from the same pass, and each worker
//! keeps a shortlist per query; the workers' lists are merged at the end.
//! Nothing the size of the matrix is ever allocated.
//!
//! The arithmetic takes one of several kernels (see `kernel`), picked per
//! search by the CPU and the matrix's dtype, or forced with
//! `EMBSCOPE_KERNEL` (see `choose`). The kernels' f32 scores only pick a
//! shortlist per query that provably holds the true top k; the shortlist is
//! re-scored exactly, in f64 over the stored values, so the answer and its
//! scores do not depend on the kernel, the CPU or the number of threads
//! (see `shortlist`).

mod choose;
mod kernel;
mod shortlist;
#[cfg(test)]
mod tests;
mod trial;

use std::ops::Range;

use rayon::prelude::*;

use crate::Result;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::stream::block_rows;
pub use choose::KernelChoice;
use choose::Plan;
use kernel::{Kernel, Queries};
pub use shortlist::{Hit, Metric};
use shortlist::{Scorer, Shortlist};
use trial::Trial;

/// The answer of [`top_k`].
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// Per query, its best rows.
    pub lists: Vec<Vec<Hit>>,
    /// The kernel that scanned the matrix, and why.
    pub kernel: KernelChoice,
}

/// The `k` best rows for each query, in one pass over the matrix.
///
/// `queries[q]` must have `cols` values; with `mask` (`rows` long), rows
/// marked `false` are never results. Each list is sorted by exact score
/// descending, then id ascending, and holds `min(k, candidates)` hits.
/// Rows whose score is NaN (a row or query holding NaN or infinities) are
/// not candidates at all. The result does not depend on the kernel or the
/// number of threads.
///
/// Errors when `EMBSCOPE_KERNEL` or `EMBSCOPE_CPU_MASK` is not understood.
/// Panics if a query or the mask has the wrong length; callers check
/// these. ([`Matrix::new`] keeps row ids within 32 bits.)
pub fn top_k(
    m: &Matrix,
    queries: &[Vec<f32>],
    k: usize,
    metric: Metric,
    mask: Option<&[bool]>,
    progress: &Progress,
) -> Result<Found> {
    let plan = choose::plan(m, queries, k)?;
    let (lists, kernel) = search(plan, m, queries, k, metric, mask, progress);
    Ok(Found { lists, kernel })
}

/// [`top_k`] with a chosen kernel, so tests can compare the paths.
#[cfg(test)]
fn top_k_with(
    kernel: Kernel,
    m: &Matrix,
    queries: &[Vec<f32>],
    k: usize,
    metric: Metric,
    mask: Option<&[bool]>,
    progress: &Progress,
) -> Vec<Vec<Hit>> {
    let prepared = Queries::new(kernel, m.dtype(), queries);
    let plan = Plan::settled(prepared, "a test".into());
    search(plan, m, queries, k, metric, mask, progress).0
}

/// The scan as `plan` says (the first blocks timing the contenders, when
/// it names several), then the exact re-scoring.
fn search(
    plan: Plan,
    m: &Matrix,
    queries: &[Vec<f32>],
    k: usize,
    metric: Metric,
    mask: Option<&[bool]>,
    progress: &Progress,
) -> (Vec<Vec<Hit>>, KernelChoice) {
    let (rows, cols, nq) = (m.rows(), m.cols(), queries.len());
    for (i, q) in queries.iter().enumerate() {
        assert_eq!(q.len(), cols, "query {i} length");
    }
    if let Some(mask) = mask {
        assert_eq!(mask.len(), rows, "mask length");
    }
    let k = k.min(rows);
    let Plan {
        contenders,
        settled,
    } = plan;
    if nq == 0 || k == 0 {
        progress.finish();
        let choice = settled.expect("choose::plan settles when there is nothing to scan");
        return (vec![Vec::new(); nq], choice);
    }
    let q_norms: Vec<f64> = queries.iter().map(|q| norm(q)).collect();
    let passes: Vec<Pass> = contenders
        .iter()
        .map(|q| Pass {
            queries: q,
            scorer: Scorer::new(q.kernel().bounds(cols), cols, metric, &q_norms),
            block_rows: block_rows(m, q.block_bytes()),
        })
        .collect();
    #[cfg(target_arch = "x86_64")]
    let floors = kernel::Floors::new(nq);
    // Scans `rows` with pass `i`, in its own blocks.
    let visit = |w: &mut Worker, i: usize, rows: Range<usize>| {
        let pass = &passes[i];
        for start in rows.clone().step_by(pass.block_rows) {
            let block = start..(start + pass.block_rows).min(rows.end);
            #[cfg(target_arch = "x86_64")]
            w.visit(m, pass, block, mask, &floors);
            #[cfg(not(target_arch = "x86_64"))]
            w.visit(m, pass, block, mask);
        }
        progress.inc(rows.len() as u64);
    };
    // The scan's unit: the largest block of any contender.
    let unit = passes.iter().map(|p| p.block_rows).max().expect("a pass");
    let kernels: Vec<Kernel> = contenders.iter().map(Queries::kernel).collect();
    let trial = settled.is_none().then(|| Trial::new(m, &kernels, nq));
    let scanned = (0..rows.div_ceil(unit))
        .into_par_iter()
        .fold(
            || Worker::new(nq, k),
            |mut w, u| {
                let rows = u * unit..((u + 1) * unit).min(rows);
                match &trial {
                    Some(t) => t.step(rows, |i, rows| visit(&mut w, i, rows)),
                    None => visit(&mut w, 0, rows),
                }
                w
            },
        )
        .reduce_with(Worker::merge);
    progress.finish();
    let choice = match trial {
        Some(t) => t.finish().1,
        None => settled.expect("a trial unless settled"),
    };
    let Some(all) = scanned else {
        return (vec![Vec::new(); nq], choice);
    };
    let candidates = all.lists.into_iter().map(Shortlist::into_ids).collect();
    let allowed = |i: usize| mask.is_none_or(|mask| mask[i]);
    let lists = shortlist::rescore(m, queries, &q_norms, metric, candidates, k, allowed);
    (lists, choice)
}

/// The Euclidean norm of `v`, accumulated in f64.
fn norm(v: &[f32]) -> f64 {
    shortlist::dot64(v, v).sqrt()
}

/// One kernel's side of a scan: the queries laid out for it, its error
/// bounds and its block size.
struct Pass<'a> {
    queries: &'a Queries,
    scorer: Scorer,
    block_rows: usize,
}

/// One worker's buffers and its per-query shortlists.
struct Worker {
    scratch: kernel::Scratch,
    norms: Vec<f32>,
    dots: Vec<f32>,
    lists: Vec<Shortlist>,
}

impl Worker {
    fn new(nq: usize, k: usize) -> Self {
        Worker {
            scratch: kernel::Scratch::default(),
            norms: Vec::new(),
            dots: Vec::new(),
            lists: (0..nq).map(|_| Shortlist::new(k)).collect(),
        }
    }

    /// Scores the rows `range` of `m` with `pass` and offers them to the
    /// shortlists (rows `mask`ed off are skipped), then raises `floors`,
    /// the thresholds all workers share, by which the VNNI kernel filters
    /// (should it scan later blocks, after a trial).
    fn visit(
        &mut self,
        m: &Matrix,
        pass: &Pass,
        range: Range<usize>,
        mask: Option<&[bool]>,
        #[cfg(target_arch = "x86_64")] floors: &kernel::Floors,
    ) {
        #[cfg(target_arch = "x86_64")]
        if pass.queries.scan_filtered(
            m,
            range.clone(),
            &mut self.scratch,
            &pass.scorer,
            mask,
            &mut self.lists,
            floors,
        ) {
            return;
        }
        let (n, nq) = (range.len(), pass.queries.len());
        self.dots.resize(n * nq, 0.0);
        self.norms.resize(n, 0.0);
        let norms = Some(&mut self.norms[..]);
        let q = pass.queries;
        q.score_block(m, range.clone(), &mut self.scratch, norms, &mut self.dots);
        for (i, row) in range.enumerate() {
            if mask.is_some_and(|mask| !mask[row]) {
                continue;
            }
            let dots = &self.dots[i * nq..(i + 1) * nq];
            pass.scorer
                .offer(row as u32, self.norms[i], dots, &mut self.lists);
        }
        #[cfg(target_arch = "x86_64")]
        floors.raise(&self.lists);
    }

    fn merge(mut self, other: Worker) -> Worker {
        self.lists = self
            .lists
            .into_iter()
            .zip(other.lists)
            .map(|(mine, theirs)| mine.merge(theirs))
            .collect();
        self
    }
}
