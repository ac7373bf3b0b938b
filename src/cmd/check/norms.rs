//! What `check --plot` and `report` draw of the value pass: every row's L2
//! norm in each matrix it read, and the rows of note among them: special,
//! reserved or unused, padding beyond the tokenizer, and untrained-looking
//! by the embedding indicators of `undertrained-candidates`. Kept out of
//! the JSON, which would grow by a number per row; `rows` exports those.

use super::Subject;
use super::pass::Scanned;
use crate::roles::TieStatus;
use crate::vocab::RowKind;

/// Every row's norm in each matrix read, and the rows of note.
#[derive(Debug, Default)]
pub struct RowNorms {
    /// The matrices whose values were read, embedding first.
    pub matrices: Vec<MatrixNorms>,
    /// Sets of rows of note, by id; a set may be empty.
    pub marked: Vec<Marked>,
}

/// One matrix's row norms.
#[derive(Debug)]
pub struct MatrixNorms {
    /// The tensor.
    pub name: String,
    /// `embedding`, `head`, or `embedding and tied head`.
    pub role: &'static str,
    /// Every row's L2 norm (NaN for a row holding NaN or Inf).
    pub norms: Vec<f32>,
}

/// A set of rows of note.
#[derive(Debug)]
pub struct Marked {
    /// What they are, for a legend.
    pub name: &'static str,
    /// Their ids, ascending.
    pub ids: Vec<u32>,
}

/// Takes the norms out of `scanned` and names the rows of note: by kind
/// when there is a vocabulary, and the `strong` rows of the embedding's
/// score.
pub(super) fn gather(s: &Subject, scanned: &mut [Scanned], strong: Vec<u32>) -> RowNorms {
    let embedding = s.embedding.map(|t| t.name.as_str());
    let tied = matches!(s.roles.tie.status, TieStatus::Tied)
        || (s.roles.tie.status == TieStatus::TiedHeadStored && scanned.len() == 1);
    let mut matrices: Vec<MatrixNorms> = scanned
        .iter_mut()
        .filter_map(|x| {
            let (_, stats) = x.stats.as_mut().ok()?;
            let is_embedding = embedding == Some(x.tensor.name.as_str());
            Some(MatrixNorms {
                name: x.tensor.name.clone(),
                role: match (is_embedding, tied) {
                    (true, true) => "embedding and tied head",
                    (true, false) => "embedding",
                    (false, _) => "head",
                },
                norms: std::mem::take(&mut stats.norms),
            })
        })
        .collect();
    matrices.sort_by_key(|m| m.role == "head");
    let rows = matrices.iter().map(|m| m.norms.len()).max().unwrap_or(0);
    let mut sets: [Vec<u32>; 3] = Default::default();
    if let Some(v) = s.vocab {
        let kinds = v.row_kinds();
        for id in 0..rows as u32 {
            match kinds.of_note(id) {
                Some(RowKind::Special) => sets[0].push(id),
                Some(RowKind::Reserved | RowKind::Unused) => sets[1].push(id),
                Some(RowKind::Padding) => sets[2].push(id),
                _ => {}
            }
        }
    }
    let [special, reserved, padding] = sets;
    let mut marked = vec![
        Marked {
            name: "special",
            ids: special,
        },
        Marked {
            name: "reserved or unused",
            ids: reserved,
        },
        Marked {
            name: "padding",
            ids: padding,
        },
    ];
    marked.push(Marked {
        name: "untrained-looking",
        ids: strong,
    });
    RowNorms { matrices, marked }
}
