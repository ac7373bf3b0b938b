//! `neighbors`: the rows nearest a query (cosine or dot), exact, for many
//! queries in one pass over the matrix. Queries are vocabulary entries,
//! `#ID`s, expressions `king - man + woman`, or mean-pooled texts.

use rayon::prelude::*;
use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::cmd::lookup::{encode_text, need_vocab, unknown_token};
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::roles::{Roles, Which};
use crate::search::{self, Hit, KernelChoice, Metric};
use crate::vocab::{Vocab, WordMatch};
use crate::{Error, Result};

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

/// One query as the user wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum QuerySpec {
    /// A token, `#ID` or `a - b + c` expression.
    Expr(String),
    /// A text whose token rows are averaged (`--text`).
    Text(String),
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
        !self.filters.is_empty()
            || self.queries.iter().any(|q| match q {
                QuerySpec::Text(_) => true,
                QuerySpec::Expr(e) => parse_expression(e)
                    .map_or(true, |terms| terms.iter().any(|(_, w)| row_id(w).is_none())),
            })
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

/// One resolved term of a query.
#[derive(Debug, Clone, Serialize)]
pub struct Term {
    /// `+1` or `-1`.
    pub sign: i8,
    /// The term as written.
    pub text: String,
    /// The row used (for `--text`, every token's row).
    pub ids: Vec<u32>,
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
        let (t, v) = resolve(ckpt, &m, vocab, q, &mut notes)?;
        terms.push(t);
        vectors.push(v);
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

/// Splits `king - man + woman` into signed terms. Operators need spaces
/// around them, so `e-mail` and `C++` stay single terms. A query typed
/// with a leading space (`" king"`) keeps it on its first term, which then
/// asks for the leading-space entry (see [`Vocab::resolve_word`]).
pub fn parse_expression(expr: &str) -> Result<Vec<(i8, String)>> {
    let mut terms = Vec::new();
    let mut sign = 1i8;
    let mut current: Vec<&str> = Vec::new();
    let mut after_operator = false;
    for w in expr.split_whitespace() {
        if w == "+" || w == "-" {
            if !current.is_empty() {
                terms.push((sign, current.join(" ")));
                current.clear();
            } else if after_operator {
                return Err(Error::BadInput(format!(
                    "expression `{expr}`: operator `{w}` follows another operator"
                )));
            } else {
                return Err(Error::BadInput(format!(
                    "expression `{expr}` starts with an operator; for the entry `{w}` write `={w}`"
                )));
            }
            sign = if w == "-" { -1 } else { 1 };
            after_operator = true;
        } else {
            current.push(w);
            after_operator = false;
        }
    }
    if current.is_empty() {
        return Err(Error::BadInput(if after_operator {
            format!("expression `{expr}` ends with an operator")
        } else {
            format!("query `{expr}` is empty")
        }));
    }
    terms.push((sign, current.join(" ")));
    // `#ID` and `=entry` name their row themselves.
    if expr.starts_with(' ') && !terms[0].1.starts_with(['#', '=']) {
        terms[0].1.insert(0, ' ');
    }
    Ok(terms)
}

/// Resolves one query into its terms and its vector.
fn resolve(
    ckpt: &Checkpoint,
    m: &Matrix,
    vocab: Option<&Vocab>,
    q: &QuerySpec,
    notes: &mut Vec<String>,
) -> Result<(Vec<Term>, Vec<f32>)> {
    match q {
        QuerySpec::Text(text) => {
            let ids = encode_text(ckpt, vocab, text, false, "query rows as #ID")?;
            let mut mean = vec![0f32; m.cols()];
            for &id in &ids {
                let row = m.checked_row(u64::from(id))?;
                mean.iter_mut().zip(&row).for_each(|(a, b)| *a += b);
            }
            let n = ids.len() as f32;
            mean.iter_mut().for_each(|x| *x /= n);
            Ok((
                vec![Term {
                    sign: 1,
                    text: text.clone(),
                    ids,
                }],
                mean,
            ))
        }
        QuerySpec::Expr(expr) => {
            let parts = parse_expression(expr)?;
            let single = parts.len() == 1 && parts[0].0 == 1;
            let mut terms = Vec::with_capacity(parts.len());
            let mut sum = vec![0f32; m.cols()];
            for (sign, word) in parts {
                let id = term_id(ckpt, vocab, &word, notes)?;
                let row = m.checked_row(id)?;
                // In range, and Matrix::new keeps rows within u32.
                let id = id as u32;
                if single {
                    sum = row;
                } else {
                    // gensim's most_similar: unit-normalise each term, then average.
                    let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
                    if norm > 0.0 {
                        let w = f32::from(sign) / norm;
                        sum.iter_mut().zip(&row).for_each(|(a, b)| *a += w * b);
                    }
                }
                terms.push(Term {
                    sign,
                    text: word,
                    ids: vec![id],
                });
            }
            if !single {
                let n = terms.len() as f32;
                sum.iter_mut().for_each(|x| *x /= n);
            }
            Ok((terms, sum))
        }
    }
}

/// The row of one term: `#ID`, or a word resolved in the vocabulary.
fn term_id(
    ckpt: &Checkpoint,
    vocab: Option<&Vocab>,
    word: &str,
    notes: &mut Vec<String>,
) -> Result<u64> {
    if let Some(id) = row_id(word) {
        return id;
    }
    let v = need_vocab(ckpt, vocab, &format!("query `{word}`"), "query rows as #ID")?;
    if let Some(found) = v.resolve_word(word) {
        notes.extend(resolution_note(v, word, &found));
        return Ok(u64::from(found.id));
    }
    if let Some(exact) = word.strip_prefix('=').filter(|e| !e.is_empty()) {
        return Err(unknown_token(v, exact));
    }
    // Not one entry: say what it is made of, when the tokenizer can tell.
    if let Ok(ids) = v.encode(word, false)
        && ids.len() > 1
    {
        let pieces: Vec<String> = ids
            .iter()
            .map(|&id| format!("`{}`", v.readable(id).unwrap_or_else(|| format!("#{id}"))))
            .collect();
        return Err(Error::BadInput(format!(
            "`{word}` is not one vocabulary entry but {} tokens ({}); to average them use --text {word:?}",
            ids.len(),
            pieces.join(" ")
        )));
    }
    Err(unknown_token(v, word))
}

/// The note on how `word` resolved, when it was not taken as written or
/// another entry could be meant: the piece a bare word passed over, the
/// entry `==` itself when `==` asked for the entry `=`, or an entry whose
/// text is not the word (an entry stored in another form whose text is
/// the word, byte-level `åĮĹäº¬` for `北京` or `Ġking` for ` king`, needs
/// no note).
fn resolution_note(v: &Vocab, word: &str, found: &WordMatch) -> Option<String> {
    let (id, raw) = (found.id, &found.raw);
    if let Some((piece, piece_raw)) = &found.piece {
        return Some(format!(
            "{word:?} resolved to {raw:?} (#{id}, the word); for the piece {piece_raw:?} (#{piece}) write \"={word}\""
        ));
    }
    if word.starts_with('=') {
        return v.entry_id(word).filter(|&other| other != id).map(|other| {
            format!("{word:?} is the entry {raw:?} (#{id}); for the entry {word:?} (#{other}) write \"={word}\"")
        });
    }
    (raw != word && v.readable(id).as_deref() != Some(word))
        .then(|| format!("{word:?} resolved to {raw:?} (#{id})"))
}

/// The row of a `#ID` term, `None` for other terms.
fn row_id(word: &str) -> Option<Result<u64>> {
    let digits = word.strip_prefix('#')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Err(Error::BadInput(format!(
            "#ID takes a non-negative integer, got {word:?}; for the vocabulary entry write \"={word}\""
        ))));
    }
    // Digits only: parsing fails on overflow alone.
    Some(
        digits
            .parse::<u64>()
            .map_err(|_| Error::BadInput(format!("`{word}` is not a row id: more than 64 bits"))),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        let ok = |s: &str| parse_expression(s).unwrap();
        assert_eq!(ok("Paris"), [(1, "Paris".to_string())]);
        assert_eq!(
            ok("king - man + woman"),
            [(1, "king".into()), (-1, "man".into()), (1, "woman".into())]
        );
        assert_eq!(ok("e-mail"), [(1, "e-mail".to_string())]);
        assert_eq!(ok("C++"), [(1, "C++".to_string())]);
        assert_eq!(ok(" king"), [(1, " king".to_string())]);
        assert_eq!(ok(" #5"), [(1, "#5".to_string())]);
        assert_eq!(
            ok(" king  -  man"),
            [(1, " king".into()), (-1, "man".into())]
        );
        for bad in ["", "   ", "king -", "king + + man", "- man", "+ man", "-"] {
            assert!(parse_expression(bad).is_err(), "{bad:?}");
        }
    }
}
