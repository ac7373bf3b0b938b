//! One module per command: each opens what it needs, computes, and returns
//! a plain report. No printing and no number crunching beyond arithmetic here.

pub mod check;
pub mod info;
pub mod lookup;
pub mod neighbors;
pub mod size;
pub mod tensors;
pub mod undertrained;

use serde::Serialize;

use crate::checkpoint::{Checkpoint, TensorEntry};

/// A tensor as reports show it.
#[derive(Debug, Clone, Serialize)]
pub struct TensorSummary {
    /// Tensor name.
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Element type, as the header spells it.
    pub dtype: String,
    /// Number of elements.
    pub params: u64,
    /// Bytes stored.
    pub bytes: u64,
    /// The file holding it.
    pub file: String,
}

impl TensorSummary {
    /// Summarises `t` of `ckpt`.
    pub fn of(ckpt: &Checkpoint, t: &TensorEntry) -> TensorSummary {
        TensorSummary {
            name: t.name.clone(),
            shape: t.shape.clone(),
            dtype: t.dtype.to_string(),
            params: t.params(),
            bytes: t.bytes(),
            file: ckpt.file_of(t).display().to_string(),
        }
    }
}
