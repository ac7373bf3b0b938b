//! `report`: one page of a model's vocabulary layers, made of the
//! commands' reports: `info` and `size` (with what-if figures), `check`,
//! `undertrained`, with a base model `diff`, and a map of the embedding's
//! rows. It sits above the commands, which never import each other, and
//! calls their library functions, so that the page shows their `--json`
//! and nothing computed a second way; `render::report` draws it.
//!
//! The matrices are read as few times as the commands allow: the
//! vocabulary loads once, while `check`'s value pass runs, and is handed
//! to the pass (the embedding's rows are dotted with the reference mean in
//! the same read, see `check::ValuePass::set_vocab`), then to `info` and
//! `diff`, and then to `undertrained`, which streams each matrix once more and names
//! the rows for the map. The map's sample is read between the two, while
//! the pass's pages are still mapped.
//!
//! A section that cannot be made (a model without an embedding, a dtype
//! whose values cannot be read) says why in the page; the others are
//! made.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the request, the report, the order the commands run in |
//! | `what_if.rs` | the `size` scenarios the page compares: the other tie, another vocabulary size |
//! | `map.rs` | the embedding's rows on the first two principal components of an even sample |

mod map;
mod what_if;

use std::sync::OnceLock;

use serde::Serialize;

pub use map::{MapReport, Point};
pub use what_if::WhatIf;

use crate::checkpoint::Checkpoint;
use crate::cmd::check::{Check, CheckReport, ValuePass};
use crate::cmd::diff::{self, DiffReport};
use crate::cmd::info::{self, InfoReport};
use crate::cmd::rows::{self, Row, RowKind, RowsReport, Scored};
use crate::cmd::size::{self, Scenario, SizeReport};
use crate::cmd::undertrained::{self, ReferenceSpec, UndertrainedReport};
use crate::progress::Progress;
use crate::roles::{Roles, Which};
use crate::rows::component::Plane;
use crate::vocab::Vocab;
use crate::{Error, Result};

/// Rows of note the map shows beside its even sample, at most.
const MAX_NOTED: usize = 1024;

/// What `report` is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// Draw progress bars for the passes.
    pub progress: bool,
}

/// The base model of a fine-tune, opened, for the page's `diff` section.
pub type Base<'a> = diff::Model<'a>;

/// What a row on the map is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// A row of the even sample, of no note.
    Row,
    /// A special or control token.
    Special,
    /// A reserved placeholder, or an id no entry has.
    Reserved,
    /// A row beyond the tokenizer.
    Padding,
    /// A row whose under-trained score is strong.
    #[serde(rename = "untrained-looking")]
    Untrained,
}

/// A section the page could not show, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    /// The section: `check`, `undertrained`, `diff` or `map`.
    pub section: &'static str,
    /// Why, in one line.
    pub reason: String,
}

/// The `report`: each command's report as its `--json` has it.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The MODEL argument as given.
    pub model: String,
    /// `info`.
    pub info: InfoReport,
    /// `size`.
    pub size: SizeReport,
    /// `size` under the what-if flags the page compares.
    pub what_if: Vec<WhatIf>,
    /// `check` (null when it could not run: see `missing`).
    pub check: Option<CheckReport>,
    /// `undertrained` with its defaults (null when it could not run).
    pub undertrained: Option<UndertrainedReport>,
    /// `diff BASE MODEL` with its defaults (null without a base, or when
    /// it could not run).
    pub diff: Option<DiffReport>,
    /// The map of the embedding (null when it could not be made).
    pub map: Option<MapReport>,
    /// The sections that could not be made, and why.
    pub missing: Vec<Missing>,
}

/// The `undertrained` request of the page: the command's defaults.
fn undertrained_request(progress: bool) -> undertrained::Request {
    undertrained::Request {
        top: undertrained::DEFAULT_TOP,
        matrix: None,
        reference: ReferenceSpec::Auto,
        reachability: true,
        include_reference: false,
        progress,
    }
}

/// Makes the report of `ckpt`, loading its vocabulary with `load` (as
/// `undertrained` needs it: with the merges' places kept for the
/// reachability test), and compared with `base` when given. A vocabulary
/// that fails to load is an error, as it is for each command; a section
/// that fails is a [`Missing`] one.
pub fn run(
    ckpt: &Checkpoint,
    roles: &Roles,
    load: impl FnOnce() -> Result<Option<Vocab>> + Send,
    base: Option<Base>,
    req: &Request,
) -> Result<Report> {
    let mut missing = Vec::new();
    let mut lacks = |section, e: Error| {
        missing.push(Missing {
            section,
            reason: e.to_string(),
        })
    };
    let size = size::run(ckpt, roles, &Scenario::default())?;
    let held: OnceLock<Option<Vocab>> = OnceLock::new();
    let (check, vocab) = checked(ckpt, roles, load, &held, req)?;
    let what_if = what_if::scenarios(ckpt, roles, &size, vocab.map(Vocab::size))?;
    let check = check.map_err(|e| lacks("check", e)).ok();
    let info = info::run(ckpt, roles, vocab);
    let diff = base.and_then(|base| {
        let tuned = diff::Model { ckpt, roles, vocab };
        let request = diff::Request {
            matrix: None,
            top: diff::DEFAULT_TOP,
            by_id: false,
            progress: req.progress,
        };
        diff::run(base, tuned, &request)
            .map_err(|e| lacks("diff", e))
            .ok()
    });
    // The map's sample is read while the pass's pages are still mapped.
    let sampled = (roles.matrix(ckpt, Which::Embed))
        .and_then(|t| ckpt.matrix(t))
        .map(|m| {
            let plane = map::sample(&m);
            (m, plane)
        });
    let load = || Ok::<_, Error>(held.into_inner().flatten());
    let request = undertrained_request(req.progress);
    let mut scored = undertrained::run_loading(ckpt, roles, |_| load(), &request)
        .map_err(|e| lacks("undertrained", e))
        .ok();
    let rows = scored.as_mut().map(|u| {
        rows::run(Scored {
            model: u.model.clone(),
            embedding: u.embedding.clone(),
            head: u.head.clone(),
            indicators: u.indicators.clone(),
            every_row: std::mem::take(&mut u.every_row),
        })
    });
    let map = match sampled {
        Ok((m, plane)) => {
            let noted = noted(rows.as_ref(), &plane);
            Some(map::map(&plane, &m, &noted, |id| {
                describe(rows.as_ref(), id)
            }))
        }
        Err(e) => {
            lacks("map", e);
            None
        }
    };
    Ok(Report {
        model: ckpt.model.clone(),
        info,
        size,
        what_if,
        check,
        undertrained: scored,
        diff,
        map,
        missing,
    })
}

/// `check`, as `check::run` makes it, but with the vocabulary kept (in
/// `held`) for the commands after it, and the pages left mapped for them.
/// Returns its report (or why there is none) and the vocabulary.
fn checked<'h>(
    ckpt: &Checkpoint,
    roles: &Roles,
    load: impl FnOnce() -> Result<Option<Vocab>> + Send,
    held: &'h OnceLock<Option<Vocab>>,
    req: &Request,
) -> Result<(Result<CheckReport>, Option<&'h Vocab>)> {
    let readable = roles.need_tensors(ckpt);
    let pass = ValuePass::new(ckpt, roles);
    let progress = Progress::new(req.progress && readable.is_ok(), pass.rows(), &pass.label());
    let (values, started) = rayon::join(
        || readable.is_ok().then(|| pass.run(&progress)),
        || -> Result<_> {
            let loaded = load().inspect_err(|_| progress.cancel())?;
            let vocab = held.get_or_init(|| loaded).as_ref();
            pass.set_vocab(vocab);
            Ok(Check::start(ckpt, roles, vocab))
        },
    );
    let started = started?;
    let vocab = held.get().and_then(Option::as_ref);
    let report = match (readable, started, values) {
        (Err(e), _, _) | (_, Err(e), _) => Err(e),
        (Ok(()), Ok(check), Some(values)) => Ok(check.finish(values)),
        (Ok(()), Ok(_), None) => unreachable!("the pass runs when the tensors are there"),
    };
    Ok((report, vocab))
}

/// What row `row` is on the map.
fn group(row: &Row) -> Group {
    match row.kind {
        Some(RowKind::Special) => Group::Special,
        Some(RowKind::Reserved | RowKind::Unused) => Group::Reserved,
        Some(RowKind::Padding) => Group::Padding,
        _ if row.strong => Group::Untrained,
        _ => Group::Row,
    }
}

/// The token, group and score of row `id`, from the `rows` report.
fn describe(rows: Option<&RowsReport>, id: u32) -> (Option<String>, Group, Option<f32>) {
    match rows.and_then(|r| r.rows.get(id as usize)) {
        Some(row) => (row.token.clone(), group(row), row.score.map(|s| s as f32)),
        None => (None, Group::Row, None),
    }
}

/// The rows of note the map adds to its sample, at most [`MAX_NOTED`]:
/// taken from each group in turn (special, untrained-looking, reserved,
/// padding), so that a large group leaves room for the others; within a
/// group, the best-scored first.
fn noted(rows: Option<&RowsReport>, plane: &Plane) -> Vec<u32> {
    let Some(rows) = rows else {
        return Vec::new();
    };
    let order = [
        Group::Special,
        Group::Untrained,
        Group::Reserved,
        Group::Padding,
    ];
    let mut groups: Vec<Vec<(f64, u32)>> = vec![Vec::new(); order.len()];
    for r in rows.rows.iter().filter(|r| !map::sampled(plane, r.id)) {
        if let Some(k) = order.iter().position(|&g| g == group(r)) {
            groups[k].push((r.score.unwrap_or(f64::NEG_INFINITY), r.id));
        }
    }
    for g in &mut groups {
        g.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        g.reverse();
    }
    let mut noted = Vec::new();
    while noted.len() < MAX_NOTED && groups.iter().any(|g| !g.is_empty()) {
        for g in &mut groups {
            if noted.len() < MAX_NOTED
                && let Some((_, id)) = g.pop()
            {
                noted.push(id);
            }
        }
    }
    noted
}
