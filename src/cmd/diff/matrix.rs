//! One matrix of the diff, embedding or head: its pass (see `pass`), the
//! verdicts of its added rows (see `init`), and the report made of them:
//! counts, the distributions of the changed rows' cosine and relative
//! change, the rows that moved most, the rows added and removed.

use serde::Serialize;

use crate::matrix::Matrix;
use crate::median::median_of;
use crate::progress::Progress;
use crate::score::robust::histogram;
use crate::vocab::Vocab;

use super::init::{self, Basis, Init};
use super::pairing::Pairing;
use super::pass::{self, Measured};
use super::tolerance::Tolerance;

/// Bins of each distribution.
const BINS: usize = 40;

/// One side of a compared matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixSide {
    /// The tensor's name.
    pub tensor: String,
    /// Rows.
    pub rows: usize,
    /// Columns (the hidden size).
    pub cols: usize,
    /// Element type.
    pub dtype: String,
    /// Whether this is the embedding standing in as a tied head.
    pub tied: bool,
}

impl MatrixSide {
    fn of(m: &Matrix, tied: bool) -> MatrixSide {
        MatrixSide {
            tensor: m.name().to_string(),
            rows: m.rows(),
            cols: m.cols(),
            dtype: m.dtype().to_string(),
            tied,
        }
    }
}

/// How a figure spreads over the changed rows.
#[derive(Debug, Clone, Serialize)]
pub struct Distribution {
    /// The smallest value.
    pub min: f64,
    /// The median.
    pub median: f64,
    /// The largest value.
    pub max: f64,
    /// How the bins are spaced: `linear`, or `log10` (equal ratios, from
    /// the smallest positive value).
    pub scale: &'static str,
    /// Rows per bin, in equal bins from the first to the last value.
    pub counts: Vec<u64>,
}

/// A changed row among those that moved most.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    /// Its id in TUNED.
    pub id: u32,
    /// Its id in BASE (another for a renumbered token).
    pub base_id: u32,
    /// Its readable token (null when no token has this id).
    pub token: Option<String>,
    /// cosine(base row, tuned row).
    pub cosine: f64,
    /// `|tuned − base| / |base|` (null for a base row of zeros).
    pub relative_change: Option<f64>,
}

/// A row the fine-tune added, and how it was initialised.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    /// Its id in TUNED.
    pub id: u32,
    /// Its readable token (null when no token has this id).
    pub token: Option<String>,
    /// How it was initialised.
    pub init: Init,
    /// For `copy`: the base row it equals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_of: Option<u32>,
    /// For `copy`: that row's readable token, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_of_token: Option<String>,
    /// Its L2 norm.
    pub norm: f32,
    /// Its cosine with the mean of the base rows.
    pub cosine_to_mean: Option<f32>,
    /// Its distance to that mean, in base median norms.
    pub distance_to_mean: Option<f32>,
}

/// A base row the fine-tune has no row for.
#[derive(Debug, Clone, Serialize)]
pub struct Removed {
    /// Its id in BASE.
    pub id: u32,
    /// Its readable token (null when no token has this id).
    pub token: Option<String>,
}

/// Added rows by verdict.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InitCounts {
    /// Every value 0.
    pub zeros: usize,
    /// Equal to a base row.
    pub copy: usize,
    /// At the base mean.
    pub mean: usize,
    /// An isotropic draw.
    pub random: usize,
    /// The rest.
    pub trained: usize,
}

/// What the added rows were judged against.
#[derive(Debug, Clone, Serialize)]
pub struct InitBasis {
    /// The base rows' median L2 norm.
    pub median_norm: f64,
    /// The L2 norm of the base rows' mean.
    pub mean_norm: f64,
    /// A row this close to the mean, in median norms, is `mean`.
    pub mean_within: f64,
    /// A row whose |cosine| with the mean is below this is `random`.
    pub random_below: f64,
    /// Whether copies were looked for (by key where values compare
    /// exactly; by a search where they are rounded, up to
    /// 4,096 added rows, `init::TOLERANT_COPIES_UP_TO`).
    pub copies_sought: bool,
}

/// The diff of one matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixDiff {
    /// BASE's matrix.
    pub base: MatrixSide,
    /// TUNED's matrix.
    pub tuned: MatrixSide,
    /// Head only: both models tie it to the embedding, so this is the
    /// embedding's diff again.
    pub same_as_embedding: bool,
    /// Pairs of rows compared.
    pub compared: usize,
    /// Pairs whose values are equal (within `tolerance`, when there is one).
    pub identical: usize,
    /// Pairs that differ.
    pub changed: usize,
    /// Of those, pairs holding NaN or an infinity (in no distribution).
    pub non_finite: usize,
    /// Pairs of rows of different ids (renumbered tokens).
    pub renumbered: usize,
    /// Pairs made by id although both have a tokenizer (rows no token
    /// reaches, slots whose tokens both sides lost).
    pub paired_by_id: usize,
    /// When values count as equal though they differ (a quantized or
    /// narrower dtype on a side); null when only equal values do.
    pub tolerance: Option<Tolerance>,
    /// cosine(base row, tuned row) of the changed finite rows.
    pub cosine: Option<Distribution>,
    /// `|tuned − base| / |base|` of the changed finite rows.
    pub relative_change: Option<Distribution>,
    /// The changed rows that moved most (by relative change), `--top` of them.
    pub top_changed: Vec<Changed>,
    /// Rows of TUNED that no base row pairs with.
    pub added: Vec<Added>,
    /// The added rows by verdict.
    pub init: InitCounts,
    /// What the verdicts rest on (null without added rows).
    pub init_basis: Option<InitBasis>,
    /// Rows of BASE that no tuned row pairs with.
    pub removed: Vec<Removed>,
}

impl MatrixDiff {
    /// Whether anything differs: values, rows, dtype.
    pub fn differs(&self) -> bool {
        self.changed > 0
            || !self.added.is_empty()
            || !self.removed.is_empty()
            || self.renumbered > 0
            || self.base.dtype != self.tuned.dtype
    }
}

/// The two vocabularies, to name rows.
#[derive(Clone, Copy)]
pub(crate) struct Names<'a> {
    pub base: Option<&'a Vocab>,
    pub tuned: Option<&'a Vocab>,
}

impl Names<'_> {
    fn tuned(&self, t: u32) -> Option<String> {
        self.tuned.and_then(|v| v.readable(t))
    }

    fn base(&self, b: u32) -> Option<String> {
        self.base.and_then(|v| v.readable(b))
    }
}

/// The two matrices of one role and how they are compared.
pub(crate) struct Pair<'a> {
    pub base: Matrix<'a>,
    pub tuned: Matrix<'a>,
    /// Whether each side's matrix is its embedding standing in as a tied head.
    pub tied: [bool; 2],
}

/// Compares `pair` as `pairing` pairs its rows: one pass over both
/// matrices, then the added rows' verdicts.
pub(crate) fn diff(
    pair: &Pair,
    pairing: &Pairing,
    names: Names,
    top: usize,
    progress: &Progress,
) -> MatrixDiff {
    let (base, tuned) = (&pair.base, &pair.tuned);
    let tolerance = Tolerance::of(base.dtype(), tuned.dtype());
    let with_added = !pairing.added.is_empty();
    let m = pass::measure(
        base,
        tuned,
        pairing,
        tolerance.as_ref(),
        with_added,
        progress,
    );
    let median_norm = median_of(
        m.norms
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| f64::from(x)),
    )
    .unwrap_or(0.0);
    let (added, init, init_basis) = if with_added {
        added_rows(pair, pairing, &m, median_norm, tolerance.as_ref(), names)
    } else {
        (Vec::new(), InitCounts::default(), None)
    };
    MatrixDiff {
        base: MatrixSide::of(base, pair.tied[0]),
        tuned: MatrixSide::of(tuned, pair.tied[1]),
        same_as_embedding: false,
        compared: pairing.compared(),
        identical: m.identical,
        changed: m.changed,
        non_finite: m.non_finite,
        renumbered: pairing.moved,
        paired_by_id: pairing.by_id,
        tolerance,
        cosine: distribution(m.cosine.iter().copied(), false),
        relative_change: distribution(m.relative.iter().copied(), true),
        top_changed: top_changed(&m, pairing, names, top),
        added,
        init,
        init_basis,
        removed: pairing
            .removed
            .iter()
            .map(|&b| Removed {
                id: b,
                token: names.base(b),
            })
            .collect(),
    }
}

/// The added rows with their verdicts, the counts, and the basis.
fn added_rows(
    pair: &Pair,
    pairing: &Pairing,
    m: &Measured,
    median_norm: f64,
    tolerance: Option<&Tolerance>,
    names: Names,
) -> (Vec<Added>, InitCounts, Option<InitBasis>) {
    let basis = Basis {
        mean: m.mean.as_deref(),
        median_norm,
        keys: if tolerance.is_none() { &m.keys } else { &[] },
        tolerance,
    };
    let verdicts = init::judge(&pair.base, &pair.tuned, &pairing.added, &basis);
    let mut counts = InitCounts::default();
    let added = pairing
        .added
        .iter()
        .zip(verdicts)
        .map(|(&t, v)| {
            *match v.init {
                Init::Zeros => &mut counts.zeros,
                Init::Copy => &mut counts.copy,
                Init::Mean => &mut counts.mean,
                Init::Random => &mut counts.random,
                Init::Trained => &mut counts.trained,
            } += 1;
            Added {
                id: t,
                token: names.tuned(t),
                init: v.init,
                copy_of: v.copy_of,
                copy_of_token: v.copy_of.and_then(|b| names.base(b)),
                norm: v.norm,
                cosine_to_mean: v.cosine_to_mean,
                distance_to_mean: v.distance_to_mean,
            }
        })
        .collect();
    let mean_norm = m.mean.as_ref().map_or(0.0, |mean| {
        mean.iter()
            .map(|&x| f64::from(x).powi(2))
            .sum::<f64>()
            .sqrt()
    });
    let basis = InitBasis {
        median_norm,
        mean_norm,
        mean_within: init::MEAN_WITHIN,
        random_below: init::SPREAD / (pair.tuned.cols() as f64).sqrt(),
        copies_sought: tolerance.is_none() || pairing.added.len() <= init::TOLERANT_COPIES_UP_TO,
    };
    (added, counts, Some(basis))
}

/// The `top` changed rows of largest relative change (infinite first),
/// ties to the lower base id.
fn top_changed(m: &Measured, pairing: &Pairing, names: Names, top: usize) -> Vec<Changed> {
    let mut rows: Vec<u32> = (0..m.relative.len() as u32)
        .filter(|&b| !m.relative[b as usize].is_nan())
        .collect();
    let order = |a: &u32, b: &u32| {
        m.relative[*b as usize]
            .total_cmp(&m.relative[*a as usize])
            .then(a.cmp(b))
    };
    if rows.len() > top && top > 0 {
        rows.select_nth_unstable_by(top - 1, order);
    }
    rows.truncate(top);
    rows.sort_unstable_by(order);
    rows.into_iter()
        .map(|b| {
            let t = pairing.tuned_of[b as usize];
            let rel = f64::from(m.relative[b as usize]);
            Changed {
                id: t,
                base_id: b,
                token: names.tuned(t).or_else(|| names.base(b)),
                cosine: f64::from(m.cosine[b as usize]),
                relative_change: rel.is_finite().then_some(rel),
            }
        })
        .collect()
}

/// The distribution of the finite `values` (NaN marks rows left out); on
/// a log scale, binned by log10 from the smallest positive value.
fn distribution(values: impl Iterator<Item = f32> + Clone, log: bool) -> Option<Distribution> {
    let finite = values.filter(|x| x.is_finite()).map(f64::from);
    let median = median_of(finite.clone())?;
    let (min, max) = finite
        .clone()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let binned: Vec<f64> = if log {
        let floor = finite
            .clone()
            .filter(|&x| x > 0.0)
            .fold(f64::INFINITY, f64::min);
        finite.map(|x| x.max(floor).log10()).collect()
    } else {
        finite.collect()
    };
    let h = histogram(&binned, BINS);
    Some(Distribution {
        min,
        median,
        max,
        scale: if log { "log10" } else { "linear" },
        counts: h.counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_skip_left_out_rows_and_bin_ratios_on_a_log_scale() {
        let d = distribution([f32::NAN, 0.001, 0.01, 0.1, 1.0].into_iter(), true).unwrap();
        assert_eq!((d.min, d.max, d.scale), (0.001f32 as f64, 1.0, "log10"));
        assert!((d.median - 0.055).abs() < 1e-6, "{}", d.median);
        let ones: Vec<u64> = d.counts.iter().copied().filter(|&c| c > 0).collect();
        assert_eq!(ones, [1, 1, 1, 1]);
        assert_eq!(d.counts.len(), BINS);
        assert!(distribution([f32::NAN].into_iter(), false).is_none());
        let d = distribution([0.5f32, 1.0].into_iter(), false).unwrap();
        assert_eq!((d.counts[0], d.counts[BINS - 1]), (1, 1));
    }
}
