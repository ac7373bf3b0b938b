//! `check`: a consistency audit of the vocabulary layers. Findings come in
//! two stages: header-only ones (side files that cannot be read, sizes,
//! special tokens, tie, dtypes, tokenizer self-consistency) computed from
//! headers and small files by [`Check::start`], which also reads the rows
//! of the tokenizer's related tokens by id (see `related`); then value
//! ones from one streaming pass over each stored matrix ([`ValuePass`],
//! see `pass` and `values`), which also says what the unreachable rows
//! hold, which embedding rows look untrained, and with the related
//! tokens whether the tokenizer belongs to the matrix (see `mismatch`).
//! The pass needs neither the tokenizer nor the header findings, so the
//! two stages run at the same time (the pass takes the vocabulary up once
//! it is loaded, see [`ValuePass::set_vocab`]); [`Check::finish`] joins
//! them into the report. [`run`] does all of it, in that order.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | findings, the report, the two stages, and [`run`] |
//! | `header.rs` | header-only findings: unreadable side files, sizes, padding, hidden sizes, tie, dtypes, the tokenizer's consistency |
//! | `special.rs` | special-token findings |
//! | `pass.rs` | the value pass over each stored matrix, and the reference mean it dots the embedding with |
//! | `values.rs` | value findings: NaN, infinities, zeros, norms and outliers, unreachable rows, head copies (`values/tests.rs`) |
//! | `duplicates.rs` | the `duplicate-rows` finding |
//! | `candidates.rs` | the `undertrained-candidates` finding |
//! | `pairs.rs` | related token pairs of a vocabulary (leading space, case, plural, digits) |
//! | `related.rs` | how close those pairs sit in the matrix, and its signs of training |
//! | `mismatch.rs` | the `tokenizer-mismatch` and `untrained-matrix` findings: whether the tokenizer belongs |
//! | `norms.rs` | every row's norm and the rows of note, for `check --plot` |
//! | `untrained_rows.rs` | which rows of each matrix look untrained, for the training findings |
//! | `data.rs` | `--data`: the tokens of a training set, counted on every core, against those rows |
//! | `added.rs` | the added tokens among those rows: `added-untrained` |
//! | `template.rs` | the chat template's own tokens against those rows: `template-uses-untrained` |

mod added;
mod candidates;
mod data;
mod duplicates;
mod header;
mod mismatch;
mod norms;
mod pairs;
mod pass;
mod related;
mod special;
mod template;
mod untrained_rows;
mod values;

use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{Value, json};

use crate::checkpoint::{Checkpoint, TensorEntry, Unreadable};
use crate::progress::Progress;
use crate::roles::Roles;
use crate::vocab::{self, SpecialDecl, Vocab};
use crate::{Error, Result};

pub use data::DataFile;
pub use norms::{Marked, MatrixNorms, RowNorms};
pub use template::Templates;

/// What `check` is asked about training, beyond the checkpoint itself.
#[derive(Debug, Default)]
pub struct Training {
    /// The chat templates to check against the rows they feed.
    pub templates: Templates,
    /// The data files of `--data`, opened.
    pub data: Vec<DataFile>,
}

/// How much a finding matters. Ordered: `Info < Warn < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// Likely to bite someone; the model still loads.
    Warn,
    /// The model will not load, or will not compute what was saved.
    Error,
}

impl Severity {
    /// The lowercase name, as JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

/// One thing `check` found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// A stable kebab-case code, documented in docs/check.md.
    pub code: &'static str,
    /// One line for a human.
    pub message: String,
    /// The facts behind it: counts, ids with readable tokens, tensor names, files.
    pub evidence: Value,
    /// Known before the value pass, which does not amend it: text output
    /// shows these while the pass runs (see [`Check::early`]).
    #[serde(skip)]
    pub early: bool,
}

impl Finding {
    fn new(severity: Severity, code: &'static str, message: String, evidence: Value) -> Self {
        Finding {
            severity,
            code,
            message,
            evidence,
            early: false,
        }
    }
}

/// Number of findings per severity.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    /// Errors.
    pub error: usize,
    /// Warnings.
    pub warn: usize,
    /// Informational findings.
    pub info: usize,
}

/// The `check` report.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// The MODEL argument as given.
    pub model: String,
    /// The embedding tensor checked (null when none was found).
    pub embedding: Option<String>,
    /// The separately stored head checked (null when tied or absent).
    pub head: Option<String>,
    /// The tokenizer size (highest id + 1), null without a tokenizer.json.
    pub tokenizer_size: Option<usize>,
    /// Findings, errors first, then warnings, then info; in check order within.
    pub findings: Vec<Finding>,
    /// Findings per severity.
    pub counts: Counts,
    /// Every row's norm and the rows of note, for pictures (not in the JSON).
    #[serde(skip)]
    pub norms: RowNorms,
}

impl CheckReport {
    /// The most severe finding, if any.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
}

/// Most items listed in a finding's evidence. Beside a list that may be
/// cut, the evidence carries `total` (the full count) and `truncated`
/// (whether the list holds fewer); see [`cut`].
pub(crate) const MAX_LISTED: usize = 20;

/// Whether a list of `total` items is cut to [`MAX_LISTED`]: the
/// `truncated` evidence field.
pub(crate) fn cut(total: usize) -> bool {
    total > MAX_LISTED
}

/// An id with its readable token (null when the tokenizer has no entry).
pub(crate) fn id_token(vocab: Option<&Vocab>, id: u32) -> Value {
    json!({"id": id, "token": vocab.and_then(|v| v.readable(id))})
}

/// The first [`MAX_LISTED`] ids with their tokens.
pub(crate) fn id_list(vocab: Option<&Vocab>, ids: &[u32]) -> Value {
    Value::Array(
        ids.iter()
            .take(MAX_LISTED)
            .map(|&id| id_token(vocab, id))
            .collect(),
    )
}

/// `12 "foo", 13 "bar"` for a message: the first few ids with tokens.
pub(crate) fn ids_phrase(vocab: Option<&Vocab>, ids: &[u32], n: usize) -> String {
    let mut parts: Vec<String> = ids
        .iter()
        .take(n)
        .map(|&id| match vocab.and_then(|v| v.readable(id)) {
            Some(t) => format!("{id} \"{t}\""),
            None => id.to_string(),
        })
        .collect();
    if ids.len() > n {
        parts.push(format!("… {} more", ids.len() - n));
    }
    parts.join(", ")
}

/// What the check works on: the checkpoint, its roles and vocabulary.
pub(crate) struct Subject<'a> {
    pub ckpt: &'a Checkpoint,
    pub roles: &'a Roles,
    pub vocab: Option<&'a Vocab>,
    pub embedding: Option<&'a TensorEntry>,
    pub head: Option<&'a TensorEntry>,
    /// Every special-token declaration, with the id it means.
    pub specials: Vec<Special>,
    /// Reserved placeholder ids of the vocabulary, ascending (see
    /// [`values::placeholders`]).
    pub placeholders: Vec<u32>,
    /// The files that could not be read, each with what the check skips
    /// for it.
    pub unreadable: Vec<(Unreadable, &'static str)>,
    /// Whether the vocabulary is missing because its files could not be
    /// read (not because there are none).
    pub vocab_unreadable: bool,
}

/// A special-token declaration and the id it means: as written, or the id
/// of its token string in the vocabulary.
pub(crate) struct Special {
    pub decl: SpecialDecl,
    pub id: Option<i64>,
}

/// The declarations of every file: from the vocabulary when there is one,
/// else from the config files alone; and the special-token files that
/// could not be read, which declare nothing.
fn specials(ckpt: &Checkpoint, vocab: Option<&Vocab>) -> (Vec<Special>, Vec<Unreadable>) {
    let dir = &ckpt.sources.dir;
    let (decls, unreadable) = match vocab {
        Some(v) => (v.special_decls().to_vec(), v.unreadable()),
        None => {
            let (decls, unreadable) =
                vocab::config_file_decls(dir, ckpt.config.as_ref().map(|c| &c.raw));
            let unreadable = unreadable
                .iter()
                .map(|e| Unreadable::from_error(e, dir))
                .collect();
            return (resolve(decls, None), unreadable);
        }
    };
    let unreadable = unreadable
        .iter()
        .map(|e| Unreadable::from_error(e, dir))
        .collect();
    (resolve(decls, vocab), unreadable)
}

/// Each declaration with the id it means.
fn resolve(decls: Vec<SpecialDecl>, vocab: Option<&Vocab>) -> Vec<Special> {
    decls
        .into_iter()
        .map(|decl| {
            let id = match (&decl.token, decl.id) {
                (Some(t), _) => vocab.and_then(|v| v.id(t)).map(i64::from),
                (None, id) => id,
            };
            Special { decl, id }
        })
        .collect()
}

/// A check under way: the header-only findings (sizes, special tokens,
/// tie, dtypes, tokenizer self-consistency) are known, from headers and
/// small files; the value pass over the matrices is still to run.
pub struct Check<'a> {
    s: Subject<'a>,
    findings: Vec<Finding>,
    /// How close the tokenizer's related tokens sit in the embedding (see
    /// `related`): read by id while the value pass runs.
    related: Option<related::Relatedness>,
    /// What each chat template emits, as this model's tokenizer encodes it.
    emitted: Vec<template::Emitted>,
    /// The tokens of the data files, counted.
    counted: data::Counted,
}

impl<'a> Check<'a> {
    /// Computes the header-only findings.
    pub fn start(ckpt: &'a Checkpoint, roles: &'a Roles, vocab: Option<&'a Vocab>) -> Result<Self> {
        Check::start_with(ckpt, roles, vocab, None, &Training::default())
    }

    /// [`Check::start`], with `vocab_unreadable` saying why there is no
    /// vocabulary when its files could not be read: an `unreadable-file`
    /// finding, and the rest of the check runs without it. The templates
    /// of `training` are rendered and encoded here.
    pub fn start_with(
        ckpt: &'a Checkpoint,
        roles: &'a Roles,
        vocab: Option<&'a Vocab>,
        vocab_unreadable: Option<Unreadable>,
        training: &Training,
    ) -> Result<Self> {
        crate::cpu::mask_ok()?;
        let (specials, special_files) = specials(ckpt, vocab);
        let vocab_files = vocab_unreadable.is_some();
        let unreadable = (ckpt.unreadable.iter().cloned())
            .map(|u| (u, "checks against the config are skipped"))
            .chain(vocab_unreadable.map(|u| (u, "checks against the tokenizer are skipped")))
            .chain(
                special_files
                    .into_iter()
                    .map(|u| (u, "the special tokens it declares are not checked")),
            )
            .collect();
        let s = Subject {
            ckpt,
            roles,
            vocab,
            embedding: roles.embedding.as_ref().and_then(|c| ckpt.tensor(&c.name)),
            head: roles.head.as_ref().and_then(|c| ckpt.tensor(&c.name)),
            specials,
            placeholders: vocab.map(values::placeholders).unwrap_or_default(),
            unreadable,
            vocab_unreadable: vocab_files,
        };
        // The related pairs' rows are read on a core the value pass
        // leaves free, if one is (a GGUF file's pass is often done first).
        let ((mut findings, (emitted, counted)), related) = rayon::join(
            || {
                let mut findings = header::findings(&s);
                findings.extend(special::findings(&s));
                let emitted = template::emitted(&training.templates, vocab);
                findings.extend(template::unreadable_finding(&training.templates, &s));
                findings.extend(template::early_findings(&emitted));
                let renderer = template::renderer(&training.templates, vocab);
                let counted = data::count(&training.data, vocab, renderer.as_ref());
                findings.extend(data::early_findings(&counted));
                (findings, (emitted, counted))
            },
            || {
                (vocab.zip(s.embedding.or(s.head)))
                    .and_then(|(v, t)| related::measure(&ckpt.matrix(t).ok()?, v))
            },
        );
        for f in &mut findings {
            // The value pass says what the unreachable rows hold.
            f.early = !header::UNREACHABLE_CODES.contains(&f.code);
        }
        findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        Ok(Check {
            s,
            findings,
            related,
            emitted,
            counted,
        })
    }

    /// The findings that need no value pass, errors first: they can be
    /// shown before it runs. The final report has them too, marked `early`.
    pub fn early(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.early)
    }

    /// Adds the findings of the value pass and returns the whole report.
    pub fn finish(self, values: Values) -> CheckReport {
        let Check {
            s,
            mut findings,
            related,
            emitted,
            counted,
        } = self;
        let Values {
            mut scanned,
            reference,
        } = values;
        // The embedding's sums (the only ones kept) are the candidates
        // finding's alone.
        let sums = scanned
            .iter_mut()
            .find_map(|x| x.stats.as_mut().ok()?.1.sums.take());
        let mut strong = Vec::new();
        let (from_values, embed) = rayon::join(
            || values::findings(&s, &scanned, &mut findings),
            || candidates::embed_scores(&s, &scanned, sums, &reference),
        );
        findings.extend(from_values);
        findings.extend((embed.as_ref()).and_then(|e| candidates::finding(&s, e, &mut strong)));
        let untrained = untrained_rows::UntrainedRows::new(&s, &scanned, embed.as_ref());
        findings.extend(added::finding(&s, &untrained));
        findings.extend(template::findings(&s, &emitted, &untrained));
        findings.extend(data::findings(&s, &counted, &untrained));
        let belonging = mismatch::findings(&s, &scanned, related.as_ref(), &mut findings);
        findings.extend(belonging);
        // Stable: early findings keep their place within a severity.
        findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        let norms = norms::gather(&s, &mut scanned, strong);
        report(&s, findings, norms)
    }
}

/// The value pass of a check: one streaming pass over each stored matrix
/// (the head unless it is a tied copy, then the embedding). It needs
/// neither the tokenizer nor the header findings, so it can run while
/// [`Check::start`] reads them.
pub struct ValuePass<'a> {
    ckpt: &'a Checkpoint,
    matrices: Vec<&'a TensorEntry>,
    embedding: Option<&'a TensorEntry>,
    /// The embedding's reference rows and mean, once the vocabulary is known.
    reference: Arc<OnceLock<pass::Reference>>,
}

/// What the value pass learnt, for [`Check::finish`].
pub struct Values<'a> {
    scanned: Vec<pass::Scanned<'a>>,
    reference: Arc<OnceLock<pass::Reference>>,
}

impl<'a> ValuePass<'a> {
    /// Plans the pass over `ckpt`'s matrices as `roles` names them.
    pub fn new(ckpt: &'a Checkpoint, roles: &Roles) -> Self {
        ValuePass {
            ckpt,
            matrices: pass::planned(ckpt, roles),
            embedding: roles.embedding.as_ref().and_then(|c| ckpt.tensor(&c.name)),
            reference: Arc::default(),
        }
    }

    /// Hands the pass the vocabulary (`None` without a tokenizer), from any
    /// thread, as soon as it is loaded: the embedding's reference rows
    /// (for `undertrained-candidates`) are found and their mean made, and
    /// the embedding blocks read from then on are dotted with it in the
    /// same read. Optional: [`Check::finish`] does it otherwise, with a
    /// read of its own.
    pub fn set_vocab(&self, vocab: Option<&Vocab>) {
        self.reference.get_or_init(|| match self.embedding {
            Some(t) => self
                .ckpt
                .matrix(t)
                .map(|m| pass::Reference::resolve(&m, vocab))
                .unwrap_or_default(),
            None => pass::Reference::default(),
        });
    }

    /// Lets go of the mapped pages of the matrices the pass read (see
    /// [`Checkpoint::release`]).
    pub fn release(&self) {
        self.ckpt.release(&self.matrices);
    }

    /// The rows the pass reads, for a progress bar.
    pub fn rows(&self) -> u64 {
        self.matrices
            .iter()
            .map(|t| t.shape.first().copied().unwrap_or(0) as u64)
            .sum()
    }

    /// A label for the progress bar: `checking a, b`.
    pub fn label(&self) -> String {
        let names: Vec<&str> = self.matrices.iter().map(|t| t.name.as_str()).collect();
        format!("checking {}", names.join(", "))
    }

    /// Runs the pass, counting rows on `progress` and finishing it.
    pub fn run(&self, progress: &Progress) -> Values<'a> {
        Values {
            scanned: pass::pass(
                self.ckpt,
                &self.matrices,
                self.embedding,
                &self.reference,
                progress,
            ),
            reference: Arc::clone(&self.reference),
        }
    }
}

/// Runs the whole check of `ckpt`. The value pass streams the matrices
/// (with a progress bar when `progress`) while one worker of the pool
/// loads the vocabulary with `load`, makes the header findings and hands
/// them to `early`, so they can be shown while the pass runs (drawn over
/// the bar, not under it). A tokenizer file that cannot be read is an
/// `unreadable-file` finding, and the check goes on without the
/// vocabulary; a GGUF vocabulary that cannot be read (the weights file's
/// fault) or a failed `early` cancels the pass rather than wait for it. The joined report goes to `show`, then the matrices'
/// mapped pages are let go on all cores (see [`Checkpoint::release`]), and
/// the report is returned for its verdict.
///
/// The load runs on whichever worker is free rather than on a thread of
/// its own: a thread of its own shares the cores with every worker of the
/// pass, and `check` of a Llama-3-shaped checkpoint on 2 cores then took
/// longer. The pages are let go after `show` because, let go while the
/// findings were made, their release held up the findings' page faults.
pub fn run<E: From<Error> + Send>(
    ckpt: &Checkpoint,
    roles: &Roles,
    training: &Training,
    progress: bool,
    load: impl FnOnce() -> Result<Option<Vocab>> + Send,
    early: impl FnOnce(&[&Finding]) -> std::result::Result<(), E> + Send,
    show: impl FnOnce(&CheckReport) -> std::result::Result<(), E>,
) -> std::result::Result<CheckReport, E> {
    roles.need_tensors(ckpt)?;
    let pass = ValuePass::new(ckpt, roles);
    let progress = Progress::new(progress, pass.rows(), &pass.label());
    // Kept outside the task: the check borrows it.
    let held = OnceLock::new();
    let (values, started) = rayon::join(
        || pass.run(&progress),
        || -> std::result::Result<_, E> {
            let (loaded, unread) = match load() {
                Ok(vocab) => (vocab, None),
                Err(e) => match ckpt.vocab_unreadable(&e) {
                    Some(unread) => (None, Some(unread)),
                    None => {
                        progress.cancel();
                        return Err(e.into());
                    }
                },
            };
            let vocab = held.get_or_init(|| loaded).as_ref();
            pass.set_vocab(vocab);
            let check = Check::start_with(ckpt, roles, vocab, unread, training)
                .inspect_err(|_| progress.cancel())?;
            let findings: Vec<&Finding> = check.early().collect();
            progress
                .suspend(|| early(&findings))
                .inspect_err(|_| progress.cancel())?;
            Ok(check)
        },
    );
    let report = started?.finish(values);
    show(&report)?;
    pass.release();
    Ok(report)
}

/// The report from all findings, sorted.
fn report(s: &Subject, findings: Vec<Finding>, norms: RowNorms) -> CheckReport {
    let mut counts = Counts::default();
    for f in &findings {
        match f.severity {
            Severity::Error => counts.error += 1,
            Severity::Warn => counts.warn += 1,
            Severity::Info => counts.info += 1,
        }
    }
    CheckReport {
        model: s.ckpt.model.clone(),
        embedding: s.embedding.map(|t| t.name.clone()),
        head: s.head.map(|t| t.name.clone()),
        tokenizer_size: s.vocab.map(Vocab::size),
        findings,
        counts,
        norms,
    }
}
