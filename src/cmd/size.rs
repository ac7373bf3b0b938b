//! `size`: parameters and bytes by dtype, the vocabulary layers' share,
//! what tying saves, and what-if figures. Header only.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::dtype::Dtype;
use crate::roles::{Roles, TieStatus};
use crate::{Error, Result};

/// The `size` report.
#[derive(Debug, Serialize)]
pub struct SizeReport {
    /// Parameters of every tensor.
    pub total_params: u64,
    /// Bytes of every tensor.
    pub total_bytes: u64,
    /// Totals per dtype, largest first.
    pub by_dtype: Vec<DtypeTotal>,
    /// The embedding tensor's name (null when none was found).
    pub embedding: Option<String>,
    /// Parameters of the embedding.
    pub embedding_params: u64,
    /// Bytes of the embedding.
    pub embedding_bytes: u64,
    /// The stored head's name (null when tied or absent).
    pub head: Option<String>,
    /// Parameters of the stored head (0 when tied and not stored).
    pub head_params: u64,
    /// Bytes of the stored head.
    pub head_bytes: u64,
    /// Embedding + stored head, parameters.
    pub vocab_params: u64,
    /// Embedding + stored head, bytes.
    pub vocab_bytes: u64,
    /// `vocab_params / total_params` (0..1).
    pub vocab_share: f64,
    /// Tie status of the files.
    pub tie_status: TieStatus,
    /// What tying saves (untied models) or saved (tied models); null for an
    /// encoder with no head, where there is nothing to tie.
    pub tying: Option<Tying>,
    /// Figures under the what-if flags, when any is given.
    pub what_if: Option<WhatIf>,
}

/// Totals for one dtype.
#[derive(Debug, Serialize)]
pub struct DtypeTotal {
    /// The dtype.
    pub dtype: String,
    /// Number of tensors.
    pub tensors: usize,
    /// Parameters.
    pub params: u64,
    /// Bytes.
    pub bytes: u64,
    /// Storage bits per parameter (16 for BF16, 8.5 for Q8_0, 4.5 for Q4_K).
    pub bits_per_weight: f64,
}

/// What tying the head to the embedding is worth.
#[derive(Debug, Serialize)]
pub struct Tying {
    /// True when the head is tied (nothing separate stored).
    pub tied: bool,
    /// Parameters a separate head costs (tied: saved; untied: would be saved).
    pub params: u64,
    /// Bytes a separate head costs.
    pub bytes: u64,
    /// Those bytes as a share of the model's bytes (when untied) or of the
    /// untied model's bytes (when tied).
    pub share_of_bytes: f64,
}

/// The model under the what-if flags.
#[derive(Debug, Serialize)]
pub struct WhatIf {
    /// Vocabulary rows.
    pub vocab: u64,
    /// Hidden size of the vocabulary layers.
    pub hidden: u64,
    /// Dtype of floating-point tensors (null: as stored).
    pub dtype: Option<String>,
    /// Whether the head is tied.
    pub tied: bool,
    /// Embedding parameters.
    pub embedding_params: u64,
    /// Stored head parameters.
    pub head_params: u64,
    /// All parameters.
    pub total_params: u64,
    /// All bytes.
    pub total_bytes: u64,
    /// Vocabulary layers' share of all parameters.
    pub vocab_share: f64,
    /// Change in parameters against the files (signed).
    pub delta_params: i128,
    /// Change in bytes against the files (signed).
    pub delta_bytes: i128,
}

/// The model `size` is asked to imagine: each figure left `None` stays as
/// the files have it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scenario {
    /// Vocabulary rows.
    pub vocab: Option<u64>,
    /// Hidden size of the vocabulary layers.
    pub hidden: Option<u64>,
    /// The dtype of every floating-point tensor (a float dtype).
    pub dtype: Option<Dtype>,
    /// Whether the head is tied to the embedding.
    pub tied: Option<bool>,
}

impl Scenario {
    /// True when any figure differs from the files': the report then has
    /// its [`WhatIf`].
    pub fn is_asked(&self) -> bool {
        *self != Scenario::default()
    }
}

/// Builds the `size` report from headers, with the figures of `scenario`
/// when it asks for any.
pub fn run(ckpt: &Checkpoint, roles: &Roles, scenario: &Scenario) -> Result<SizeReport> {
    let mut by: BTreeMap<_, DtypeTotal> = BTreeMap::new();
    for t in ckpt.tensors.values() {
        let e = by.entry(t.dtype).or_insert_with(|| DtypeTotal {
            dtype: t.dtype.to_string(),
            tensors: 0,
            params: 0,
            bytes: 0,
            bits_per_weight: t.dtype.bits_per_weight(),
        });
        e.tensors += 1;
        e.params += t.params();
        e.bytes += t.bytes();
    }
    let mut by_dtype: Vec<DtypeTotal> = by.into_values().collect();
    by_dtype.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.dtype.cmp(&b.dtype)));
    let total_params: u64 = by_dtype.iter().map(|d| d.params).sum();
    let total_bytes: u64 = by_dtype.iter().map(|d| d.bytes).sum();

    let emb = roles.embedding.as_ref().map(|c| &ckpt.tensors[&c.name]);
    let head = roles.head.as_ref().map(|c| &ckpt.tensors[&c.name]);
    let (embedding_params, embedding_bytes) = emb.map_or((0, 0), |t| (t.params(), t.bytes()));
    let (head_params, head_bytes) = head.map_or((0, 0), |t| (t.params(), t.bytes()));
    let vocab_params = embedding_params + head_params;
    let tied = head.is_none();
    let tying = if matches!(roles.tie.status, TieStatus::NoHead | TieStatus::VocabOnly) {
        None
    } else if tied {
        let untied_total = total_bytes + embedding_bytes;
        Some(Tying {
            tied,
            params: embedding_params,
            bytes: embedding_bytes,
            share_of_bytes: ratio(embedding_bytes, untied_total),
        })
    } else {
        Some(Tying {
            tied,
            params: head_params,
            bytes: head_bytes,
            share_of_bytes: ratio(head_bytes, total_bytes),
        })
    };

    let what_if = if scenario.is_asked() {
        roles.need_tensors(ckpt)?;
        let emb = emb.ok_or_else(|| Error::NoMatrix {
            model: ckpt.model.clone(),
            what: ": no input embedding found, so there is nothing to vary".into(),
        })?;
        let dtype = scenario.dtype;
        let vocab = scenario.vocab.unwrap_or(emb.shape[0] as u64);
        let hidden = scenario.hidden.unwrap_or(emb.shape[1] as u64);
        let w_tied = scenario.tied.unwrap_or(tied);
        let overflow = || Error::BadInput(format!("--vocab {vocab} × --hidden {hidden} overflows"));
        let layer = vocab.checked_mul(hidden).ok_or_else(overflow)?;
        let as_dtype = |stored: Dtype, params: u64| -> Result<u64> {
            let d = match dtype {
                Some(d) if stored.is_float() => d,
                _ => stored,
            };
            d.bytes_padded(params).ok_or_else(overflow)
        };
        let mut other_bytes = 0u64;
        let mut other_params = 0u64;
        for t in ckpt.tensors.values() {
            if t.name == emb.name || head.is_some_and(|h| h.name == t.name) {
                continue;
            }
            other_params += t.params();
            other_bytes += as_dtype(t.dtype, t.params())?;
        }
        let head_params_w = if w_tied { 0 } else { layer };
        let head_dtype = head.map_or(emb.dtype, |h| h.dtype);
        let sum = |parts: [u64; 3]| {
            parts
                .into_iter()
                .try_fold(0u64, u64::checked_add)
                .ok_or_else(overflow)
        };
        let total_params_w = sum([other_params, layer, head_params_w])?;
        let total_bytes_w = sum([
            other_bytes,
            as_dtype(emb.dtype, layer)?,
            as_dtype(head_dtype, head_params_w)?,
        ])?;
        Some(WhatIf {
            vocab,
            hidden,
            dtype: dtype.map(|d| d.to_string()),
            tied: w_tied,
            embedding_params: layer,
            head_params: head_params_w,
            total_params: total_params_w,
            total_bytes: total_bytes_w,
            vocab_share: ratio(layer + head_params_w, total_params_w),
            delta_params: total_params_w as i128 - total_params as i128,
            delta_bytes: total_bytes_w as i128 - total_bytes as i128,
        })
    } else {
        None
    };

    Ok(SizeReport {
        total_params,
        total_bytes,
        by_dtype,
        embedding: emb.map(|t| t.name.clone()),
        embedding_params,
        embedding_bytes,
        head: head.map(|t| t.name.clone()),
        head_params,
        head_bytes,
        vocab_params,
        vocab_bytes: embedding_bytes + head_bytes,
        vocab_share: ratio(vocab_params, total_params),
        tie_status: roles.tie.status,
        tying,
        what_if,
    })
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}
