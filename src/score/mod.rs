//! How untrained each row looks, from the matrices alone (Land & Bartolo
//! 2024, "Fishing for Magikarp"), the same for every command that asks:
//! `undertrained` ranks the rows, `check` counts the strong candidates of
//! the embedding.
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
