//! `tensors`: one row per tensor, filtered by a glob, sorted by name or size.

use serde::Serialize;

use super::TensorSummary;
use crate::checkpoint::Checkpoint;
use crate::cli::SortBy;
use crate::{Error, Result};

/// The `tensors` report.
#[derive(Debug, Serialize)]
pub struct TensorsReport {
    /// The rows, in the order asked for.
    pub tensors: Vec<TensorSummary>,
    /// Number of rows shown.
    pub count: usize,
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
    if sort == SortBy::Size {
        tensors.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    }
    Ok(TensorsReport {
        count: tensors.len(),
        total_params: tensors.iter().map(|t| t.params).sum(),
        total_bytes: tensors.iter().map(|t| t.bytes).sum(),
        tensors,
    })
}
