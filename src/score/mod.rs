//! How untrained each row looks, from the matrices alone (Land & Bartolo
//! 2024, "Fishing for Magikarp"), the same for every command that asks:
//! `undertrained` ranks the rows, `check` counts the strong candidates of
//! the embedding, `rows` shows every row's.
//!
//! | file | what it holds |
//! |---|---|
//! | `reference.rs` | the `auto` reference set: placeholder entries and rows no token reaches |
//! | `indicators.rs` | norms, distances and cosines to the reference mean from per-row sums; which ones the score averages |
//! | `robust.rs` | robust z-scores, their mean per row, the strong threshold, the order and histogram of scores |

pub(crate) mod indicators;
pub(crate) mod reference;
pub(crate) mod robust;

pub use robust::{Histogram, STRONG};

use crate::vocab::Vocab;

/// Every row's figures from a run of the scoring, whole: what
/// `undertrained` ranks and cuts to its top rows, for a caller that shows
/// every row (`rows`), with the vocabulary the run loaded.
#[derive(Debug, Default)]
pub struct EveryRow {
    /// The indicators of every row.
    pub(crate) indicators: indicators::Indicators,
    /// The combined score of every row (NaN where there is none).
    pub(crate) scores: Vec<f64>,
    /// The reference rows, ascending.
    pub(crate) reference: Vec<u32>,
    /// The vocabulary, when there is one.
    pub(crate) vocab: Option<Box<Vocab>>,
}
