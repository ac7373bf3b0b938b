//! The value pass: one streaming read of each stored matrix through
//! [`stream::scan`], summarising every row (see `rows::summary`). The
//! embedding is read last, and its rows are also dotted with the reference
//! mean of the `undertrained-candidates` finding, which needs the
//! vocabulary: the mean is published (see [`Reference`]) while the other
//! matrices are read, each embedding block takes it up if it is there, and
//! the blocks read before it was get a catch-up read of their own
//! ([`complete_dots`]).
//!
//! The pass keeps one f32 norm and one u64 key per row (1.5 MB for a
//! 128k vocabulary), two more f32 per embedding row, and never copies the
//! matrix.

use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::aligned::Aligned;
use crate::checkpoint::{Checkpoint, TensorEntry};
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::roles::{Roles, TieStatus};
use crate::rows::mean::mean_of;
use crate::rows::summary::{self, RowSummary};
use crate::score::reference;
use crate::stream::{self, F32Column, U64Column};
use crate::vocab::Vocab;

/// The embedding's `auto` reference rows (see `score::reference`) and their
/// mean, which the value pass dots the embedding's rows with.
#[derive(Debug, Default)]
pub(crate) struct Reference {
    /// Row ids, ascending.
    pub ids: Vec<u32>,
    /// The mean of the finite reference rows; `None` without any (then
    /// the indicator is the norm alone and no dot product is needed).
    pub mean: Option<Aligned<f32>>,
}

impl Reference {
    /// The reference of the embedding `m` with `vocab` (none without one),
    /// reading the reference rows only.
    pub(crate) fn resolve(m: &Matrix, vocab: Option<&Vocab>) -> Self {
        let ids = reference::auto(vocab, m.rows()).ids;
        let mean = mean_of(m, &ids);
        Reference { ids, mean }
    }
}

/// What the pass learns about one matrix.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// L2 norm of every row (NaN for rows holding NaN or Inf).
    pub norms: Vec<f32>,
    /// Every row's duplicate key (see [`crate::rows::key::row_key`]).
    pub hashes: Vec<u64>,
    /// Rows holding a NaN, ascending.
    pub nan: Vec<u32>,
    /// Rows holding an infinity, ascending.
    pub inf: Vec<u32>,
    /// Rows whose values are all zero, ascending.
    pub zero: Vec<u32>,
    /// The embedding's sums for the `undertrained-candidates` finding
    /// (`None` for other matrices).
    pub sums: Option<Sums>,
}

/// The embedding's per-row sums for the `undertrained-candidates` finding.
#[derive(Debug, Default)]
pub(crate) struct Sums {
    /// `|r|²` as summed in f32 (see [`RowSummary::sq`]).
    pub sq: Vec<f32>,
    /// `r·m` with the reference mean; 0 where it is not needed (no mean)
    /// or not yet made (the `pending` rows).
    pub dot: Vec<f32>,
    /// Rows read before the reference was known, in ascending blocks:
    /// their dot products are still to make, if there is a mean.
    pub pending: Vec<Range<usize>>,
}

/// What a worker keeps over the blocks it reads: buffers for converting
/// rows and for a block's summaries (reused block after block, so they
/// stay in cache), the rows holding NaN, infinities or only zeros, and the
/// blocks read before the reference was known.
#[derive(Default)]
struct Run {
    scratch: Vec<f32>,
    block: Vec<RowSummary>,
    nan: Vec<u32>,
    inf: Vec<u32>,
    zero: Vec<u32>,
    pending: Vec<Range<usize>>,
}

impl Run {
    /// The lists of `self` and then of `other` (which read later rows).
    fn then(mut self, other: Run) -> Run {
        self.nan.extend(other.nan);
        self.inf.extend(other.inf);
        self.zero.extend(other.zero);
        self.pending.extend(other.pending);
        self
    }
}

/// A matrix's per-row results, written by the workers at each row's place
/// as they read its block (see [`stream::F32Column`]).
struct Columns {
    norms: F32Column,
    hashes: U64Column,
    /// `|r|²` and `r·m` (the embedding only).
    sums: Option<(F32Column, F32Column)>,
}

impl Columns {
    fn new(rows: usize, with_sums: bool) -> Columns {
        Columns {
            norms: F32Column::zeros(rows),
            hashes: U64Column::zeros(rows),
            sums: with_sums.then(|| (F32Column::zeros(rows), F32Column::zeros(rows))),
        }
    }

    /// Row `id`'s results.
    fn put(&self, id: usize, r: &RowSummary) {
        self.norms.set(id, r.norm);
        self.hashes.set(id, r.hash);
        if let Some((sq, dot)) = &self.sums {
            sq.set(id, r.sq);
            dot.set(id, r.dot);
        }
    }
}

/// The single streaming pass over `m`, with the embedding's sums when
/// `with_sums`: every row's summary, at its place. For the embedding,
/// `reference` is where the reference mean appears: each block dots its
/// rows with it when it is there.
pub(crate) fn scan(
    m: &Matrix,
    progress: &Progress,
    reference: Option<&OnceLock<Reference>>,
) -> Stats {
    let (dtype, cols) = (m.dtype(), m.cols());
    let columns = Columns::new(m.rows(), reference.is_some());
    let run = stream::scan(
        m,
        progress,
        Run::default,
        |run, first, raw| {
            let dotted = match reference.map(OnceLock::get) {
                None => None,
                Some(None) => {
                    run.pending
                        .push(first..first + raw.len() / m.row_len_bytes());
                    None
                }
                Some(Some(r)) => r.mean.as_deref(),
            };
            run.block.clear();
            summary::summarize(dtype, cols, raw, dotted, &mut run.scratch, &mut run.block);
            for (i, r) in run.block.iter().enumerate() {
                let id = first + i;
                columns.put(id, r);
                for (flag, list) in [
                    (r.nan, &mut run.nan),
                    (r.inf, &mut run.inf),
                    (r.zero, &mut run.zero),
                ] {
                    if flag {
                        list.push(id as u32);
                    }
                }
            }
        },
        Run::then,
    );
    let Columns {
        norms,
        hashes,
        sums,
    } = columns;
    // The lists are ascending: the scan merges the runs in row order.
    Stats {
        norms: norms.into_vec(),
        hashes: hashes.into_vec(),
        nan: run.nan,
        inf: run.inf,
        zero: run.zero,
        sums: sums.map(|(sq, dot)| Sums {
            sq: sq.into_vec(),
            dot: dot.into_vec(),
            pending: run.pending,
        }),
    }
}

/// Completes the dot products of `sums` with `mean`: those of the rows
/// the pass read before the reference was known (`sums.pending`) are made
/// now, on all cores: one more read of those rows only.
pub(crate) fn complete_dots(m: &Matrix, sums: &mut Sums, mean: &[f32]) {
    let (dtype, cols) = (m.dtype(), m.cols());
    let done: Vec<(usize, Vec<f32>)> = std::mem::take(&mut sums.pending)
        .into_par_iter()
        .map_init(Vec::new, |scratch, range| {
            let mut rows = Vec::with_capacity(range.len());
            let raw = m.block_bytes(range.clone());
            summary::summarize(dtype, cols, raw, Some(mean), scratch, &mut rows);
            (range.start, rows.iter().map(|r| r.dot).collect())
        })
        .collect();
    for (first, block) in done {
        sums.dot[first..first + block.len()].copy_from_slice(&block);
    }
}

/// The matrices the value pass reads: the embedding, and the head unless
/// it is a tied byte copy of the embedding.
pub(crate) fn planned<'a>(ckpt: &'a Checkpoint, roles: &Roles) -> Vec<&'a TensorEntry> {
    let tensor = |c: &Option<crate::roles::Choice>| c.as_ref().and_then(|c| ckpt.tensor(&c.name));
    let head_is_copy =
        roles.tie.status == TieStatus::TiedHeadStored && roles.tie.head_identical == Some(true);
    let mut out: Vec<&TensorEntry> = tensor(&roles.embedding).into_iter().collect();
    if let Some(h) = tensor(&roles.head)
        && !head_is_copy
    {
        out.push(h);
    }
    out
}

/// One matrix after the pass: the matrix with its statistics, or why its
/// values could not be read.
pub(crate) struct Scanned<'a> {
    pub tensor: &'a TensorEntry,
    pub stats: std::result::Result<(Matrix<'a>, Stats), String>,
}

/// The value pass: one streaming scan of each matrix, the `embedding`
/// last (with its dot products, see [`scan`]), counted on `progress`.
/// Returns them in the order of `matrices`.
pub(crate) fn pass<'a>(
    ckpt: &'a Checkpoint,
    matrices: &[&'a TensorEntry],
    embedding: Option<&TensorEntry>,
    reference: &OnceLock<Reference>,
    progress: &Progress,
) -> Vec<Scanned<'a>> {
    let is_embedding = |t: &TensorEntry| embedding.is_some_and(|e| e.name == t.name);
    let mut order: Vec<usize> = (0..matrices.len()).collect();
    order.sort_by_key(|&i| is_embedding(matrices[i]));
    let mut out: Vec<(usize, Scanned<'a>)> = order
        .into_iter()
        .map(|i| {
            let t = matrices[i];
            let reference = is_embedding(t).then_some(reference);
            let stats = ckpt
                .matrix(t)
                .map(|m| {
                    let stats = scan(&m, progress, reference);
                    (m, stats)
                })
                .map_err(|e| e.to_string());
            (i, Scanned { tensor: t, stats })
        })
        .collect();
    progress.finish();
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;

    #[test]
    fn rows_of_every_block_are_listed_in_order() {
        // 3000 rows of 512 values, several blocks: every 97th row zero,
        // every 101st holding a NaN.
        let (rows, cols) = (3000, 512);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| match i / cols {
                r if r % 97 == 0 => 0.0,
                r if r % 101 == 0 && i % cols == 3 => f32::NAN,
                _ => 1.0,
            })
            .collect();
        let bytes = Dtype::F32.encode(&values);
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let stats = scan(&m, &Progress::hidden(), None);
        let every = |n: u32| (0..rows as u32).filter(|r| r % n == 0).collect::<Vec<_>>();
        assert_eq!(stats.zero, every(97));
        let nan: Vec<u32> = (1..rows as u32)
            .filter(|r| r % 101 == 0 && r % 97 != 0)
            .collect();
        assert_eq!(stats.nan, nan);
        assert_eq!(stats.norms.len(), rows);
        assert_eq!(stats.norms[1], (cols as f32).sqrt());
    }

    #[test]
    fn dots_made_in_the_pass_equal_the_catch_up() {
        // Several blocks of the scan: 1100 rows of 512 values.
        let (rows, cols) = (1100, 512);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 700.0)
            .collect();
        let mean: Vec<f32> = (0..cols).map(|j| (j as f32 - 200.0) / 300.0).collect();
        let known = OnceLock::new();
        known
            .set(Reference {
                ids: Vec::new(),
                mean: Some(Aligned::copy_of(&mean)),
            })
            .unwrap();
        let dotted = known.get().unwrap().mean.as_ref().unwrap();
        for dtype in [Dtype::BF16, Dtype::F32, Dtype::F16] {
            let bytes = dtype.encode(&values);
            let m = Matrix::new("t", &bytes, dtype, &[rows, cols]).unwrap();
            // The mean known before the pass: every block is dotted in it.
            let early = scan(&m, &Progress::hidden(), Some(&known));
            let early = early.sums.unwrap();
            assert!(early.pending.is_empty(), "{dtype}");
            // Not known during the pass: every block is left pending, and
            // caught up after it.
            let late = scan(&m, &Progress::hidden(), Some(&OnceLock::new()));
            let late = late.sums.unwrap();
            assert_eq!(late.pending.first().map(|r| r.start), Some(0), "{dtype}");
            assert_eq!(late.pending.iter().map(Range::len).sum::<usize>(), rows);
            assert!(late.pending.len() > 1, "{dtype}: one block only");
            assert!(late.dot.iter().all(|&d| d == 0.0));
            assert_eq!(late.sq, early.sq, "{dtype}");
            let mut late = late;
            complete_dots(&m, &mut late, dotted);
            assert_eq!(late.dot, early.dot, "{dtype}");
            assert!(late.pending.is_empty(), "{dtype}");
            let mut early = early;
            complete_dots(&m, &mut early, dotted);
            assert_eq!(late.dot, early.dot, "{dtype}");
            for i in [0, 17, rows - 1] {
                let exact: f64 = m
                    .row(i)
                    .iter()
                    .zip(&mean)
                    .map(|(&a, &b)| f64::from(a) * f64::from(b))
                    .sum();
                let got = f64::from(early.dot[i]);
                assert!(
                    (got - exact).abs() < 1e-4 * exact.abs().max(1.0),
                    "{dtype} row {i}"
                );
            }
            // Other matrices keep no sums.
            assert!(scan(&m, &Progress::hidden(), None).sums.is_none());
        }
    }
}
