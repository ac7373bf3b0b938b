//! Whether a token is reached: whether some text encodes, as the model's
//! own tokenizer runs, to a sequence that holds it. A token that no text
//! reaches is never an input the model was trained on.
//!
//! # The rule
//!
//! A token is reached when one of its *witness texts* encodes to a
//! sequence holding its id; the witnesses are
//!
//! - an added token: its content (the tokenizer matches it in any text);
//! - SentencePiece (`▁king`, `king`, `<0x41>`): the piece as text (`▁` a
//!   space), without its leading space (the dummy prefix the tokenizer
//!   adds gives it back), and after a char the vocabulary has no entry
//!   for (it falls back to bytes or to the unknown token, which merge
//!   with nothing, so a piece that only occurs inside words is seen
//!   there); a byte piece `<0xNN>`: chars whose UTF-8 holds the byte and
//!   which the vocabulary lacks (byte fallback spells them out), none when
//!   every such char is an entry (so `<0x41>` is not reached where `A`
//!   is an entry, and a byte no UTF-8 text holds never is);
//! - byte-level BPE (`Ġking`, `king`): the entry's text, and the text
//!   after a letter of a script vocabularies hardly merge (for tokenizers
//!   that add a prefix space); a lone byte or a piece of a char: texts
//!   completing the cut chars, those in which no entry spans the
//!   fragment's edges first (then no merge can cross them);
//! - WordPiece (`king`, `##king`): the word; a continuation `##s` after a
//!   one-char word `c` that no entry continues with the first char of
//!   `s`, so the greedy longest match takes `c`, then `##s` itself;
//! - other vocabularies: the entry's text.
//!
//! BPE merges never cross a token's edges once it is made, and the merges
//! inside it run in the same order wherever it stands; so a BPE token
//! formed in any text is formed in its own text whenever its neighbours
//! cannot merge with it, which is what the witnesses above arrange (the
//! start or end of the text, a char the vocabulary lacks, a `c` no entry
//! continues). A token none of its witnesses reaches is shown not
//! reached.
//!
//! # Speed
//!
//! The witnesses are encoded by a tokenizer cut down to what encoding
//! them needs, where the vocabulary allows (a BPE tokenizer.json kept with
//! its merges' places, `json_cut`; GGUF `llama` and `gpt2` vocabularies,
//! through `gguf_tokenizer::build_with`): encoding only ever makes tokens
//! that are substrings of the text's normalised, pre-tokenized words, so a
//! tokenizer keeping those entries (`keep`) and the merges among them
//! encodes the witnesses as the full one does, at a small part of its
//! cost. The words are found by the cut-down tokenizer's own first stage,
//! built with no model entries: its added vocabulary, normaliser and
//! pre-tokenizer. Other vocabularies use the full tokenizer.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the rule, and [`Vocab::reached`]: witnesses encoded by a cut-down or the full tokenizer |
//! | `witness.rs` | the witness texts of each kind of token |
//! | `keep.rs` | the substrings a cut-down tokenizer keeps entries for |
//! | `json_cut.rs` | the cut-down tokenizer of a BPE tokenizer.json |
//! | `tests.rs` | witnesses and answers on fixtures of each kind |

mod json_cut;
mod keep;
mod witness;

use tokenizers::{OffsetReferential, OffsetType, PreTokenizer, Tokenizer};

use super::contain::contained;
use super::entries::Entry;
use super::{Vocab, gguf_tokenizer};
use crate::error::Result;
use keep::Substrings;
use witness::{MAX_WITNESS_BYTES, Witnesses};

/// What encodes the witnesses.
enum Encoder<'v> {
    /// A tokenizer cut down to them.
    Cut(Box<Tokenizer>),
    /// The vocabulary's full tokenizer.
    Full(&'v Vocab),
}

impl Encoder<'_> {
    /// The ids of `text` (no template tokens); `None` when it cannot be
    /// encoded.
    fn encode(&self, text: &str) -> Option<Vec<u32>> {
        match self {
            Encoder::Cut(t) => {
                let encoding = contained(|| t.encode(text, false)).ok()?.ok()?;
                Some(encoding.get_ids().to_vec())
            }
            Encoder::Full(v) => v.encode(text, false).ok(),
        }
    }
}

impl Vocab {
    /// Whether some text reaches each of `ids` (see the module docs for
    /// the rule): `None` where the question has no answer (no entry, a
    /// witness too long to try). An error when the tokenizer cannot be
    /// built or encode at all.
    pub fn reached(&self, ids: &[u32]) -> Result<Vec<Option<bool>>> {
        let witnesses = Witnesses::new(self);
        let texts: Vec<Option<Vec<String>>> = ids.iter().map(|&id| witnesses.of(id)).collect();
        let all: Vec<&str> = texts
            .iter()
            .flatten()
            .flatten()
            .map(String::as_str)
            .collect();
        let encoder = match self.cut_down(&all) {
            Some(t) => Encoder::Cut(Box::new(t)),
            None => {
                // The full tokenizer, or why there is none.
                self.encode("", false)?;
                Encoder::Full(self)
            }
        };
        Ok(ids
            .iter()
            .zip(&texts)
            .map(|(&id, texts)| {
                let texts = texts.as_ref()?;
                let holds = |t: &String| encoder.encode(t).is_some_and(|ids| ids.contains(&id));
                Some(texts.iter().any(holds))
            })
            .collect())
    }

    /// Whether [`Vocab::reached`] cuts the tokenizer down rather than
    /// build the full one (which a caller may then start building early).
    pub fn reach_cuts_down(&self) -> bool {
        match &self.gguf {
            Some(recipe) => matches!(recipe.model.as_str(), "gpt2" | "llama"),
            None => json_cut::cuts_down(self),
        }
    }

    /// A tokenizer cut down to what encoding `texts` needs, when the
    /// vocabulary allows one.
    fn cut_down(&self, texts: &[&str]) -> Option<Tokenizer> {
        if !self.reach_cuts_down() {
            return None;
        }
        // A witness's normalised words may be longer than it (byte-level
        // chars take two bytes for some bytes).
        let longest = (self.model_entries().map(|(t, _)| t.len()).max())
            .unwrap_or(0)
            .min(MAX_WITNESS_BYTES * 2);
        match &self.gguf {
            Some(recipe) => {
                // Added tokens are matched in the text as written: only
                // those in a witness can be.
                let longest_added = self.added.iter().map(|a| a.content.len()).max();
                let mut written = Substrings::new(longest_added.unwrap_or(0));
                texts.iter().for_each(|t| written.add(t));
                let build = |keep: Option<&Substrings>| {
                    let cut = |e: &Entry| match e.added {
                        true => written.may_hold(e.token.as_bytes()),
                        false => keep.is_some_and(|k| k.may_hold(e.token.as_bytes())),
                    };
                    gguf_tokenizer::build_with(recipe, self, Some(&cut)).ok()
                };
                cut_down_with(texts, longest, build)
            }
            None => {
                let parsed = json_cut::parse(self.merges_source()?)?;
                cut_down_with(texts, longest, |keep| json_cut::build(self, &parsed, keep))
            }
        }
    }
}

/// The tokenizer `build` makes keeping the entries that are substrings of
/// the words `texts` become: first built keeping none, to find the words
/// as encoding does (added tokens taken out, the rest normalised and
/// pre-tokenized), then keeping those; `longest` bounds the substrings.
fn cut_down_with(
    texts: &[&str],
    longest: usize,
    build: impl Fn(Option<&Substrings>) -> Option<Tokenizer>,
) -> Option<Tokenizer> {
    let first = build(None)?;
    let mut keep = Substrings::new(longest);
    for text in texts {
        for word in words(&first, text)? {
            keep.add(&word);
        }
    }
    build(Some(&keep))
}

/// The words `tokenizer`'s model sees for `text`: what its added
/// vocabulary leaves of the text, normalised and pre-tokenized.
fn words(tokenizer: &Tokenizer, text: &str) -> Option<Vec<String>> {
    contained(|| {
        let added = tokenizer.get_added_vocabulary();
        let mut s = added.extract_and_normalize(tokenizer.get_normalizer(), text);
        if let Some(pre) = tokenizer.get_pre_tokenizer() {
            pre.pre_tokenize(&mut s).ok()?;
        }
        let splits = s.get_splits(OffsetReferential::Original, OffsetType::Byte);
        Some(
            splits
                .into_iter()
                .filter(|(_, _, tokens)| tokens.is_none())
                .map(|(w, _, _)| w.to_string())
                .collect(),
        )
    })
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests;
