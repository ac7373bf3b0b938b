//! `diff BASE TUNED`: what a fine-tune did to the vocabulary layers.
//! Tokens added, removed and renumbered (by their text), special-token
//! ids that moved; per matrix (embedding, head), the rows identical,
//! changed (how much, and which moved most), added (and how each was
//! initialised) and removed; the shapes, dtypes and tie of both.
//!
//! Rows pair up by token text when both models have a tokenizer, else by
//! id (see `pairing`); each pair of matrices is read once, side by side
//! (see `pass`), in any dtypes (see `tolerance`).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the request, the report, which matrices are compared and how rows pair |
//! | `tokens.rs` | the tokenizer's diff: entries by text, kind, special-token ids |
//! | `pairing.rs` | which tuned row each base row is compared with |
//! | `tolerance.rs` | when a pair counts as identical, for each pair of dtypes |
//! | `pass.rs` | the streaming pass over a pair of matrices |
//! | `init.rs` | how each added row was initialised |
//! | `matrix.rs` | one matrix's diff, made of its pass and the verdicts |

mod init;
mod matrix;
mod pairing;
mod pass;
mod tokens;
mod tolerance;

use serde::Serialize;

pub use init::Init;
pub use matrix::{
    Added, Changed, Distribution, InitBasis, InitCounts, MatrixDiff, MatrixSide, Removed,
};
pub use tokens::{Renumbered, SpecialMoved, Token, TokensDiff};
pub use tolerance::Tolerance;

use crate::checkpoint::{Checkpoint, TensorEntry};
use crate::progress::Progress;
use crate::roles::{Roles, TieStatus, Which};
use crate::vocab::Vocab;
use crate::{Error, Result};
use matrix::{Names, Pair};
use pairing::{Matched, Pairing};

/// Changed rows listed when `--top` is not given.
pub const DEFAULT_TOP: usize = 10;

/// What `diff` is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// One matrix only, or (None) the embedding and the head.
    pub matrix: Option<Which>,
    /// Changed rows to list, those that moved most.
    pub top: usize,
    /// Pair rows by id even when both models have a tokenizer.
    pub by_id: bool,
    /// Draw a progress bar for the passes.
    pub progress: bool,
}

/// One of the two models, opened.
#[derive(Clone, Copy)]
pub struct Model<'a> {
    /// Its files.
    pub ckpt: &'a Checkpoint,
    /// Its embedding, head and tie.
    pub roles: &'a Roles,
    /// Its tokenizer, if it has one embscope reads.
    pub vocab: Option<&'a Vocab>,
}

/// The tie of each side.
#[derive(Debug, Clone, Serialize)]
pub struct TieChange {
    /// BASE's.
    pub base: TieStatus,
    /// TUNED's.
    pub tuned: TieStatus,
}

/// The `diff` report.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    /// The BASE argument as given.
    pub base: String,
    /// The TUNED argument as given.
    pub tuned: String,
    /// Whether the vocabulary layers and the tokenizer are the same.
    pub same: bool,
    /// How rows were paired: `token` (by their text) or `id`.
    pub paired_by: &'static str,
    /// The tokenizer's diff.
    pub tokens: TokensDiff,
    /// The tie of each side.
    pub tie: TieChange,
    /// The embedding's diff (null when not compared).
    pub embedding: Option<MatrixDiff>,
    /// The head's diff (null when not compared, or a side has none).
    pub head: Option<MatrixDiff>,
    /// What the reader should know about how the diff was made.
    pub notes: Vec<String>,
}

/// Compares `tuned` with `base`, reading each pair of matrices once; the
/// mapped pages are let go on all cores afterwards (see
/// [`Checkpoint::release`]).
pub fn run(base: Model, tuned: Model, req: &Request) -> Result<DiffReport> {
    crate::cpu::mask_ok()?;
    let mut notes = Vec::new();
    let tensors = roles(base, tuned, req, &mut notes)?;
    let [embed_pair, head_pair] = tensors.map(|ts| ts.map(|ts| pair(base, tuned, ts)));
    let (embed_pair, head_pair) = (embed_pair.transpose()?, head_pair.transpose()?);
    for p in embed_pair.iter().chain(&head_pair) {
        same_width(base, tuned, p)?;
    }
    let (tokens, matched) = tokenizers(base, tuned, req, &mut notes)?;
    let names = Names {
        base: base.vocab,
        tuned: tuned.vocab,
    };
    let total = embed_pair
        .iter()
        .chain(&head_pair)
        .map(|p| p.base.rows() as u64)
        .sum();
    let progress = Progress::new(req.progress, total, "diff");
    let diff = |p: &Pair| {
        let pairing = match &matched {
            Some(m) => Pairing::by_token(m, p.base.rows(), p.tuned.rows()),
            None => Pairing::by_id(p.base.rows(), p.tuned.rows()),
        };
        matrix::diff(p, &pairing, names, req.top, &progress)
    };
    let both_tied = [base, tuned]
        .iter()
        .all(|m| m.roles.tie.status == TieStatus::Tied);
    let embedding = embed_pair.as_ref().map(diff);
    let head = head_pair.as_ref().map(|p| match &embedding {
        // The head is the embedding on both sides: its diff, again.
        Some(e) if both_tied => MatrixDiff {
            same_as_embedding: true,
            ..e.clone()
        },
        _ => diff(p),
    });
    progress.finish();
    release(base, tuned, tensors);
    let tie = TieChange {
        base: base.roles.tie.status,
        tuned: tuned.roles.tie.status,
    };
    let same = !tokens.differs()
        && tie.base == tie.tuned
        && [&embedding, &head]
            .iter()
            .all(|d| d.as_ref().is_none_or(|d| !d.differs()))
        && (base.vocab.is_some() == tuned.vocab.is_some());
    Ok(DiffReport {
        base: base.ckpt.model.clone(),
        tuned: tuned.ckpt.model.clone(),
        same,
        paired_by: if matched.is_some() { "token" } else { "id" },
        tokens,
        tie,
        embedding,
        head,
        notes,
    })
}

/// The base's and the fine-tune's tensor of one role, when compared.
type Tensors<'a> = Option<[&'a TensorEntry; 2]>;

/// The tensors compared, `[embedding, head]`, none where not asked. A
/// head one side does not have is an error when asked for alone, else
/// left out with a note.
fn roles<'a>(
    base: Model<'a>,
    tuned: Model<'a>,
    req: &Request,
    notes: &mut Vec<String>,
) -> Result<[Tensors<'a>; 2]> {
    let both = |which: Which| -> Result<[&'a TensorEntry; 2]> {
        Ok([
            base.roles.matrix(base.ckpt, which)?,
            tuned.roles.matrix(tuned.ckpt, which)?,
        ])
    };
    let embed = match req.matrix {
        Some(Which::Head) => None,
        _ => Some(both(Which::Embed)?),
    };
    let head = match req.matrix {
        Some(Which::Embed) => None,
        Some(Which::Head) => Some(both(Which::Head)?),
        None => both(Which::Head)
            .inspect_err(|e| notes.push(format!("the heads are not compared: {e}")))
            .ok(),
    };
    Ok([embed, head])
}

/// The matrices of `ts` (the base's, the fine-tune's).
fn pair<'a>(base: Model<'a>, tuned: Model<'a>, ts: [&'a TensorEntry; 2]) -> Result<Pair<'a>> {
    let is_embedding = |m: Model, t: &TensorEntry| {
        m.roles.tie.status == TieStatus::Tied
            && m.roles.embedding.as_ref().is_some_and(|e| e.name == t.name)
    };
    Ok(Pair {
        base: base.ckpt.matrix(ts[0])?,
        tuned: tuned.ckpt.matrix(ts[1])?,
        tied: [is_embedding(base, ts[0]), is_embedding(tuned, ts[1])],
    })
}

/// Refuses matrices of different widths: their rows cannot be compared.
fn same_width(base: Model, tuned: Model, p: &Pair) -> Result<()> {
    let (b, t) = (&p.base, &p.tuned);
    if b.cols() == t.cols() {
        return Ok(());
    }
    Err(Error::BadInput(format!(
        "`{}` has hidden size {} and `{}` has hidden size {} (`{}` is [{}, {}], `{}` is [{}, {}]): the rows of models of different hidden sizes cannot be compared",
        base.ckpt.model,
        b.cols(),
        tuned.ckpt.model,
        t.cols(),
        b.name(),
        b.rows(),
        b.cols(),
        t.name(),
        t.rows(),
        t.cols()
    )))
}

/// The tokenizer's diff, and the tokens matched by text when rows pair by
/// token: when both models have a tokenizer, they share tokens, and
/// `--by-id` is not given.
fn tokenizers(
    base: Model,
    tuned: Model,
    req: &Request,
    notes: &mut Vec<String>,
) -> Result<(TokensDiff, Option<Matched>)> {
    let (b, t) = match (base.vocab, tuned.vocab) {
        (Some(b), Some(t)) => (b, t),
        (b, t) => {
            let missing: Vec<String> = [(base, b), (tuned, t)]
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(m, _)| format!("`{}` has {}", m.ckpt.model, m.ckpt.no_vocab()))
                .collect();
            notes.push(format!(
                "{}: rows are paired by id and tokens are not compared",
                missing.join(", and ")
            ));
            return Ok((TokensDiff::default(), None));
        }
    };
    let matched = Matched::new(b, t);
    let tokens = tokens::compare(b, t, &matched);
    // A fine-tune keeps its base's tokens (or, trimmed, keeps only some
    // of them): sharing fewer than half of the smaller vocabulary's
    // entries, two tokenizers are different ones, whose rows pair by
    // token by accident only.
    let smaller = b.size().min(t.size());
    if !req.by_id && tokens.shared * 2 < smaller {
        let share = match tokens.shared {
            0 => "share no token".to_string(),
            n => format!("share only {n} of {smaller} tokens"),
        };
        return Err(Error::BadInput(format!(
            "`{}` and `{}` {share} (a {} vocabulary of {} entries and a {} one of {}): different tokenizers, whose rows cannot be paired by token; --by-id pairs them by id",
            base.ckpt.model,
            tuned.ckpt.model,
            b.model(),
            b.size(),
            t.model(),
            t.size()
        )));
    }
    Ok((tokens, (!req.by_id).then_some(matched)))
}

/// Lets go of the mapped pages of the tensors read.
fn release(base: Model, tuned: Model, read: [Tensors; 2]) {
    let side = |i: usize| -> Vec<&TensorEntry> { read.iter().flatten().map(|ts| ts[i]).collect() };
    std::thread::scope(|s| {
        s.spawn(|| base.ckpt.release(&side(0)));
        tuned.ckpt.release(&side(1));
    });
}
