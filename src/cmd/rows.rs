//! `rows`: every row's figures in one table, for a notebook to plot as it
//! likes: id, token, kind, the embedding's and the head's L2 norms, and the
//! under-trained indicators, score and flags. The figures are those of an
//! `undertrained` run (one streaming pass per matrix), kept for every row
//! where `undertrained` lists its top ones; this module names the rows.

use rayon::prelude::*;
use serde::Serialize;

use crate::score::{EveryRow, STRONG};
pub use crate::vocab::RowKind;

/// What the scoring ran on, as its report names it, and its figures.
#[derive(Debug)]
pub struct Scored {
    /// The MODEL argument as given.
    pub model: String,
    /// The embedding scored (null when not).
    pub embedding: Option<String>,
    /// The head scored (the embedding's name when tied; null when not).
    pub head: Option<String>,
    /// The indicators the combined score averages.
    pub indicators: Vec<&'static str>,
    /// Every row's figures, and the vocabulary.
    pub every_row: EveryRow,
}

/// One row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Row id.
    pub id: u32,
    /// Readable token; null without one.
    pub token: Option<String>,
    /// What the row is; null without a tokenizer.
    pub kind: Option<RowKind>,
    /// L2 norm of the embedding row.
    pub embed_norm: Option<f32>,
    /// L2 norm of the head row; null when the head is the embedding
    /// (tied) or not scored.
    pub head_norm: Option<f32>,
    /// The head row's cosine to the reference mean, first principal
    /// component removed (null without reference rows).
    pub head_cosine: Option<f32>,
    /// The embedding row's distance to the reference mean (null without
    /// reference rows).
    pub embed_distance: Option<f32>,
    /// Combined score: the mean of the indicators' oriented robust
    /// z-scores (null for a row holding NaN or Inf).
    pub score: Option<f64>,
    /// The score reaches the strong threshold.
    pub strong: bool,
    /// The row is in the reference set (known untrained).
    pub reference: bool,
}

/// The `rows` report.
#[derive(Debug, Serialize)]
pub struct RowsReport {
    /// The MODEL argument as given.
    pub model: String,
    /// The embedding read (null when not).
    pub embedding: Option<String>,
    /// The head read (null when none, or left out).
    pub head: Option<String>,
    /// Whether the head is the embedding (`head_norm` is then null).
    pub tied: bool,
    /// The indicators the combined score averages.
    pub indicators: Vec<&'static str>,
    /// The strong threshold on the score.
    pub threshold: f64,
    /// Rows in the reference set.
    pub reference_rows: usize,
    /// Whether a tokenizer named the rows.
    pub tokenizer: bool,
    /// Every row, by id.
    pub rows: Vec<Row>,
}

/// Names every row of `scored` and gathers its figures.
pub fn run(scored: Scored) -> RowsReport {
    let Scored {
        model,
        embedding,
        head,
        indicators,
        every_row,
    } = scored;
    let EveryRow {
        indicators: ind,
        scores,
        reference,
        vocab,
    } = every_row;
    let tied = embedding.is_some() && embedding == head;
    let vocab = vocab.as_deref();
    let kinds = vocab.map(|v| v.row_kinds());
    let pick = |v: &Option<Vec<f32>>, i: usize| v.as_ref().map(|v| v[i]);
    let rows = (0..scores.len())
        .into_par_iter()
        .map(|i| {
            let id = i as u32;
            let score = scores[i];
            Row {
                id,
                token: vocab.and_then(|v| v.readable(id)),
                kind: kinds.as_ref().map(|k| k.of(id)),
                embed_norm: pick(&ind.embed_norm, i),
                head_norm: pick(&ind.head_norm, i),
                head_cosine: pick(&ind.head_cosine, i),
                embed_distance: pick(&ind.embed_distance, i),
                score: Some(score).filter(|s| s.is_finite()),
                strong: score >= STRONG,
                reference: reference.binary_search(&id).is_ok(),
            }
        })
        .collect();
    RowsReport {
        model,
        embedding,
        head,
        tied,
        indicators,
        threshold: STRONG,
        reference_rows: reference.len(),
        tokenizer: vocab.is_some(),
        rows,
    }
}
