//! How each row the fine-tune added was initialised, judged from its
//! values against the base rows alone, in this order:
//!
//! - `zeros`: every value is 0;
//! - `copy`: equal to a base row after conversion to f32 (which one is
//!   said), found by the rows' keys (see `key::values_key`) and confirmed
//!   value by value; when a side is rounded (a quantized fine-tune), equal
//!   within the tolerance the rounding explains to the base row nearest
//!   in direction, which one search over the base rows finds;
//! - `mean`: within [`MEAN_WITHIN`] of the base rows' median norm from the
//!   mean of the base rows (transformers' `resize_token_embeddings` draws
//!   new rows this close to it);
//! - `random`: no more aligned with the base mean, the direction trained
//!   rows share, than an isotropic random vector of that size is: `|cos|`
//!   below [`SPREAD`]`/√d` (such a vector's cosine with any fixed
//!   direction has a spread of about `1/√d`);
//! - `trained`: the rest.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use super::tolerance::Tolerance;
use crate::cpu::RowBuild;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::rows::key::values_key;
use crate::rows::pairs::{PairSums, pair_of};
use crate::search::{Metric, top_k};

/// A row within this fraction of the base rows' median norm from their
/// mean is `mean`.
pub const MEAN_WITHIN: f64 = 0.01;

/// A row whose cosine with the base mean is within this many times
/// `1/√d` of 0 is `random`.
pub const SPREAD: f64 = 4.0;

/// Base rows sharing a key that are compared with an added row, at most
/// (keys of different rows seldom agree; a crafted file cannot make the
/// search quadratic).
const CANDIDATES: usize = 8;

/// Added rows sought among the base rows within a tolerance, at most: the
/// search costs a pass over the base rows with every added row as a
/// query, so past this many (a vocabulary replaced, not extended) copies
/// are not sought.
pub const TOLERANT_COPIES_UP_TO: usize = 4096;

/// How an added row was initialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// Every value 0.
    Zeros,
    /// Equal to a base row.
    Copy,
    /// At the mean of the base rows.
    Mean,
    /// A fresh draw that shares no direction with the trained rows.
    Random,
    /// None of these.
    Trained,
}

impl Init {
    /// Every verdict, in the order they are tried.
    pub const ALL: [Init; 5] = [
        Init::Zeros,
        Init::Copy,
        Init::Mean,
        Init::Random,
        Init::Trained,
    ];

    /// The verdict's name, as the JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            Init::Zeros => "zeros",
            Init::Copy => "copy",
            Init::Mean => "mean",
            Init::Random => "random",
            Init::Trained => "trained",
        }
    }
}

/// What the added rows are judged against.
pub(crate) struct Basis<'a> {
    /// The mean of the finite base rows, if any.
    pub mean: Option<&'a [f32]>,
    /// The base rows' median norm.
    pub median_norm: f64,
    /// Every base row's key (empty: copies are not looked for by key).
    pub keys: &'a [u64],
    /// When values within rounding count as equal: copies are then sought
    /// by a search instead of by key.
    pub tolerance: Option<&'a Tolerance>,
}

/// One added row's verdict and the figures it rests on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verdict {
    /// The verdict.
    pub init: Init,
    /// For `copy`, the base row copied (the lowest id of equal rows).
    pub copy_of: Option<u32>,
    /// The row's L2 norm.
    pub norm: f32,
    /// Its cosine with the base mean (none without one).
    pub cosine_to_mean: Option<f32>,
    /// Its distance to the base mean, in base median norms.
    pub distance_to_mean: Option<f32>,
}

/// The verdicts of the `added` rows of `tuned`, in order.
pub(crate) fn judge(base: &Matrix, tuned: &Matrix, added: &[u32], basis: &Basis) -> Vec<Verdict> {
    let build = RowBuild::detect();
    let cols = tuned.cols();
    let zeros = vec![0f32; cols];
    let mean = basis.mean.unwrap_or(&zeros);
    let figures: Vec<(PairSums, u64)> = added
        .par_iter()
        .map(|&t| {
            let row = tuned.row(t as usize);
            let s = pair_of(build, &row, mean);
            (s, values_key(row.as_slice(), s.aa))
        })
        .collect();
    let copies = match basis.tolerance {
        Some(tol) => near_copies(base, tuned, added, &figures, tol),
        None => copies(base, tuned, added, &figures, basis.keys),
    };
    let mean_norm = mean
        .iter()
        .map(|&x| f64::from(x).powi(2))
        .sum::<f64>()
        .sqrt();
    let random_below = SPREAD / (cols as f64).sqrt();
    figures
        .iter()
        .zip(copies)
        .map(|((s, _), copy_of)| {
            let norm = f64::from(s.aa).sqrt();
            let (cos, dist) = match basis.mean {
                Some(_) if s.finite() => (
                    if norm > 0.0 && mean_norm > 0.0 {
                        f64::from(s.ab) / (norm * mean_norm)
                    } else {
                        0.0
                    },
                    f64::from(s.dd).sqrt(),
                ),
                _ => (f64::NAN, f64::NAN),
            };
            let init = if s.aa == 0.0 && s.max_a == 0.0 {
                Init::Zeros
            } else if copy_of.is_some() {
                Init::Copy
            } else if dist <= MEAN_WITHIN * basis.median_norm {
                Init::Mean
            } else if cos.abs() < random_below {
                Init::Random
            } else {
                Init::Trained
            };
            let finite = |x: f64| x.is_finite().then_some(x as f32);
            Verdict {
                init,
                copy_of,
                norm: norm as f32,
                cosine_to_mean: finite(cos),
                distance_to_mean: finite(dist / basis.median_norm),
            }
        })
        .collect()
}

/// For each added row, the lowest base row it equals, value by value
/// after conversion to f32, among those whose key is its own; none when
/// `keys` is empty. The base rows are walked once, keeping up to
/// [`CANDIDATES`] per key asked for.
fn copies(
    base: &Matrix,
    tuned: &Matrix,
    added: &[u32],
    figures: &[(PairSums, u64)],
    keys: &[u64],
) -> Vec<Option<u32>> {
    if keys.is_empty() {
        return vec![None; added.len()];
    }
    let mut wanted: HashMap<u64, Vec<u32>> = figures
        .iter()
        .filter(|(s, _)| s.finite())
        .map(|&(_, key)| (key, Vec::new()))
        .collect();
    for (b, key) in keys.iter().enumerate() {
        if let Some(found) = wanted.get_mut(key)
            && found.len() < CANDIDATES
        {
            found.push(b as u32);
        }
    }
    added
        .par_iter()
        .zip(figures)
        .map(|(&t, (_, key))| {
            let found = wanted.get(key).filter(|f| !f.is_empty())?;
            let row = tuned.row(t as usize);
            found.iter().copied().find(|&b| base.row(b as usize) == row)
        })
        .collect()
}

/// For each added row, the base row nearest in direction when the two are
/// equal within `tol`; none when there are more than
/// [`TOLERANT_COPIES_UP_TO`] added rows or the search cannot run.
fn near_copies(
    base: &Matrix,
    tuned: &Matrix,
    added: &[u32],
    figures: &[(PairSums, u64)],
    tol: &Tolerance,
) -> Vec<Option<u32>> {
    let mut found = vec![None; added.len()];
    if added.len() > TOLERANT_COPIES_UP_TO {
        return found;
    }
    // Zero rows are `zeros` whatever they equal; non-finite rows have no
    // direction.
    let sought: Vec<usize> = (0..added.len())
        .filter(|&i| figures[i].0.finite() && figures[i].0.aa > 0.0)
        .collect();
    let queries: Vec<Vec<f32>> = (sought.iter())
        .map(|&i| tuned.row(added[i] as usize))
        .collect();
    if queries.is_empty() {
        return found;
    }
    let Ok(hits) = top_k(base, &queries, 1, Metric::Cosine, None, &Progress::hidden()) else {
        return found;
    };
    let build = RowBuild::detect();
    for ((&i, query), list) in sought.iter().zip(&queries).zip(hits.lists) {
        let Some(hit) = list.first() else { continue };
        let s = pair_of(build, &base.row(hit.id as usize), query);
        if s.finite() && (s.max_diff == 0.0 || tol.allows(&s)) {
            found[i] = Some(hit.id);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;

    #[test]
    fn each_kind_of_added_row_gets_its_verdict() {
        // 64 base rows of 64 values sharing a direction, and five added
        // rows: zeros, a copy of row 9, the mean, a row orthogonal to the
        // mean, one along it.
        let cols = 64;
        let common: Vec<f32> = (0..cols)
            .map(|j| if j % 2 == 0 { 0.5 } else { -0.5 })
            .collect();
        let noise = |r: usize, j: usize| (((r * 131 + j * 17) % 23) as f32 - 11.0) / 40.0;
        let base_values: Vec<f32> = (0..64)
            .flat_map(|r| (0..cols).map(move |j| (r, j)))
            .map(|(r, j)| common[j] + noise(r, j))
            .collect();
        let mut mean = vec![0f64; cols];
        for (i, &x) in base_values.iter().enumerate() {
            mean[i % cols] += f64::from(x) / 64.0;
        }
        let mean: Vec<f32> = mean.iter().map(|&x| x as f32).collect();
        let orthogonal: Vec<f32> = (0..cols)
            .map(|j| if j % 4 < 2 { 0.7 } else { -0.7 })
            .collect();
        let along: Vec<f32> = common.iter().map(|x| x * 1.5).collect();
        let mut tuned_values = base_values.clone();
        tuned_values.extend(vec![0.0; cols]);
        tuned_values.extend_from_slice(&base_values[9 * cols..10 * cols]);
        tuned_values.extend_from_slice(&mean);
        tuned_values.extend(&orthogonal);
        tuned_values.extend(&along);
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let (b, t) = (bytes(&base_values), bytes(&tuned_values));
        let base = Matrix::new("b", &b, Dtype::F32, &[64, cols]).unwrap();
        let tuned = Matrix::new("t", &t, Dtype::F32, &[69, cols]).unwrap();
        let build = RowBuild::detect();
        let keys: Vec<u64> = (0..64)
            .map(|r| {
                let row = base.row(r);
                values_key(row.as_slice(), pair_of(build, &row, &row).aa)
            })
            .collect();
        let norms: Vec<f64> = (0..64)
            .map(|r| {
                base.row(r)
                    .iter()
                    .map(|&x| f64::from(x).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        let median_norm = crate::median::median_of(norms.into_iter()).unwrap();
        let basis = Basis {
            mean: Some(&mean),
            median_norm,
            keys: &keys,
            tolerance: None,
        };
        let v = judge(&base, &tuned, &[64, 65, 66, 67, 68], &basis);
        let inits: Vec<Init> = v.iter().map(|v| v.init).collect();
        assert_eq!(
            inits,
            [
                Init::Zeros,
                Init::Copy,
                Init::Mean,
                Init::Random,
                Init::Trained
            ]
        );
        assert_eq!(v[1].copy_of, Some(9));
        assert!(v[2].distance_to_mean.unwrap() < 1e-6);
        assert!(v[4].cosine_to_mean.unwrap() > 0.9);
        // Without keys, no copy is looked for.
        let v = judge(&base, &tuned, &[65], &Basis { keys: &[], ..basis });
        assert_eq!((v[0].init, v[0].copy_of), (Init::Trained, None));
    }
}
