//! Finding entries for words typed by a user: exact, with or without the
//! leading-space marker, case variants, and cheap suggestions for errors.

use super::Vocab;
use super::readable::{self, TokenStyle};

impl Vocab {
    /// Raw candidates for a word typed by a user, in preference order:
    /// as given, with the leading-space marker, without it; lowercased too
    /// when the tokenizer lowercases its input.
    fn word_variants(&self, word: &str) -> Vec<String> {
        let mut forms = vec![word.to_string()];
        if self.lowercase {
            let lower = word.to_lowercase();
            if lower != word {
                forms.push(lower);
            }
        }
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: String| {
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        };
        for form in &forms {
            push(form.clone());
            let bare = form.trim_start_matches(' ');
            match self.style {
                TokenStyle::ByteLevel | TokenStyle::Metaspace { .. } => {
                    push(readable::to_raw(&format!(" {bare}"), &self.style));
                    push(readable::to_raw(bare, &self.style));
                }
                TokenStyle::WordPiece { .. } | TokenStyle::Plain => push(bare.to_string()),
            }
        }
        out
    }

    /// The id of an entry given as stored (`Ġking`) or as embscope prints
    /// it (` king`, `<0xC3>` for a lone byte): exact, no other variants.
    pub fn entry_id(&self, token: &str) -> Option<u32> {
        self.id(token).or_else(|| {
            let raw = readable::to_raw(token, &self.style);
            (raw != token).then(|| self.id(&raw)).flatten()
        })
    }

    /// Finds the entry for a word such as `Paris`: the exact entry first,
    /// then the form with the leading-space marker (`ĠParis`, `▁Paris`),
    /// then without it — the first that exists, with the raw entry used.
    pub fn resolve_word(&self, word: &str) -> Option<(u32, String)> {
        self.word_variants(word)
            .into_iter()
            .find_map(|raw| self.id(&raw).map(|id| (id, raw)))
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
        for form in &cased {
            for raw in self.word_variants(form) {
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
        for e in &self.entries {
            let stem = match marker {
                Some(m) => e.token.strip_prefix(m).unwrap_or(&e.token),
                None => e.token.as_str(),
            };
            if stem.is_empty() {
                continue;
            }
            let stem_lower = stem.to_lowercase();
            if stem_lower.starts_with(&needle) {
                longer.push((stem.len(), e.id, &e.token));
            } else if needle.starts_with(&stem_lower) {
                shorter.push((usize::MAX - stem.len(), e.id, &e.token));
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
