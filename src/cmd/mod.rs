//! One module per command: each opens what it needs, computes, and returns
//! a plain report. No printing and no number crunching beyond arithmetic here.
//! Commands never import each other: what two share lives below them
//! (`crate::query`, `crate::rows`, `crate::score`, the streaming pass).
//! The `report` page, made of several commands' reports, sits above them
//! (`crate::report`).
//!
//! | file | command |
//! |---|---|
//! | `info.rs` | `info`: files, config, the embedding and head, tie, tokenizer |
//! | `tensors.rs` | `tensors`: one row per tensor |
//! | `size.rs` | `size`: parameters and bytes, and what-if figures |
//! | `lookup.rs` | `lookup`: the stored rows of ids, tokens or a text |
//! | `neighbors.rs` | `neighbors`: the nearest rows of queries, in one pass |
//! | `similarity/` | `similarity`: the cosine of every pair of queries, their order and map |
//! | `rows.rs` | `rows`: every row's norms and under-trained figures, named |
//! | `check/` | `check`: the consistency audit |
//! | `undertrained/` | `undertrained`: rows ranked by how untrained they look |
//! | `diff/` | `diff`: what a fine-tune changed, added and removed |

pub mod check;
pub mod diff;
pub mod info;
pub mod lookup;
pub mod neighbors;
pub mod rows;
pub mod similarity;
pub mod size;
pub mod tensors;
pub mod undertrained;

use std::path::Path;

use serde::Serialize;

use crate::Result;
use crate::checkpoint::{Checkpoint, TensorEntry, Unreadable, WeightFormat};
use crate::vocab::Vocab;

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

/// The vocabulary of `ckpt`: its tokenizer files ([`Vocab::load`]), or a
/// GGUF file's metadata; `None` when it has none.
pub fn load_vocab(ckpt: &Checkpoint) -> Result<Option<Vocab>> {
    load_vocab_with(ckpt, Vocab::load)
}

/// The vocabulary, loaded from tokenizer.json by `load` ([`Vocab::load`],
/// or [`Vocab::load_previewing`] for `undertrained`), or from a GGUF
/// file's metadata.
pub fn load_vocab_with(
    ckpt: &Checkpoint,
    load: impl FnOnce(&Path, Option<&serde_json::Value>) -> Result<Option<Vocab>>,
) -> Result<Option<Vocab>> {
    if let (WeightFormat::Gguf, Some(metadata)) = (ckpt.format, ckpt.gguf_metadata()) {
        // A GGUF file carries its vocabulary in its metadata.
        return Vocab::from_gguf(&ckpt.shards[0].path, metadata);
    }
    load(&ckpt.sources.dir, ckpt.config.as_ref().map(|c| &c.raw))
}

/// What was `loaded`, with a note for each file that could not be read:
/// one left out (a special-token file), or (a tokenizer file) the whole
/// vocabulary's, then none. A GGUF vocabulary that cannot be read stays an
/// error: it is the weights file's fault.
pub fn lenient_vocab<V: std::borrow::Borrow<Vocab>>(
    ckpt: &Checkpoint,
    loaded: Result<Option<V>>,
) -> Result<(Option<V>, Vec<String>)> {
    match loaded {
        Ok(vocab) => {
            let left_out = vocab.as_ref().map_or(&[][..], |v| v.borrow().unreadable());
            let dir = &ckpt.sources.dir;
            let notes = (left_out.iter())
                .map(|e| Unreadable::from_error(e, dir).note())
                .collect();
            Ok((vocab, notes))
        }
        Err(e) => match ckpt.vocab_unreadable(&e) {
            Some(unread) => Ok((None, vec![unread.note()])),
            None => Err(e),
        },
    }
}
