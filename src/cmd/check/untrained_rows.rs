//! Which rows look untrained, per stored matrix, for the findings about
//! what training would feed the model (a chat template's tokens, a data
//! set's): the embedding's combined score as `undertrained --matrix
//! embed` makes it (see `candidates`), and a separately stored head's as
//! `undertrained --matrix head` makes it without a reference set: the
//! robust z-score of its row norms, from the norms the value pass keeps.
//! (The head's cosine indicator needs a principal component and a pass
//! of its own, which these findings do not wait for.) A row looks
//! untrained at [`STRONG`] or more.

use serde_json::{Value, json};

use super::Subject;
use super::candidates::EmbedScores;
use super::pass::Scanned;
use crate::score::STRONG;
use crate::score::robust::{Direction, combine, robust_z};

/// One matrix's combined score per row.
pub(super) struct Scored {
    /// The tensor.
    pub tensor: String,
    /// Every row's score (NaN where there is none).
    pub scores: Vec<f64>,
}

impl Scored {
    fn of(&self, id: u32) -> Option<f64> {
        self.scores
            .get(id as usize)
            .copied()
            .filter(|x| x.is_finite())
    }
}

/// The scores of the embedding and of a separately stored head.
pub(super) struct UntrainedRows {
    embed: Option<Scored>,
    head: Option<Scored>,
}

impl UntrainedRows {
    /// From the embedding's scores (when its values could be read) and the
    /// head's norms in `scanned`.
    pub(super) fn new(s: &Subject, scanned: &[Scanned], embed: Option<&EmbedScores>) -> Self {
        let embed = s.embedding.zip(embed).map(|(t, e)| Scored {
            tensor: t.name.clone(),
            scores: e.scores.clone(),
        });
        let head = s.head.and_then(|t| {
            let (_, stats) = scanned
                .iter()
                .find(|x| x.tensor.name == t.name)?
                .stats
                .as_ref()
                .ok()?;
            let z = robust_z(&stats.norms, Direction::LowLog);
            Some(Scored {
                tensor: t.name.clone(),
                scores: combine(vec![z], stats.norms.len()),
            })
        });
        UntrainedRows { embed, head }
    }

    /// Whether any matrix was scored.
    pub(super) fn any(&self) -> bool {
        self.embed.is_some() || self.head.is_some()
    }

    /// The tensors whose row `id` looks untrained.
    pub(super) fn rows_of(&self, id: u32) -> Vec<&str> {
        [&self.embed, &self.head]
            .into_iter()
            .flatten()
            .filter(|m| m.of(id).is_some_and(|x| x >= STRONG))
            .map(|m| m.tensor.as_str())
            .collect()
    }

    /// Whether row `id` looks untrained in any matrix.
    pub(super) fn looks_untrained(&self, id: u32) -> bool {
        !self.rows_of(id).is_empty()
    }

    /// The evidence of one token: its id and readable token, the tensors
    /// whose row looks untrained, and the score of each matrix there is.
    pub(super) fn evidence(&self, s: &Subject, id: u32) -> Value {
        let mut e = json!({
            "id": id,
            "token": s.vocab.and_then(|v| v.readable(id)),
            "rows": self.rows_of(id),
        });
        // A score for each matrix there is (null: the row has none).
        for (key, m) in [("embed_score", &self.embed), ("head_score", &self.head)] {
            if let Some(m) = m {
                e[key] = json!(m.of(id));
            }
        }
        e
    }
}
