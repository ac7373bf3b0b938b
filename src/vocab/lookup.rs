//! Finding entries for words typed by a user: a bare word as it appears in
//! running text (with the leading-space marker when the vocabulary has
//! one) and as the tokenizer normalises it (see `normalize`), ` word` and
//! `=word` for each form explicitly, entries given as printed or as
//! stored, and cheap suggestions for errors.

use std::borrow::Cow;

use super::readable::{self, TokenStyle};
use super::{Vocab, WordNormalizer};
use crate::error::{Error, Result};

/// The entry a word typed by a user resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordMatch {
    /// Its id.
    pub id: u32,
    /// The raw entry, as stored.
    pub raw: String,
    /// The exact entry passed over for the leading-space one: a bare
    /// `king` takes `Ġking`, the word, over the piece `king` (id, raw).
    pub piece: Option<(u32, String)>,
    /// The word as the tokenizer's normaliser left it, when that is not
    /// the word as typed and is what resolved (`cafe` for `café`).
    pub normalized: Option<String>,
}

impl WordMatch {
    /// An entry with no other one passed over for it.
    fn alone((id, raw): (u32, String)) -> Self {
        WordMatch {
            id,
            raw,
            piece: None,
            normalized: None,
        }
    }
}

impl Vocab {
    /// `word` as the tokenizer's normaliser leaves it (see `normalize`),
    /// leading spaces kept; an error when the normaliser cannot be built
    /// or run.
    pub fn normalize_word<'w>(&self, word: &'w str) -> Result<Cow<'w, str>> {
        let normalizer = self
            .words
            .get_or_init(|| WordNormalizer::new(self.normalizer.as_ref()));
        let failed =
            |e: &String| Error::bad_file(&self.file, format!("cannot normalise text: {e}"));
        normalizer
            .as_ref()
            .map_err(failed)?
            .apply(word)
            .map_err(|e| failed(&e))
    }

    /// The word normalised, then (when that is not the same) as typed: the
    /// tokenizer looks up the normalised word, and an entry a user types
    /// as stored (`[UNK]` for BERT uncased) is found as typed.
    fn word_forms(&self, word: &str) -> Result<Vec<String>> {
        let normalized = self.normalize_word(word)?;
        let mut forms = vec![normalized.to_string()];
        if normalized != word {
            forms.push(word.to_string());
        }
        Ok(forms)
    }

    /// Whether entries mark a leading space (`Ġ`, `▁`), so that a word and
    /// a piece are different entries.
    fn marks_space(&self) -> bool {
        matches!(
            self.style,
            TokenStyle::ByteLevel | TokenStyle::Metaspace { .. }
        )
    }

    /// The raw form of `form` with the leading-space marker (WordPiece and
    /// plain vocabularies have none: the bare form).
    fn spaced(&self, form: &str) -> String {
        let bare = form.trim_start_matches(' ');
        if self.marks_space() {
            readable::to_raw(&format!(" {bare}"), &self.style)
        } else {
            bare.to_string()
        }
    }

    /// Raw candidates for `form` exactly: as text, then as stored.
    fn exact(&self, form: &str) -> Vec<String> {
        vec![readable::to_raw(form, &self.style), form.to_string()]
    }

    /// The first candidate that is an entry, with its raw form; each
    /// distinct candidate is looked up once.
    fn first_entry(&self, candidates: Vec<String>) -> Option<(u32, String)> {
        let mut tried: Vec<&str> = Vec::with_capacity(candidates.len());
        for raw in &candidates {
            if raw.is_empty() || tried.contains(&raw.as_str()) {
                continue;
            }
            tried.push(raw);
            if let Some(id) = self.id(raw) {
                return Some((id, raw.clone()));
            }
        }
        None
    }

    /// The id of an entry given as embscope prints it (` king`, `\n`,
    /// `\\n`, `\"`, `<0xC3>` for a lone byte) or as stored (`Ġking`):
    /// exact, no other variants. The printed form wins, so that whatever
    /// was printed reads back as the same entry.
    pub fn entry_id(&self, token: &str) -> Option<u32> {
        let mut candidates = Vec::new();
        if let Some(text) = readable::unescape(token) {
            candidates.push(readable::to_raw(&text, &self.style));
            // A SentencePiece byte entry prints as the char it stands for.
            if let (TokenStyle::Metaspace { .. }, [b]) = (&self.style, text.as_bytes()) {
                candidates.push(format!("<0x{b:02X}>"));
            }
            candidates.push(text);
        }
        candidates.push(token.to_string());
        self.first_entry(candidates).map(|(id, _)| id)
    }

    /// Finds the entry for a word typed in a query:
    /// - `=king`: exactly the entry after the `=`, given as printed or as
    ///   stored (see [`Vocab::entry_id`]);
    /// - ` king` (a leading space): the leading-space entry (`Ġking`,
    ///   `▁king`; for WordPiece, the bare word);
    /// - `king`: the leading-space entry when the vocabulary has one, the
    ///   word as it appears in running text, else the exact entry; when
    ///   both exist the exact one is returned as [`WordMatch::piece`].
    ///
    /// But for `=`, the word is tried as the tokenizer normalises it (see
    /// [`Vocab::normalize_word`]), then as typed. An error when the
    /// tokenizer's normaliser cannot be built.
    pub fn resolve_word(&self, word: &str) -> Result<Option<WordMatch>> {
        if let Some(exact) = word.strip_prefix('=').filter(|e| !e.is_empty()) {
            let found = self.entry_id(exact).map(|id| {
                let raw = self.token(id).unwrap_or(exact).to_string();
                WordMatch::alone((id, raw))
            });
            return Ok(found);
        }
        let forms = self.word_forms(word)?;
        let normalized = |form: &String| (form != word).then(|| form.clone());
        if word.starts_with(' ') {
            let found = forms.iter().find_map(|f| {
                let (id, raw) = self.first_entry(vec![self.spaced(f)])?;
                Some(WordMatch {
                    normalized: normalized(f),
                    ..WordMatch::alone((id, raw))
                })
            });
            return Ok(found);
        }
        Ok(forms.iter().find_map(|form| {
            let exact = self.first_entry(self.exact(form));
            let spaced = if self.marks_space() {
                self.first_entry(vec![self.spaced(form)])
            } else {
                None
            };
            let (id, raw) = spaced.clone().or_else(|| exact.clone())?;
            Some(WordMatch {
                id,
                raw,
                piece: spaced.and(exact).filter(|(piece, _)| *piece != id),
                normalized: normalized(form),
            })
        }))
    }

    /// Up to `n` entries close to `word`, for an error message: marker and
    /// case variants first, then entries starting with the word (shortest
    /// first), then entries the word starts with (longest first).
    pub fn suggest(&self, word: &str, n: usize) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = Vec::new();
        if n == 0 || word.is_empty() {
            return out;
        }
        // The word as the tokenizer normalises it first; as typed when the
        // normaliser cannot be built (the error is the tokenizer's, shown
        // where it is needed).
        let normalized = self.normalize_word(word).unwrap_or(Cow::Borrowed(word));
        let bare = normalized.trim_start_matches(' ');
        let mut cased = vec![bare.to_string(), bare.to_lowercase(), bare.to_uppercase()];
        let mut chars = bare.chars();
        if let Some(first) = chars.next() {
            cased.push(first.to_uppercase().chain(chars).collect());
        }
        let push = |out: &mut Vec<(u32, String)>, id: u32, raw: &str| {
            if out.len() < n && !out.iter().any(|(i, _)| *i == id) {
                out.push((id, raw.to_string()));
            }
        };
        // `cased` holds the lower-case form already.
        for form in &cased {
            for raw in std::iter::once(self.spaced(form)).chain(self.exact(form)) {
                if let Some(id) = self.id(&raw) {
                    push(&mut out, id, &raw);
                }
            }
        }
        if out.len() >= n {
            return out;
        }
        // One pass over the entries, comparing the marker-less raw forms.
        let needle = readable::to_raw(bare, &self.style).to_lowercase();
        if needle.is_empty() {
            return out;
        }
        let marker = match &self.style {
            TokenStyle::ByteLevel => Some('Ġ'),
            TokenStyle::Metaspace { replacement } => Some(*replacement),
            _ => None,
        };
        let mut longer: Vec<(usize, u32, &str)> = Vec::new();
        let mut shorter: Vec<(usize, u32, &str)> = Vec::new();
        for e in self.entries.iter() {
            let stem = match marker {
                Some(m) => e.token.strip_prefix(m).unwrap_or(e.token),
                None => e.token,
            };
            if stem.is_empty() {
                continue;
            }
            let stem_lower = stem.to_lowercase();
            if stem_lower.starts_with(&needle) {
                longer.push((stem.len(), e.id, e.token));
            } else if needle.starts_with(&stem_lower) {
                shorter.push((usize::MAX - stem.len(), e.id, e.token));
            }
        }
        longer.sort_unstable();
        shorter.sort_unstable();
        for (_, id, raw) in longer.into_iter().chain(shorter) {
            push(&mut out, id, raw);
        }
        out
    }
}
