//! The tokenizer side of a diff: entries added, removed and renumbered,
//! matched by their text; the tokenizer's kind and normaliser; and the special-token
//! ids (bos, eos, pad ...) that moved, as the files of each side declare
//! them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::pairing::{Matched, NONE};
use crate::vocab::{ROLES, Vocab};

/// A token present on one side only.
#[derive(Debug, Clone, Serialize)]
pub struct Token {
    /// Its id on that side.
    pub id: u32,
    /// Its readable text.
    pub token: String,
    /// Whether that side marks it special.
    pub special: bool,
}

/// A token found on both sides under different ids.
#[derive(Debug, Clone, Serialize)]
pub struct Renumbered {
    /// Its readable text.
    pub token: String,
    /// Its id in BASE.
    pub base_id: u32,
    /// Its id in TUNED.
    pub tuned_id: u32,
}

/// The ids the files of each side declare for one role, where they
/// differ (a token string a file declares is taken as its id). The
/// files are taken together: a GGUF file declares in its metadata what
/// a Hugging Face download declares in its config files.
#[derive(Debug, Clone, Serialize)]
pub struct SpecialMoved {
    /// `bos`, `eos`, `pad` ...
    pub role: String,
    /// The ids BASE's files declare, ascending (empty: none).
    pub base: Vec<i64>,
    /// The ids TUNED's files declare.
    pub tuned: Vec<i64>,
    /// TUNED's tokens of those ids, readable (null for an id it has none of).
    pub tuned_tokens: Vec<Option<String>>,
}

/// What changed in the tokenizer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TokensDiff {
    /// Whether both tokenizers were read and compared.
    pub compared: bool,
    /// Entries of BASE's tokenizer (highest id + 1).
    pub base_size: usize,
    /// Entries of TUNED's tokenizer.
    pub tuned_size: usize,
    /// TUNED's tokens whose text BASE has too.
    pub shared: usize,
    /// Tokens only TUNED has, by id.
    pub added: Vec<Token>,
    /// Tokens only BASE has, by id.
    pub removed: Vec<Token>,
    /// Tokens under another id in TUNED, by TUNED's id.
    pub renumbered: Vec<Renumbered>,
    /// The tokenizer model and how entries are stored, where they differ:
    /// `[base, tuned]`.
    pub kind: Option<[String; 2]>,
    /// What each side's normaliser does to text, where they differ:
    /// `[base, tuned]` (`lowercase, strip accents`, `none` ...).
    pub normalizer: Option<[String; 2]>,
    /// Special-token roles whose declared ids moved.
    pub special_moved: Vec<SpecialMoved>,
}

impl TokensDiff {
    /// Whether anything differs.
    pub fn differs(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.renumbered.is_empty()
            && self.kind.is_none()
            && self.normalizer.is_none()
            && self.special_moved.is_empty())
    }
}

/// The diff of two vocabularies whose tokens `matched` matched.
pub(crate) fn compare(base: &Vocab, tuned: &Vocab, matched: &Matched) -> TokensDiff {
    let mut d = TokensDiff {
        compared: true,
        base_size: base.size(),
        tuned_size: tuned.size(),
        ..TokensDiff::default()
    };
    let readable = |v: &Vocab, id: u32| v.readable(id).unwrap_or_default();
    for (t, &b) in matched.base_of.iter().enumerate() {
        let t = t as u32;
        if b != NONE {
            d.shared += 1;
            if b != t {
                d.renumbered.push(Renumbered {
                    token: readable(tuned, t),
                    base_id: b,
                    tuned_id: t,
                });
            }
        } else if tuned.has_token(t) {
            d.added.push(Token {
                id: t,
                token: readable(tuned, t),
                special: tuned.is_special(t),
            });
        }
    }
    for (b, &t) in matched.tuned_of.iter().enumerate() {
        let b = b as u32;
        if t == NONE && base.has_token(b) {
            d.removed.push(Token {
                id: b,
                token: readable(base, b),
                special: base.is_special(b),
            });
        }
    }
    let kind = |v: &Vocab| format!("{} ({:?})", family(v.model()), v.style());
    if kind(base) != kind(tuned) {
        d.kind = Some([kind(base), kind(tuned)]);
    }
    let (b, t) = (base.normalization(), tuned.normalization());
    if b != t {
        d.normalizer = Some([b, t]);
    }
    d.special_moved = special_moved(base, tuned);
    d
}

/// A tokenizer model as tokenizer.json names it, for llama.cpp's name of
/// the same kind in a GGUF file's metadata too.
fn family(model: &str) -> &str {
    match model {
        "gpt2" | "llama" => "BPE",
        "bert" => "WordPiece",
        "t5" => "Unigram",
        other => other,
    }
}

/// The ids each role is declared with, by any file, by role (ascending,
/// each once).
fn declared(v: &Vocab) -> BTreeMap<usize, Vec<i64>> {
    let mut out: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    for d in v.special_decls() {
        let Some(role) = ROLES.iter().position(|r| *r == d.role) else {
            continue;
        };
        let id = match &d.token {
            Some(t) => v.id(t).map(i64::from),
            None => d.id,
        };
        out.entry(role).or_default().extend(id);
    }
    for ids in out.values_mut() {
        ids.sort_unstable();
        ids.dedup();
    }
    out
}

/// The roles whose ids differ between the sides, in role order.
fn special_moved(base: &Vocab, tuned: &Vocab) -> Vec<SpecialMoved> {
    let (b, t) = (declared(base), declared(tuned));
    let none = Vec::new();
    (0..ROLES.len())
        .filter_map(|role| {
            let (bi, ti) = (b.get(&role).unwrap_or(&none), t.get(&role).unwrap_or(&none));
            (bi != ti).then(|| SpecialMoved {
                role: ROLES[role].to_string(),
                base: bi.clone(),
                tuned: ti.clone(),
                tuned_tokens: ti
                    .iter()
                    .map(|&id| u32::try_from(id).ok().and_then(|id| tuned.readable(id)))
                    .collect(),
            })
        })
        .collect()
}
