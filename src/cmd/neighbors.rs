//! `neighbors`: the rows nearest a query (cosine or dot), exact, for many
//! queries in one pass over the matrix. Queries are vocabulary entries,
//! `#ID`s, expressions `king - man + woman`, or mean-pooled texts; a batch
//! of them is read one a line, and a line that cannot be answered is
//! reported with its number while the others are answered.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

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
    /// The queries, answered in one pass; one that cannot be answered
    /// stops the search.
    pub queries: Vec<QuerySpec>,
    /// Queries read from a file, answered after `queries` in the same
    /// pass; a line that cannot be answered is reported in
    /// [`NeighborsReport::errors`] and the others are still answered.
    pub batch: Option<Batch>,
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
        let lines = self.batch.iter().flat_map(|b| &b.lines);
        !self.filters.is_empty()
            || self.queries.iter().any(QuerySpec::needs_vocab)
            || lines.map(|(_, q)| q).any(QuerySpec::needs_vocab)
    }
}

/// Queries read one a line (`--batch`).
#[derive(Debug, Clone)]
pub struct Batch {
    /// Where they were read, as messages name it (`queries.txt`,
    /// `standard input`).
    pub source: String,
    /// Each query with its line number (from 1); blank lines are left out.
    pub lines: Vec<(usize, QuerySpec)>,
    /// The lines that are no text (not UTF-8), reported as they are read.
    pub unread: Vec<LineError>,
}

impl Batch {
    /// Reads the file at `path`, named in messages as given.
    pub fn read_file(path: &Path) -> Result<Batch> {
        crate::regular_file::input(path, "a file of queries, one a line")?;
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Batch::read(&path.display().to_string(), file)
    }

    /// Reads `reader` to its end, one query a line, naming it `source`.
    /// A line longer than [`MAX_QUERY_LINE`] is an error of its own, and
    /// is skipped without being held.
    pub fn read(source: &str, reader: impl Read) -> Result<Batch> {
        let mut batch = Batch {
            source: source.to_string(),
            lines: Vec::new(),
            unread: Vec::new(),
        };
        let io_error = |e| Error::io(Path::new(source), e);
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        for n in 1.. {
            line.clear();
            let cap = MAX_QUERY_LINE as u64 + 1;
            let read = (&mut reader).take(cap).read_until(b'\n', &mut line);
            if read.map_err(io_error)? == 0 {
                break;
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            } else if line.len() > MAX_QUERY_LINE {
                skip_line(&mut reader).map_err(io_error)?;
                batch.unread.push(LineError {
                    line: n,
                    query: String::from_utf8_lossy(&line[..40]).trim().to_string() + " …",
                    message: format!(
                        "longer than {} KiB: a query is a word, an expression or a text",
                        MAX_QUERY_LINE >> 10
                    ),
                });
                continue;
            }
            match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => batch
                    .lines
                    .push((n, QuerySpec::Expr(text.trim().to_string()))),
                Err(e) => batch.unread.push(LineError {
                    line: n,
                    query: String::from_utf8_lossy(&line).trim().to_string(),
                    message: format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1),
                }),
            }
        }
        Ok(batch)
    }
}

/// Bytes a line of `--batch` may have: far more than any query.
pub const MAX_QUERY_LINE: usize = 1 << 20;

/// Reads past the next newline (or to the end), holding nothing.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
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
    /// One answer per query, in order (a batch's lines that could not be
    /// answered left out).
    pub queries: Vec<Answer>,
    /// The lines of a batch that could not be answered, in order.
    pub errors: Vec<LineError>,
    /// How words were resolved, clamps and other notes.
    pub notes: Vec<String>,
    /// The search kernel that ran, and why (results do not depend on it);
    /// null when no query was left to scan for (every line of a batch
    /// failed).
    pub kernel: Option<KernelChoice>,
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

/// A line of a batch that could not be answered.
#[derive(Debug, Clone, Serialize)]
pub struct LineError {
    /// Its number, from 1.
    pub line: usize,
    /// The line as read, without surrounding whitespace.
    pub query: String,
    /// Why it could not be answered, in one line.
    pub message: String,
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
    let batch = req.batch.as_ref();
    if req.queries.is_empty() && batch.is_none_or(|b| b.lines.is_empty() && b.unread.is_empty()) {
        return Err(Error::BadInput(
            "no query: give a token, #ID, an expression such as \"king - man + woman\", --text or --batch".into(),
        ));
    }
    let t = roles.matrix(ckpt, which)?;
    let m = ckpt.matrix(t)?;
    let mut notes = Vec::new();
    // The queries answered, with their terms, and their vectors apart for
    // the search.
    let (mut asked, mut vectors) = (Vec::new(), Vec::new());
    let mut answer = |q, resolved: query::Resolved| {
        asked.push((q, resolved.terms));
        vectors.push(resolved.vector);
    };
    for q in &req.queries {
        answer(q, query::resolve(ckpt, &m, vocab, q, &mut notes)?);
    }
    let mut errors = batch.map_or_else(Vec::new, |b| b.unread.clone());
    for (line, q) in batch.iter().flat_map(|b| &b.lines) {
        match query::resolve(ckpt, &m, vocab, q, &mut notes) {
            Ok(resolved) => answer(q, resolved),
            Err(e) if of_the_query(&e) => errors.push(LineError {
                line: *line,
                query: query_text(q),
                message: e.to_string(),
            }),
            Err(e) => return Err(e),
        }
    }
    errors.sort_by_key(|e| e.line);
    let mask = build_mask(ckpt, &m, vocab, &req.filters)?;
    let candidates = mask
        .as_ref()
        .map_or(m.rows(), |mk| mk.iter().filter(|&&b| b).count());
    let k = req.k.min(candidates);
    let exclude_max = if req.include_query {
        0
    } else {
        (asked.iter())
            .map(|(_, terms)| own_ids(terms).len())
            .max()
            .unwrap_or(0)
    };
    let found = match vectors.is_empty() {
        true => None,
        false => {
            let progress = Progress::new(req.progress, m.rows() as u64, "scanning");
            let found = search::top_k(
                &m,
                &vectors,
                k + exclude_max,
                req.metric,
                mask.as_deref(),
                &progress,
            )?;
            Some(found)
        }
    };
    let (lists, kernel) = found.map_or((Vec::new(), None), |f| (f.lists, Some(f.kernel)));
    // Nothing reads the matrix again: its mapped pages are let go on all
    // cores now rather than by one thread at exit.
    ckpt.release(&[t]);
    let queries: Vec<Answer> = asked
        .into_iter()
        .zip(lists)
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
                query: query_text(spec),
                tokens: vec![None; own.len()],
                ids: own,
                terms,
                results,
            }
        })
        .collect();
    if req.k > candidates {
        // The query's own rows among the candidates are left out.
        let is_candidate = |id: &&u32| mask.as_ref().is_none_or(|mk| mk[**id as usize]);
        let own = |a: &Answer| match req.include_query {
            true => 0,
            false => a.ids.iter().filter(is_candidate).count(),
        };
        let counts: Vec<(usize, usize)> =
            queries.iter().map(|a| (a.results.len(), own(a))).collect();
        notes.push(clamp_note(req.k, candidates, &counts));
    }
    let mut report = NeighborsReport {
        matrix: t.name.clone(),
        role: which,
        metric: match req.metric {
            Metric::Cosine => "cosine",
            Metric::Dot => "dot",
        },
        k,
        queries,
        errors,
        notes,
        kernel,
    };
    if let Some(v) = vocab {
        report.name_tokens(v);
    }
    Ok(report)
}

/// Whether `e` is the fault of the query alone (a malformed expression,
/// an unknown token, an id beyond the matrix, a text the tokenizer cannot
/// encode), so that a batch goes on without it; anything else (no
/// tokenizer, a broken file) would fail every line alike.
fn of_the_query(e: &Error) -> bool {
    matches!(
        e,
        Error::BadInput(_)
            | Error::UnknownToken { .. }
            | Error::IdOutOfRange { .. }
            | Error::CannotEncode { .. }
    )
}

/// A query as answers and errors show it.
fn query_text(q: &QuerySpec) -> String {
    match q {
        QuerySpec::Expr(s) => s.clone(),
        QuerySpec::Text(s) => format!("--text {s:?}"),
    }
}

/// The note on `-k asked` beyond the `candidates` rows: how many rows the
/// answers show, each given as (rows shown, own rows left out), and why
/// fewer than the candidates: a query's own rows are left out, and a row
/// that is not finite has no score and never ranks.
fn clamp_note(asked: usize, candidates: usize, answers: &[(usize, usize)]) -> String {
    let shown = answers.iter().map(|&(n, _)| n);
    let showing = match (shown.clone().min(), shown.max()) {
        (Some(a), Some(b)) if a != b => format!("{a} to {b} per query"),
        (Some(a), _) => a.to_string(),
        _ => candidates.to_string(),
    };
    let own = answers.iter().any(|&(_, own)| own > 0);
    let unscored = answers.iter().any(|&(n, own)| n + own < candidates);
    let why = match (own, unscored) {
        (false, false) => "",
        (true, false) => ": all but the query's own rows",
        (false, true) => ": all but the rows that are not finite, which have no score",
        (true, true) => ": all but the query's own rows and those that are not finite",
    };
    format!("-k {asked} is more than the {candidates} candidate rows; showing {showing}{why}")
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
