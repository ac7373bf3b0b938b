//! `tensors`: one row per tensor, filtered by a glob, sorted by name (in
//! natural order: `layers.2` before `layers.10`) or size.

use std::cmp::Ordering;

use serde::Serialize;

use super::TensorSummary;
use crate::checkpoint::Checkpoint;
use crate::{Error, Result};

/// Row order of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// By name, in natural order.
    Name,
    /// By bytes, largest first; equal sizes by name.
    Size,
}

/// The `tensors` report.
#[derive(Debug, Serialize)]
pub struct TensorsReport {
    /// The rows, in the order asked for.
    pub tensors: Vec<TensorSummary>,
    /// Number of rows shown.
    pub count: usize,
    /// Number of tensors in the checkpoint, matched or not.
    pub total: usize,
    /// Parameters of the rows shown.
    pub total_params: u64,
    /// Bytes of the rows shown.
    pub total_bytes: u64,
}

/// Lists the tensors of `ckpt` matching `filter`.
pub fn run(ckpt: &Checkpoint, filter: Option<&str>, sort: SortBy) -> Result<TensorsReport> {
    let glob = filter
        .map(|g| {
            globset::GlobBuilder::new(g)
                .literal_separator(false)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| Error::BadInput(format!("--filter `{g}` is not a valid glob ({e})")))
        })
        .transpose()?;
    let mut tensors: Vec<TensorSummary> = ckpt
        .tensors
        .values()
        .filter(|t| glob.as_ref().is_none_or(|g| g.is_match(&t.name)))
        .map(|t| TensorSummary::of(ckpt, t))
        .collect();
    let by_name = |a: &TensorSummary, b: &TensorSummary| natural_cmp(&a.name, &b.name);
    match sort {
        SortBy::Name => tensors.sort_by(by_name),
        SortBy::Size => tensors.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| by_name(a, b))),
    }
    Ok(TensorsReport {
        count: tensors.len(),
        total: ckpt.tensors.len(),
        total_params: tensors.iter().map(|t| t.params).sum(),
        total_bytes: tensors.iter().map(|t| t.bytes).sum(),
        tensors,
    })
}

/// Compares names in natural order: runs of ASCII digits compare as
/// numbers (`layers.2` < `layers.10`), everything else byte by byte; names
/// equal that way (`01` and `1`) fall back to plain order.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        if x[i].is_ascii_digit() && y[j].is_ascii_digit() {
            let end =
                |s: &[u8], k: usize| k + s[k..].iter().take_while(|c| c.is_ascii_digit()).count();
            let (ei, ej) = (end(x, i), end(y, j));
            let trim = |d: &'_ [u8]| -> usize { d.iter().take_while(|&&c| c == b'0').count() };
            let (dx, dy) = (&x[i..ei], &y[j..ej]);
            let (dx, dy) = (&dx[trim(dx)..], &dy[trim(dy)..]);
            // Without leading zeros, a longer run is a larger number.
            match dx.len().cmp(&dy.len()).then_with(|| dx.cmp(dy)) {
                Ordering::Equal => (i, j) = (ei, ej),
                other => return other,
            }
        } else {
            match x[i].cmp(&y[j]) {
                Ordering::Equal => (i, j) = (i + 1, j + 1),
                other => return other,
            }
        }
    }
    (x.len() - i).cmp(&(y.len() - j)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut names = vec![
            "model.layers.10.mlp.weight",
            "model.layers.2.mlp.weight",
            "model.layers.1.mlp.weight",
            "lm_head.weight",
            "model.layers.02.mlp.weight",
            "model.layers.2.attn.weight",
            "model.embed_tokens.weight",
            "a99999999999999999999999b",
            "a100000000000000000000000b",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "a99999999999999999999999b",
                "a100000000000000000000000b",
                "lm_head.weight",
                "model.embed_tokens.weight",
                "model.layers.1.mlp.weight",
                "model.layers.2.attn.weight",
                "model.layers.02.mlp.weight",
                "model.layers.2.mlp.weight",
                "model.layers.10.mlp.weight",
            ]
        );
        assert_eq!(natural_cmp("x", "x"), Ordering::Equal);
        assert_eq!(natural_cmp("x1", "x"), Ordering::Greater);
        assert_eq!(natural_cmp("x1", "xa"), Ordering::Less);
    }
}
