//! `neighbors`: the rows nearest a query (cosine or dot), exact, for many
//! queries in one pass over the matrix. Queries are vocabulary entries,
//! `#ID`s, expressions `king - man + woman`, or mean-pooled texts.

use rayon::prelude::*;
use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::query::{self, need_vocab};
use crate::roles::{Roles, Which};
use crate::search::{self, Hit, KernelChoice, Metric};
use crate::vocab::Vocab;
use crate::{Error, Result};

pub use crate::query::{QuerySpec, Term};

/// Rows a result may come from (`--filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Leave out special tokens (BOS, EOS, `[CLS]` ...).
    NoSpecial,
    /// Leave out rows beyond the tokenizer (padding rows no token reaches).
    NoPadding,
    /// Only tokens that contain a letter.
    Letters,
}

/// What the search is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// The queries, answered in one pass.
    pub queries: Vec<QuerySpec>,
    /// Results per query.
    pub k: usize,
    /// Cosine or dot.
    pub metric: Metric,
    /// Keep the query's own tokens among the results.
    pub include_query: bool,
    /// Result filters.
    pub filters: Vec<Filter>,
    /// Draw a progress bar for long scans.
    pub progress: bool,
}

impl Request {
    /// Whether answering needs the tokenizer before the scan: a word term,
    /// a text or a filter. Queries made only of `#ID`s do not: the scan
    /// can start while the tokenizer loads, and tokens are named after it
    /// ([`NeighborsReport::name_tokens`]).
    pub fn needs_vocab(&self) -> bool {
        !self.filters.is_empty() || self.queries.iter().any(QuerySpec::needs_vocab)
    }
}

/// The `neighbors` report.
#[derive(Debug, Serialize)]
pub struct NeighborsReport {
    /// The tensor searched.
    pub matrix: String,
    /// Which role it was asked for as.
    pub role: Which,
    /// `cosine` or `dot`.
    pub metric: &'static str,
    /// Results per query (after clamping).
    pub k: usize,
    /// One answer per query, in order.
    pub queries: Vec<Answer>,
    /// How words were resolved, clamps and other notes.
    pub notes: Vec<String>,
    /// The search kernel that ran, and why (results do not depend on it).
    pub kernel: KernelChoice,
}

/// The answer to one query.
#[derive(Debug, Serialize)]
pub struct Answer {
    /// The query as given.
    pub query: String,
    /// The rows the query is made of.
    pub ids: Vec<u32>,
    /// Their readable tokens, in the same order (null without a tokenizer).
    pub tokens: Vec<Option<String>>,
    /// Each term with its sign and the entry used.
    pub terms: Vec<Term>,
    /// The nearest rows, best first.
    pub results: Vec<Neighbor>,
}

/// One result row.
#[derive(Debug, Serialize)]
pub struct Neighbor {
    /// 1-based rank.
    pub rank: usize,
    /// Token id.
    pub id: u32,
    /// The token, readable (null without a tokenizer).
    pub token: Option<String>,
    /// Cosine similarity or dot product.
    pub score: f32,
}

impl NeighborsReport {
    /// Fills in the readable tokens of every query's rows and every result
    /// from `vocab`.
    pub fn name_tokens(&mut self, vocab: &Vocab) {
        for a in &mut self.queries {
            a.tokens = a.ids.iter().map(|&id| vocab.readable(id)).collect();
            for n in &mut a.results {
                n.token = vocab.readable(n.id);
            }
        }
    }
}

/// Answers every query of `req` in one pass over the `which` matrix.
pub fn run(
    ckpt: &Checkpoint,
    roles: &Roles,
    vocab: Option<&Vocab>,
    which: Which,
    req: &Request,
) -> Result<NeighborsReport> {
    if req.k == 0 {
        return Err(Error::BadInput("-k must be at least 1".into()));
    }
    if req.queries.is_empty() {
        return Err(Error::BadInput(
            "no query: give a token, #ID, an expression such as \"king - man + woman\", --text or --batch".into(),
        ));
    }
    let t = roles.matrix(ckpt, which)?;
    let m = ckpt.matrix(t)?;
    let mut notes = Vec::new();
    let mut terms = Vec::with_capacity(req.queries.len());
    let mut vectors = Vec::with_capacity(req.queries.len());
    for q in &req.queries {
        let q = query::resolve(ckpt, &m, vocab, q, &mut notes)?;
        terms.push(q.terms);
        vectors.push(q.vector);
    }
    let mask = build_mask(ckpt, &m, vocab, &req.filters)?;
    let candidates = mask
        .as_ref()
        .map_or(m.rows(), |mk| mk.iter().filter(|&&b| b).count());
    let mut k = req.k;
    if k > candidates {
        notes.push(format!(
            "-k {} is more than the {candidates} candidate rows; showing {candidates}",
            req.k
        ));
        k = candidates;
    }
    let exclude_max = if req.include_query {
        0
    } else {
        terms.iter().map(|t| own_ids(t).len()).max().unwrap_or(0)
    };
    let progress = Progress::new(req.progress, m.rows() as u64, "scanning");
    let found = search::top_k(
        &m,
        &vectors,
        k + exclude_max,
        req.metric,
        mask.as_deref(),
        &progress,
    )?;
    // Nothing reads the matrix again: its mapped pages are let go on all
    // cores now rather than by one thread at exit.
    ckpt.release(&[t]);
    let queries = req
        .queries
        .iter()
        .zip(terms)
        .zip(found.lists)
        .map(|((spec, terms), hits)| {
            let own = own_ids(&terms);
            let results = hits
                .into_iter()
                .filter(|h: &Hit| req.include_query || !own.contains(&h.id))
                .take(k)
                .enumerate()
                .map(|(i, h)| Neighbor {
                    rank: i + 1,
                    id: h.id,
                    token: None,
                    score: h.score,
                })
                .collect();
            Answer {
                query: match spec {
                    QuerySpec::Expr(s) => s.clone(),
                    QuerySpec::Text(s) => format!("--text {s:?}"),
                },
                tokens: vec![None; own.len()],
                ids: own,
                terms,
                results,
            }
        })
        .collect();
    let mut report = NeighborsReport {
        matrix: t.name.clone(),
        role: which,
        metric: match req.metric {
            Metric::Cosine => "cosine",
            Metric::Dot => "dot",
        },
        k,
        queries,
        notes,
        kernel: found.kernel,
    };
    if let Some(v) = vocab {
        report.name_tokens(v);
    }
    Ok(report)
}

/// Reads `--batch FILE`: one query per line (token, `#ID` or expression);
/// blank lines are skipped.
pub fn read_batch(path: &std::path::Path) -> Result<Vec<QuerySpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| QuerySpec::Expr(l.to_string()))
        .collect())
}

/// Every id the query is made of, once, in order.
fn own_ids(terms: &[Term]) -> Vec<u32> {
    let mut ids: Vec<u32> = Vec::new();
    for id in terms.iter().flat_map(|t| t.ids.iter().copied()) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The candidate mask for `--filter`, or `None` when every row is a candidate.
fn build_mask(
    ckpt: &Checkpoint,
    m: &Matrix,
    vocab: Option<&Vocab>,
    filters: &[Filter],
) -> Result<Option<Vec<bool>>> {
    if filters.is_empty() {
        return Ok(None);
    }
    let v = need_vocab(ckpt, vocab, "--filter", "leave --filter out")?;
    let size = v.size();
    let mask = (0..m.rows())
        .into_par_iter()
        .map(|i| {
            let id = i as u32;
            filters.iter().all(|f| match f {
                Filter::NoSpecial => !v.is_special(id),
                Filter::NoPadding => i < size,
                Filter::Letters => v
                    .readable(id)
                    .is_some_and(|t| t.chars().any(char::is_alphabetic)),
            })
        })
        .collect();
    Ok(Some(mask))
}
