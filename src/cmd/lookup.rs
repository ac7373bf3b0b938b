//! `lookup`: the stored rows of tokens given by id, by vocabulary entry, or
//! by tokenizing a text. Reads only the rows asked for.

use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::matrix::Matrix;
use crate::query::{encode_text, need_vocab, token_id};
use crate::roles::{Roles, Which};
use crate::vocab::Vocab;
use crate::{Error, Result};

/// What to look up.
#[derive(Debug, Clone)]
pub enum Query {
    /// Row ids, as inclusive ranges (`5` is `(5, 5)`), checked against the
    /// matrix before any is listed.
    Ids(Vec<(u64, u64)>),
    /// Exact vocabulary entries.
    Tokens(Vec<String>),
    /// A text to tokenize, with or without special tokens.
    Text {
        /// The text.
        text: String,
        /// Add BOS/CLS/... as the tokenizer's post-processor does.
        add_special_tokens: bool,
    },
}

/// The `lookup` report.
#[derive(Debug, Serialize)]
pub struct LookupReport {
    /// The tensor read.
    pub matrix: String,
    /// Which role it was asked for as.
    pub role: Which,
    /// Its stored dtype.
    pub dtype: String,
    /// Its shape.
    pub shape: [usize; 2],
    /// Whether a tokenizer named the rows (`token` is null on every row without one).
    pub tokenizer: bool,
    /// One entry per requested row, in request order.
    pub rows: Vec<Row>,
}

/// One row.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Token id (row index).
    pub id: u32,
    /// The token, readable (null without a tokenizer or beyond its vocabulary).
    pub token: Option<String>,
    /// L2 norm of the row.
    pub norm: f32,
    /// The stored values, converted to f32 exactly (F64 rounds).
    pub values: Vec<f32>,
}

/// Looks up `query` in the `which` matrix.
pub fn run(
    ckpt: &Checkpoint,
    roles: &Roles,
    vocab: Option<&Vocab>,
    which: Which,
    query: &Query,
) -> Result<LookupReport> {
    let t = roles.matrix(ckpt, which)?;
    let m = ckpt.matrix(t)?;
    let ids = resolve(ckpt, vocab, query, &m)?;
    let rows = ids
        .into_iter()
        .map(|id| {
            let values = m.checked_row(id)?;
            // In range, and Matrix::new keeps rows within u32.
            let id = id as u32;
            let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
            Ok(Row {
                id,
                token: vocab.and_then(|v| v.readable(id)),
                norm,
                values,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(LookupReport {
        matrix: t.name.clone(),
        role: which,
        dtype: t.dtype.to_string(),
        shape: [m.rows(), m.cols()],
        tokenizer: vocab.is_some(),
        rows,
    })
}

fn resolve(
    ckpt: &Checkpoint,
    vocab: Option<&Vocab>,
    query: &Query,
    m: &Matrix,
) -> Result<Vec<u64>> {
    match query {
        Query::Ids(ranges) => {
            // Bounded before anything is listed: `0-99999999999` is an
            // error, not an allocation.
            let rows = m.rows() as u64;
            let mut total = 0u64;
            for &(a, b) in ranges {
                if b >= rows {
                    // The error naming the id and the matrix's rows.
                    m.checked_row(b)?;
                }
                total += (b + 1).saturating_sub(a);
            }
            if total > rows {
                return Err(Error::BadInput(format!(
                    "--id names {total} rows, more than the {} of `{}`",
                    m.rows(),
                    m.name()
                )));
            }
            Ok(ranges.iter().flat_map(|&(a, b)| a..=b).collect())
        }
        Query::Tokens(tokens) => {
            let v = need_vocab(ckpt, vocab, "--token", "use --id")?;
            tokens
                .iter()
                .map(|t| token_id(v, t).map(u64::from))
                .collect()
        }
        Query::Text {
            text,
            add_special_tokens,
        } => {
            let ids = encode_text(ckpt, vocab, text, *add_special_tokens, "use --id")?;
            Ok(ids.into_iter().map(u64::from).collect())
        }
    }
}
