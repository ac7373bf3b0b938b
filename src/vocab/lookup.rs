//! Finding entries for words typed by a user: a bare word as it appears in
//! running text (with the leading-space marker when the vocabulary has
//! one), ` word` and `=word` for each form explicitly, entries given as
//! printed or as stored, case variants, and cheap suggestions for errors.

use super::Vocab;
use super::readable::{self, TokenStyle};

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
}

impl WordMatch {
    /// An entry with no other one passed over for it.
    fn alone((id, raw): (u32, String)) -> Self {
        WordMatch {
            id,
            raw,
            piece: None,
        }
    }
}

impl Vocab {
    /// The word as typed and, when the tokenizer lowercases its input, in
    /// lower case.
    fn cased_forms(&self, word: &str) -> Vec<String> {
        let mut forms = vec![word.to_string()];
        if self.lowercase {
            let lower = word.to_lowercase();
            if lower != word {
                forms.push(lower);
            }
        }
        forms
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
    /// Tried as typed, then lowercased when the tokenizer lowercases.
    pub fn resolve_word(&self, word: &str) -> Option<WordMatch> {
        if let Some(exact) = word.strip_prefix('=').filter(|e| !e.is_empty()) {
            let id = self.entry_id(exact)?;
            let raw = self.token(id).unwrap_or(exact).to_string();
            return Some(WordMatch::alone((id, raw)));
        }
        let forms = self.cased_forms(word);
        if word.starts_with(' ') {
            let candidates = forms.iter().map(|f| self.spaced(f)).collect();
            return self.first_entry(candidates).map(WordMatch::alone);
        }
        forms.iter().find_map(|form| {
            let exact = self.first_entry(self.exact(form));
            let spaced = if self.marks_space() {
                self.first_entry(vec![self.spaced(form)])
            } else {
                None
            };
            match spaced {
                Some((id, raw)) => Some(WordMatch {
                    id,
                    raw,
                    piece: exact.filter(|(piece, _)| *piece != id),
                }),
                None => exact.map(WordMatch::alone),
            }
        })
    }

    /// Up to `n` entries close to `word`, for an error message: marker and
    /// case variants first, then entries starting with the word (shortest
    /// first), then entries the word starts with (longest first).
    pub fn suggest(&self, word: &str, n: usize) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = Vec::new();
        if n == 0 || word.is_empty() {
            return out;
        }
        let bare = word.trim_start_matches(' ');
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
        // `cased` holds the lower-case form already: no `cased_forms` here.
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
