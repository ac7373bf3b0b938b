//! The per-row loops that the commands share, below them: each reads rows
//! in place from the mapped bytes, once, and makes per-row figures.
//!
//! | file | what it holds |
//! |---|---|
//! | `row.rs` | how a row is read: f32 values, F32 or BF16 bytes widened in registers; prefetching |
//! | `dots.rs` | `r·r` with dot products against up to two vectors, a row or a tile at a time; `acc += y·r` |
//! | `dpbf16.rs` | the same three sums with `vdpbf16ps`, for BF16 rows and vectors |
//! | `sums.rs` | a block's `[|r|², r·m, r·c]` in the widest build the CPU runs |
//! | `summary.rs` | what a row holds: norm, NaN, infinities, zeros, duplicate key, one dot product |
//! | `key.rs` | the duplicate key of a row's bytes; the key of its values, whatever the dtype |
//! | `mean.rs` | the mean of some rows, over the finite ones; a row added to column sums |
//! | `pairs.rs` | rows of two matrices compared pair by pair, with the base mean and keys in the same read |
//! | `component.rs` | the first principal components of a matrix's rows, by power iteration over an even sample |

pub(crate) mod component;
pub(crate) mod dots;
pub(crate) mod dpbf16;
pub(crate) mod key;
pub(crate) mod mean;
pub(crate) mod pairs;
pub(crate) mod row;
pub(crate) mod summary;
pub(crate) mod sums;
