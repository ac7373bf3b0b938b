//! What each row of a vocabulary matrix is, as far as the tokenizer
//! tells: text, a special or added token, a reserved placeholder, a byte,
//! an id no entry has, or a padding row beyond the tokenizer. `rows`
//! writes it for every row, `check --plot` and `report` mark rows by it.

use std::collections::HashSet;

use serde::Serialize;

use super::{TokenKind, Vocab, is_placeholder};

/// What a row is, as far as the tokenizer tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowKind {
    /// Text.
    Normal,
    /// A special or control token (BOS, `[CLS]`).
    Special,
    /// An added token that is not special.
    Added,
    /// A reserved placeholder (`<|reserved_special_token_3|>`,
    /// `[unused7]`, a GGUF `unused` token): untrained by design.
    Reserved,
    /// A single byte that is not text on its own.
    Byte,
    /// Bytes that are a piece of a multi-byte UTF-8 char.
    PartialUtf8,
    /// An id below the tokenizer's size that no entry has.
    Unused,
    /// An id beyond the tokenizer: a row the matrix was padded with.
    Padding,
}

impl RowKind {
    /// The name as written in every format.
    pub fn name(self) -> &'static str {
        match self {
            RowKind::Normal => "normal",
            RowKind::Special => "special",
            RowKind::Added => "added",
            RowKind::Reserved => "reserved",
            RowKind::Byte => "byte",
            RowKind::PartialUtf8 => "partial-utf8",
            RowKind::Unused => "unused",
            RowKind::Padding => "padding",
        }
    }
}

/// Tells the kind of each row of a vocabulary's matrices; made once per
/// vocabulary (it gathers the added tokens' ids) and asked row by row.
pub struct RowKinds<'v> {
    vocab: &'v Vocab,
    added: HashSet<u32>,
}

impl Vocab {
    /// The classifier of this vocabulary's rows.
    pub fn row_kinds(&self) -> RowKinds<'_> {
        RowKinds {
            vocab: self,
            added: self.added_tokens().iter().map(|a| a.id).collect(),
        }
    }
}

impl RowKinds<'_> {
    /// The kind of row `id`: no entry (padding beyond the tokenizer,
    /// unused below its size), then a reserved placeholder, a special
    /// token, an added one, and what its text is.
    pub fn of(&self, id: u32) -> RowKind {
        self.of_note(id)
            .unwrap_or_else(|| match self.vocab.kind(id) {
                Some(TokenKind::Byte) => RowKind::Byte,
                Some(TokenKind::PartialUtf8) => RowKind::PartialUtf8,
                _ => RowKind::Normal,
            })
    }

    /// The kind of row `id` when it is not an entry of text (padding,
    /// unused, reserved, special, added), without reading the entry's
    /// text: what marks rows in a picture, asked of every row.
    pub fn of_note(&self, id: u32) -> Option<RowKind> {
        let v = self.vocab;
        let Some(token) = v.token(id) else {
            return Some(if (id as usize) < v.size() {
                RowKind::Unused
            } else {
                RowKind::Padding
            });
        };
        if is_placeholder(token) || v.is_unused(id) {
            Some(RowKind::Reserved)
        } else if v.is_special(id) {
            Some(RowKind::Special)
        } else if self.added.contains(&id) {
            Some(RowKind::Added)
        } else {
            None
        }
    }
}
