//! `similarity`: the cosine between every pair of queries (tokens, `#ID`s,
//! expressions, texts: the forms `neighbors` takes, resolved by
//! [`crate::query`]), an order of the queries in which groups of similar
//! ones stand together, and a map of them in two principal components.
//! Reads the asked rows and nothing else.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the request, the report, the cosines |
//! | `order.rs` | the order of the queries: leaves of an average-linkage clustering |
//! | `map.rs` | two principal components of the queries' unit vectors, from the cosines |

mod map;
mod order;

use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::query::{self, QuerySpec, Term};
use crate::roles::{Roles, Which};
use crate::vocab::Vocab;
use crate::{Error, Result};

pub use map::Map;

/// Most queries compared at once: the cosines are `n²` numbers, and the
/// picture of more is no longer read cell by cell.
pub const MAX_QUERIES: usize = 1024;

/// One query, resolved.
#[derive(Debug, Serialize)]
pub struct Item {
    /// The query as given (`--text "…"` for a text).
    pub query: String,
    /// The rows it is made of, each once.
    pub ids: Vec<u32>,
    /// Their readable tokens, in the same order (null without a tokenizer).
    pub tokens: Vec<Option<String>>,
    /// Each term with its sign and rows.
    pub terms: Vec<Term>,
    /// The L2 norm of its vector.
    pub norm: f64,
}

/// The `similarity` report.
#[derive(Debug, Serialize)]
pub struct SimilarityReport {
    /// The tensor read.
    pub matrix: String,
    /// Which role it was asked for as.
    pub role: Which,
    /// The queries, in the order given.
    pub queries: Vec<Item>,
    /// `cosine[i][j]` between queries `i` and `j`, in f64 from the stored
    /// values; 0 with a zero vector, null (NaN) with one that is not finite.
    pub cosine: Vec<Vec<f64>>,
    /// The queries' indices in an order that keeps groups together (the
    /// leaves of an average-linkage clustering on `1 - cosine`).
    pub order: Vec<usize>,
    /// The queries' places in the plane of their two principal components.
    pub map: Map,
    /// How words were resolved, and vectors with no direction.
    pub notes: Vec<String>,
}

/// Resolves `queries` against the `which` matrix and compares them.
pub fn run(
    ckpt: &Checkpoint,
    roles: &Roles,
    vocab: Option<&Vocab>,
    which: Which,
    queries: &[QuerySpec],
) -> Result<SimilarityReport> {
    check_count(queries.len())?;
    let t = roles.matrix(ckpt, which)?;
    let m = ckpt.matrix(t)?;
    let mut notes = Vec::new();
    let mut items = Vec::with_capacity(queries.len());
    let mut vectors = Vec::with_capacity(queries.len());
    for spec in queries {
        let q = query::resolve(ckpt, &m, vocab, spec, &mut notes)?;
        let mut ids: Vec<u32> = Vec::new();
        for id in q.terms.iter().flat_map(|t| t.ids.iter().copied()) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let v: Vec<f64> = q.vector.iter().map(|&x| f64::from(x)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        items.push(Item {
            query: match spec {
                QuerySpec::Expr(s) => s.clone(),
                QuerySpec::Text(s) => format!("--text {s:?}"),
            },
            tokens: ids
                .iter()
                .map(|&id| vocab.and_then(|v| v.readable(id)))
                .collect(),
            ids,
            terms: q.terms,
            norm,
        });
        vectors.push(v);
    }
    for item in &items {
        if item.norm == 0.0 {
            notes.push(format!(
                "`{}` is a zero vector: it has no direction, and its cosines are 0",
                item.query
            ));
        } else if !item.norm.is_finite() {
            notes.push(format!(
                "`{}` holds values that are not finite: its cosines are NaN (null in JSON)",
                item.query
            ));
        }
    }
    let cosine = cosines(&vectors);
    let order = order::leaves(&cosine);
    let map = map::of(&cosine);
    Ok(SimilarityReport {
        matrix: t.name.clone(),
        role: which,
        queries: items,
        cosine,
        order,
        map,
        notes,
    })
}

/// An error unless `n` queries can be compared: at least one, at most
/// [`MAX_QUERIES`].
pub fn check_count(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::BadInput(
            "no query: give tokens, #IDs, expressions such as \"king - man + woman\", or --text"
                .into(),
        ));
    }
    if n > MAX_QUERIES {
        return Err(Error::BadInput(format!(
            "{n} queries given; similarity compares at most {MAX_QUERIES} (their cosines are n² numbers): for the nearest rows of many queries use neighbors"
        )));
    }
    Ok(())
}

/// The cosine of every pair of `vectors`, in f64: 0 where a vector is
/// zero, NaN where one is not finite.
fn cosines(vectors: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let squares: Vec<f64> = vectors
        .iter()
        .map(|v| v.iter().map(|x| x * x).sum::<f64>())
        .collect();
    let n = vectors.len();
    let mut c = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let (a, b) = (squares[i], squares[j]);
            let v = if !(a.is_finite() && b.is_finite()) {
                f64::NAN
            } else if a == 0.0 || b == 0.0 {
                0.0
            } else {
                let dot: f64 = vectors[i].iter().zip(&vectors[j]).map(|(x, y)| x * y).sum();
                // `√(a·b)`, not `√a·√b`: a vector's cosine with itself is
                // then `a / √(a²)`, exactly 1; the clamp keeps rounding
                // from taking others past ±1.
                (dot / (a * b).sqrt()).clamp(-1.0, 1.0)
            };
            c[i][j] = v;
            c[j][i] = v;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosines_of_zero_and_non_finite_vectors() {
        let v = vec![
            vec![1.0, 0.0],
            vec![1.0, 1.0],
            vec![0.0, 0.0],
            vec![f64::NAN, 1.0],
        ];
        let c = cosines(&v);
        assert_eq!(c[0][0], 1.0);
        assert!((c[0][1] - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15);
        assert_eq!(c[1][0], c[0][1]);
        assert_eq!((c[2][2], c[0][2]), (0.0, 0.0));
        assert!(c[3][0].is_nan() && c[3][3].is_nan());
    }

    #[test]
    fn counts_are_bounded() {
        assert!(check_count(0).is_err());
        assert!(check_count(1).is_ok());
        assert!(check_count(MAX_QUERIES).is_ok());
        let e = check_count(MAX_QUERIES + 1).unwrap_err().to_string();
        assert!(
            e.starts_with("1025 queries given; similarity compares at most 1024"),
            "{e}"
        );
    }
}
