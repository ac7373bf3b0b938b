//! The tokenizer side of a checkpoint: id ↔ token tables, human forms of
//! entries, word lookup, encoding, and special tokens from every file.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Vocab`] and its queries: tokens by id, ids by string, encoding, duplicates |
//! | `load.rs` | reading tokenizer.json (or the other files) and the special-token files into a [`Vocab`] |
//! | `parse.rs` | the cheap read of tokenizer.json: model vocab, added tokens, storage settings |
//! | `scan/` | the hand-written scan of tokenizer.json's merges and vocab (see its table) |
//! | `preview.rs` | the id → token table while tokenizer.json is still being read |
//! | `entries.rs` | every token string in one buffer |
//! | `merge_fit.rs` | BPE merges the tokenizers crate would refuse or panic on, found first |
//! | `derived_merges.rs` | the merges of a vocabulary without a merge list: every cut of a piece into two, bounded |
//! | `other_files/` | tokenizer files other than tokenizer.json, converted to one (see its table) |
//! | `gguf.rs` | the vocabulary of a GGUF file's metadata |
//! | `gguf_pre.rs` | llama.cpp's pre-tokenizer names and the splits they stand for |
//! | `gguf_tokenizer.rs` | a `tokenizers::Tokenizer` rebuilt from GGUF metadata |
//! | `special.rs` | special tokens as every file beside the weights declares them |
//! | `chat_template.rs` | chat templates from every file that keeps one, rendered on a sample conversation |
//! | `readable.rs` | human forms of raw entries, and back |
//! | `kind.rs` | what a token stands for as bytes, and what kind that makes it |
//! | `reach/` | whether some text reaches a token, as the tokenizer runs (see its table) |
//! | `row_kind.rs` | what each row of the matrices is: text, special, reserved, padding … |
//! | `lookup.rs` | words typed by a user resolved to entries, and suggestions |
//! | `normalize.rs` | a typed word normalised as the tokenizer normalises text |
//! | `contain.rs` | calls into the tokenizers crate with its panics kept inside, and the faults checked first |
//! | `tests*.rs`, `gguf_tests.rs` | tests on files the fixture writers make |
//!
//! Loading is cheap: tokenizer.json's `model.vocab` and `added_tokens` are
//! read (merges checked and skipped, or their places recorded for
//! [`Vocab::load_keeping_merges`]) by the scan and serde into one buffer
//! of token strings; the full `tokenizers::Tokenizer` is built once, on
//! the first [`Vocab::encode`].

pub mod chat_template;
mod contain;
mod derived_merges;
mod entries;
mod gguf;
mod gguf_pre;
mod gguf_tokenizer;
mod kind;
mod load;
mod lookup;
mod merge_fit;
mod normalize;
mod other_files;
pub(crate) mod parse;
mod preview;
mod reach;
mod readable;
mod row_kind;
pub(crate) mod scan;
mod special;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tokenizers::Tokenizer;

use crate::error::{Error, Result};
use crate::same_hash::sharing_hash;
use entries::{Entries, Entry};
use normalize::WordNormalizer;

pub use gguf::{GGUF_SOURCE, TokenType};
pub use kind::{TokenKind, is_placeholder};
pub use lookup::WordMatch;
pub use preview::Preview;
pub use readable::TokenStyle;
pub use row_kind::{RowKind, RowKinds};
pub use special::{ROLES, SpecialDecl};

/// Marks an empty slot of the dense id table.
const NO_ENTRY: u32 = u32::MAX;

/// Lookups by string answered by scanning the entries before the string
/// map is built: a scan of a 128k vocabulary costs about a hundredth of
/// building the map.
const SCANS_BEFORE_MAP: usize = 32;

/// Added tokens up to this many are scanned for a lookup by string; with
/// more (a file may add hundreds of thousands), the string map answers.
const ADDED_SCAN_MAX: usize = 4096;

/// One entry of tokenizer.json `added_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AddedToken {
    /// The id it is added under.
    pub id: u32,
    /// The token string.
    pub content: String,
    /// Whether it is marked `special`.
    pub special: bool,
}

/// A clash in the id ↔ token tables (model vocab and added tokens together).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Duplicate {
    /// One id carries different strings.
    Id {
        /// The id.
        id: u32,
        /// The distinct strings, in file order (model vocab first).
        tokens: Vec<String>,
    },
    /// One string is stored under different ids.
    Token {
        /// The string.
        token: String,
        /// The distinct ids, ascending.
        ids: Vec<u32>,
    },
}

/// The cheap tokenizer summary shown by `info`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenizerSummary {
    /// The tokenizer.json read (or the older vocabulary file, see
    /// `converted`).
    pub file: PathBuf,
    /// `BPE`, `WordPiece`, `Unigram` or `WordLevel`.
    pub model: String,
    /// Highest id + 1 over model vocab and added tokens.
    pub size: usize,
    /// Number of `added_tokens` entries.
    pub added: usize,
    /// Number of distinct ids below `size` that [`Vocab::is_special`].
    pub special: usize,
    /// For a vocabulary read from older files (no tokenizer.json): what
    /// was read and how it was converted; `null` otherwise.
    pub converted: Option<Conversion>,
}

/// How a vocabulary was read from the older files of a download without a
/// tokenizer.json (WordPiece `vocab.txt`, byte-level BPE `vocab.json` +
/// `merges.txt`: as `transformers` converts them to a tokenizer.json; a
/// SentencePiece `tokenizer.model` or T5 `spiece.model`: its pieces).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Conversion {
    /// The files read (vocabulary first, then merges.txt and
    /// added_tokens.json when read).
    pub files: Vec<PathBuf>,
    /// The `transformers` tokenizer class converted as, or the one the
    /// files name when it is not converted (then `encodes` is false).
    pub class: Option<String>,
    /// Whether text can be encoded: false for a class not converted and
    /// for a SentencePiece `tokenizer.model`, whose pieces are read as the
    /// vocabulary only.
    pub encodes: bool,
    /// Why text is not encoded, when it is not.
    pub refused: Option<String>,
}

/// The vocabulary of a checkpoint, read from its tokenizer files.
pub struct Vocab {
    file: PathBuf,
    model: String,
    style: TokenStyle,
    /// tokenizer.json's `normalizer` (for a GGUF vocabulary, what llama.cpp
    /// applies), of which word queries take the steps that change words.
    normalizer: Option<serde_json::Value>,
    /// The word normaliser, built on the first word query.
    words: OnceLock<std::result::Result<WordNormalizer, String>>,
    /// Model vocab entries in file order, then added tokens.
    entries: Entries,
    /// id → index into `entries` (added tokens win), `NO_ENTRY` when unused.
    by_id: Vec<u32>,
    /// Indices of the entries whose id's slot in `by_id` another entry
    /// holds (a model id given twice, or a model entry an added token
    /// shadows), ascending: the only places a duplicated id can show.
    shadowed: Vec<u32>,
    /// token → id (added tokens win, else the first model entry), built on
    /// the first lookup by string: `info` and `#ID` queries never need it,
    /// and on a Llama-3-sized vocabulary it is a third of the load time.
    by_token: OnceLock<foldhash::HashMap<String, u32>>,
    /// Lookups by string answered by a scan so far (see [`Vocab::id`]).
    scans: std::sync::atomic::AtomicUsize,
    added: Vec<AddedToken>,
    special_ids: HashSet<u32>,
    decls: Vec<SpecialDecl>,
    config_added: Vec<(u32, String)>,
    /// The special-token files that could not be read (see
    /// [`Vocab::unreadable`]).
    unreadable: Vec<Error>,
    /// tokenizer.json's `model.continuing_subword_prefix` (empty when
    /// none), which the tokenizers crate takes off each merge's second part.
    merge_prefix: String,
    /// GGUF token types by id (empty for tokenizer.json).
    kinds: Vec<TokenType>,
    /// How to build the tokenizer of a GGUF vocabulary.
    gguf: Option<Box<gguf::Recipe>>,
    /// tokenizer.json kept with its merges' places, when asked for.
    source: Option<Box<parse::Source>>,
    /// The tokenizer.json made from older files, when there was none.
    made: Option<Box<other_files::Made>>,
    /// The built tokenizer, or the message saying why it cannot be built.
    tokenizer: OnceLock<std::result::Result<Tokenizer, String>>,
}

impl fmt::Debug for Vocab {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vocab")
            .field("file", &self.file)
            .field("model", &self.model)
            .field("style", &self.style)
            .field("size", &self.size())
            .field("added", &self.added.len())
            .finish_non_exhaustive()
    }
}

impl Vocab {
    /// The tokenizer.json (or GGUF file) this vocabulary was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// tokenizer.json's bytes, where its vocab and merges lie and the
    /// places of the merges' strings, when loaded by
    /// [`Vocab::load_keeping_merges`] and read by the fast scan.
    pub(crate) fn merges_source(&self) -> Option<&parse::Source> {
        self.source.as_deref()
    }

    /// The tokenizer model: `BPE`, `WordPiece`, `Unigram` or `WordLevel`.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// How raw entries encode text.
    pub fn style(&self) -> &TokenStyle {
        &self.style
    }

    /// The vocabulary size as it matters for the matrix: highest id + 1 over
    /// model vocab and added tokens (0 when both are empty).
    pub fn size(&self) -> usize {
        self.by_id.len()
    }

    fn entry(&self, id: u32) -> Option<Entry<'_>> {
        let index = *self.by_id.get(id as usize)?;
        self.entries.get(index as usize)
    }

    /// Whether the tokenizer has an entry for `id`: [`Vocab::token`] is
    /// `Some` (whether some text reaches it is [`Vocab::reached`]).
    pub fn has_token(&self, id: u32) -> bool {
        self.by_id.get(id as usize).is_some_and(|&i| i != NO_ENTRY)
    }

    /// The raw string of `id` as stored (an added token wins over a model
    /// vocab entry with the same id).
    pub fn token(&self, id: u32) -> Option<&str> {
        self.entry(id).map(|e| e.token)
    }

    /// The ids, ascending, whose token (as [`Vocab::token`] gives it)
    /// `keep(id, token)` accepts. Walks the entries as stored rather than
    /// id by id: a file may list its vocab in any order (by string, say),
    /// and this reads the token strings in the order they lie in memory.
    pub fn ids_where(&self, keep: impl Fn(u32, &str) -> bool) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .entries
            .iter()
            .enumerate()
            .filter(|&(index, e)| {
                self.by_id[e.id as usize] as usize == index && keep(e.id, e.token)
            })
            .map(|(_, e)| e.id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The model vocab entries (not the added tokens) and their ids, in
    /// file order.
    pub fn model_entries(&self) -> impl Iterator<Item = (&str, u32)> {
        self.entries
            .iter()
            .filter(|e| !e.added)
            .map(|e| (e.token, e.id))
    }

    /// The human form of `id` on one line: byte-level chars turned back to
    /// text, `▁` as a space, `<0x0A>` as the char it stands for (unless
    /// another entry prints as that char), control characters, `\` and `"`
    /// escaped (`\n`, `\u{7}`, `\\`, `\"`); WordPiece `##` kept. So that
    /// entries print apart, and [`Vocab::entry_id`] reads every form back.
    pub fn readable(&self, id: u32) -> Option<String> {
        let e = self.entry(id)?;
        if let (TokenStyle::Metaspace { .. }, false, Some(b)) =
            (&self.style, e.added, readable::byte_fallback(e.token))
            && b.is_ascii()
        {
            // Another entry printing as the char: a model entry stored as
            // the char (`A`, `▁` for a space) or an added token.
            let text = char::from(b).to_string();
            let raw = readable::to_raw(&text, &self.style);
            if self.id(&raw).or_else(|| self.id(&text)).is_some() {
                return Some(e.token.to_string());
            }
        }
        Some(readable::readable(e.token, &self.style, e.added))
    }

    /// The id of an exact raw entry (model vocab or added token).
    pub fn id(&self, token: &str) -> Option<u32> {
        // Special tokens are added tokens: a short scan answers them
        // without building the map of the whole vocabulary (with many
        // added tokens, the map answers: it has them too).
        let few_added = self.added.len() <= ADDED_SCAN_MAX;
        if few_added && let Some(a) = self.added.iter().rev().find(|a| a.content == token) {
            return Some(a.id);
        }
        // A few lookups (a word query tries two or three forms) scan the
        // entries, far cheaper than building the map; many build it.
        if few_added
            && self.by_token.get().is_none()
            && self
                .scans
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                < SCANS_BEFORE_MAP
        {
            return self
                .entries
                .iter()
                .find(|e| !e.added && e.token == token)
                .map(|e| e.id);
        }
        self.by_token
            .get_or_init(|| {
                let mut map = foldhash::HashMap::with_capacity_and_hasher(
                    self.entries.len(),
                    foldhash::fast::RandomState::default(),
                );
                for e in self.entries.iter() {
                    if e.added {
                        map.insert(e.token.to_string(), e.id);
                    } else {
                        map.entry(e.token.to_string()).or_insert(e.id);
                    }
                }
                map
            })
            .get(token)
            .copied()
    }

    /// Encodes `text` with the full tokenizer, built from the file (or, for
    /// a GGUF, from its metadata) on the first call and kept. Padding and
    /// truncation set in the file are turned off: the ids are those of the
    /// text (plus the template's special tokens when `add_special_tokens`).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let tokenizer = self.built()?;
        if add_special_tokens && let Some(id) = undefined_template_token(tokenizer) {
            return Err(Error::bad_file(
                &self.file,
                format!(
                    "the post_processor's template adds the special token {id:?}, which its special_tokens do not define"
                ),
            ));
        }
        if let Some(recipe) = self.gguf.as_deref().filter(|_| add_special_tokens) {
            gguf_tokenizer::added_specials(recipe, self)
                .map_err(|e| Error::bad_file(&self.file, e))?;
        }
        let encoding = contain::contained(|| tokenizer.encode(text, add_special_tokens))
            .map_err(|e| Error::bad_file(&self.file, format!("cannot encode text: {e}")))?
            .map_err(|e| Error::CannotEncode {
                text: text.to_string(),
                why: one_line(&e.to_string()),
            })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The ids of `text`, no special tokens added, as [`Vocab::encode`]
    /// gives them but without the offsets it also computes: for counting
    /// the tokens of a data set, line by line on every core.
    pub fn encode_ids(&self, text: &str) -> Result<Vec<u32>> {
        let tokenizer = self.built()?;
        let encoding = contain::contained(|| tokenizer.encode_fast(text, false))
            .map_err(|e| Error::bad_file(&self.file, format!("cannot encode text: {e}")))?
            .map_err(|e| Error::CannotEncode {
                text: text.chars().take(80).collect(),
                why: one_line(&e.to_string()),
            })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The full tokenizer, built on the first call and kept.
    fn built(&self) -> Result<&Tokenizer> {
        let built = self.tokenizer.get_or_init(|| match &self.gguf {
            Some(recipe) => gguf_tokenizer::build(recipe, self),
            None => self.tokenizer_from_file(),
        });
        built
            .as_ref()
            .map_err(|e| Error::bad_file(&self.file, e.clone()))
    }

    /// The tokenizer of this vocabulary's tokenizer.json, without the
    /// padding and truncation a file may set (sentence-transformers exports
    /// pad to 128): lookups want the text's own tokens only. The error is
    /// the message to show after the file name; a BPE merge the tokenizers
    /// crate would panic on is one (see `merge_fit`).
    fn tokenizer_from_file(&self) -> std::result::Result<Tokenizer, String> {
        let failed = |e: &dyn fmt::Display| {
            format!("cannot build the tokenizer: {}", one_line(&e.to_string()))
        };
        let bytes: std::borrow::Cow<[u8]> = match &self.made {
            Some(made) => match &made.refused {
                Some(why) => return Err(format!("cannot encode text: {why}; use --id or --token")),
                None => std::borrow::Cow::Borrowed(&made.json),
            },
            None => std::fs::read(&self.file).map_err(|e| failed(&e))?.into(),
        };
        if !matches!(self.model.as_str(), "WordPiece" | "WordLevel" | "Unigram") {
            let longest = self.model_entries().map(|(t, _)| t.len()).max();
            let unfit = merge_fit::unfit_in_file(&bytes, longest.unwrap_or(0), &self.merge_prefix);
            if let Some(why) = unfit {
                return Err(failed(&why));
            }
        }
        if let Some(fault) = self.normalizer.as_ref().and_then(contain::normalizer_fault) {
            return Err(failed(&fault));
        }
        let mut tokenizer = contain::contained(|| Tokenizer::from_bytes(&bytes))
            .map_err(|e| failed(&e))?
            .map_err(|e| failed(&e))?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| failed(&e))?;
        Ok(tokenizer)
    }

    /// What is wrong with the tokenizer file that the tokenizers crate
    /// would fail on, found without building the tokenizer: a normaliser
    /// it cannot read. `None` when nothing is known to be wrong.
    pub fn tokenizer_fault(&self) -> Option<String> {
        self.normalizer.as_ref().and_then(contain::normalizer_fault)
    }

    /// Whether `id` is special: an added token marked special, an
    /// `added_tokens_decoder` entry marked special, or declared for a role
    /// by any file.
    pub fn is_special(&self, id: u32) -> bool {
        self.special_ids.contains(&id)
    }

    /// Every special-token declaration, from `config.json` (and its
    /// `text_config`), `generation_config.json`, `tokenizer_config.json`,
    /// `special_tokens_map.json` and the special added tokens of
    /// `tokenizer.json`, in that order.
    pub fn special_decls(&self) -> &[SpecialDecl] {
        &self.decls
    }

    /// The special-token files beside the tokenizer that could not be
    /// read, each error naming its file: the vocabulary was read without
    /// them, for its caller to say so.
    pub fn unreadable(&self) -> &[Error] {
        &self.unreadable
    }

    /// `tokenizer_config.json` `added_tokens_decoder` entries, by id.
    pub fn config_added_tokens(&self) -> &[(u32, String)] {
        &self.config_added
    }

    /// tokenizer.json `added_tokens`, in file order.
    pub fn added_tokens(&self) -> &[AddedToken] {
        &self.added
    }

    /// What the tokenizer's normaliser does to a word's characters, in
    /// words (`lowercase, strip accents`; `none`), alike for normalisers
    /// that treat text alike.
    pub fn normalization(&self) -> String {
        normalize::describe(self.normalizer.as_ref())
    }

    /// The cheap summary shown by `info`.
    pub fn summary(&self) -> TokenizerSummary {
        TokenizerSummary {
            file: self.file.clone(),
            model: self.model.clone(),
            size: self.size(),
            added: self.added.len(),
            special: self
                .special_ids
                .iter()
                .filter(|&&id| (id as usize) < self.size())
                .count(),
            converted: self.converted(),
        }
    }

    /// How the vocabulary was read from older files, when there was no
    /// tokenizer.json.
    pub fn converted(&self) -> Option<Conversion> {
        self.made.as_ref().map(|m| Conversion {
            files: m.files.clone(),
            class: m.class.clone(),
            encodes: m.refused.is_none(),
            refused: m.refused.clone(),
        })
    }

    /// Ids carrying different strings and strings stored under different
    /// ids, over model vocab and added tokens (an added token repeating its
    /// vocab entry is not a duplicate). Ids ascending, then tokens sorted.
    pub fn duplicates(&self) -> Vec<Duplicate> {
        // An id is duplicated when an entry that does not hold its slot
        // has another string than the one that does. Its strings are
        // listed in entry order, each once.
        let token_of = |index: u32| self.entries.get(index as usize).map(|e| (e.id, e.token));
        let mut shadowed: Vec<(u32, u32)> = (self.shadowed.iter())
            .filter_map(|&index| Some((token_of(index)?.0, index)))
            .collect();
        shadowed.sort_unstable();
        let mut by_id = Vec::new();
        for run in shadowed.chunk_by(|a, b| a.0 == b.0) {
            let (id, holder) = (run[0].0, self.by_id[run[0].0 as usize]);
            let mut at: Vec<(&str, u32)> = std::iter::once(holder)
                .chain(run.iter().map(|&(_, index)| index))
                .filter_map(|index| Some((token_of(index)?.1, index)))
                .collect();
            // First each string's earliest entry, then entry order.
            at.sort_unstable();
            at.dedup_by_key(|&mut (token, _)| token);
            if at.len() > 1 {
                at.sort_unstable_by_key(|&(_, index)| index);
                let tokens = at.into_iter().map(|(t, _)| t.to_string()).collect();
                by_id.push((id, tokens));
            }
        }
        // A string is duplicated when its entries have different ids.
        let mut pairs = self.shared();
        pairs.sort_unstable();
        pairs.dedup();
        let mut out: Vec<Duplicate> = by_id
            .into_iter()
            .map(|(id, tokens)| Duplicate::Id { id, tokens })
            .collect();
        out.extend(
            pairs
                .chunk_by(|a, b| a.0 == b.0)
                .filter(|run| run.len() > 1)
                .map(|run| Duplicate::Token {
                    token: run[0].0.to_string(),
                    ids: run.iter().map(|&(_, id)| id).collect(),
                }),
        );
        out
    }

    /// `(token, id)` of the entries whose string's hash another entry's
    /// has too, unsorted: every entry whose string another has, and the
    /// rare ones that only share a hash. Each string is hashed once; the
    /// entries whose hash repeats ([`sharing_hash`]) are sorted by it, for
    /// the caller's exact comparison of strings.
    fn shared(&self) -> Vec<(&str, u32)> {
        use std::hash::BuildHasher;
        let state = foldhash::fast::FixedState::with_seed(0x5eed);
        let hashes: Vec<u64> = self
            .entries
            .iter()
            .map(|e| state.hash_one(e.token))
            .collect();
        let indexed = hashes.iter().enumerate().map(|(i, &h)| (h, i));
        let mut maybe = sharing_hash(indexed, |&(h, _)| h);
        maybe.sort_unstable();
        maybe
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|run| run.len() > 1)
            .flatten()
            .filter_map(|&(_, i)| self.entries.get(i))
            .map(|e| (e.token, e.id))
            .collect()
    }
}

/// Special-token declarations of the model in `dir` without needing a
/// vocabulary: the config files, plus the special added tokens of
/// `tokenizer.json` when there is one (then the same as
/// [`Vocab::special_decls`]).
pub fn special_decls(dir: &Path, config: Option<&serde_json::Value>) -> Result<Vec<SpecialDecl>> {
    match Vocab::load(dir, config)? {
        Some(vocab) => Ok(vocab.decls),
        None => Ok(special::collect(dir, config).decls),
    }
}

/// The special-token declarations of the config files in `dir` alone
/// (`config` is the parsed `config.json`), without reading a tokenizer,
/// and the files among them that could not be read (each error naming
/// its file), which declare nothing.
pub fn config_file_decls(
    dir: &Path,
    config: Option<&serde_json::Value>,
) -> (Vec<SpecialDecl>, Vec<Error>) {
    let declared = special::collect(dir, config);
    (declared.decls, declared.unreadable)
}

/// The first special token that a template post-processor of `tokenizer`
/// adds to a text (its `single` template) without defining it in its
/// `special_tokens`. The tokenizers crate checks this when a template is
/// built in code, not when one is read from a file, and panics when it
/// encodes with the missing token.
fn undefined_template_token(tokenizer: &Tokenizer) -> Option<String> {
    let processor = serde_json::to_value(tokenizer.get_post_processor()?).ok()?;
    let mut templates = Vec::new();
    parse::find_type(&processor, "TemplateProcessing", &mut templates);
    templates.into_iter().find_map(|t| {
        let defined = t
            .get("special_tokens")
            .and_then(serde_json::Value::as_object);
        t.get("single")?
            .as_array()?
            .iter()
            .filter_map(|piece| piece.pointer("/SpecialToken/id")?.as_str())
            .find(|id| !defined.is_some_and(|d| d.contains_key(*id)))
            .map(str::to_string)
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "../../fixtures/gen/tokenizer_files.rs"]
mod tokenizer_files;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_words;
