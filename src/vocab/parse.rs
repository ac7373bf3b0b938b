//! The cheap read of `tokenizer.json`: model vocab, added tokens and the
//! few settings that say how entries are stored — nothing else.
//!
//! `merges` (hundreds of thousands of pairs in real files) are checked and
//! skipped, and an object `model.vocab` read, by a hand-written scan (see
//! [`super::scan`]); serde parses the rest and skips the post processor;
//! the full
//! `tokenizers::Tokenizer` is only built when text must be encoded.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::entries::{Entries, ReadEntries};
use super::preview::Preview;
use super::readable::TokenStyle;
use super::scan::{self, MergePlaces};
use crate::error::{Error, Result};

/// tokenizer.json files larger than this are refused (Llama 3's is 9 MB,
/// the largest known ones some tens of MB).
pub(crate) const MAX_TOKENIZER_BYTES: u64 = 1 << 30;

/// Token ids at or above this are refused: the id → token table is dense.
pub(crate) const MAX_ID: u32 = 1 << 24;

/// The parts of tokenizer.json embscope reads itself.
#[derive(Deserialize)]
pub(crate) struct RawTokenizer {
    #[serde(default)]
    pub added_tokens: Option<Vec<RawAdded>>,
    #[serde(default)]
    pub normalizer: Option<Value>,
    #[serde(default)]
    pub pre_tokenizer: Option<Value>,
    #[serde(default)]
    pub decoder: Option<Value>,
    pub model: RawModel,
}

/// One `added_tokens` entry.
#[derive(Deserialize)]
pub(crate) struct RawAdded {
    pub id: u32,
    pub content: String,
    #[serde(default)]
    pub special: bool,
}

/// The `model` object; merges are skipped, not stored.
#[derive(Deserialize)]
pub(crate) struct RawModel {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub vocab: Option<RawVocab>,
    #[serde(default)]
    pub merges: Option<IgnoredAny>,
    #[serde(default)]
    pub continuing_subword_prefix: Option<String>,
    #[serde(default)]
    pub max_input_chars_per_word: Option<IgnoredAny>,
}

/// `model.vocab`: an object token → id (BPE, WordPiece, WordLevel) or an
/// array of `[token, score]` whose index is the id (Unigram), read straight
/// into the vocabulary's entries without an intermediate `Value`.
pub(crate) struct RawVocab {
    pub entries: Entries,
    pub is_list: bool,
}

impl<'de> Deserialize<'de> for RawVocab {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(VocabVisitor)
    }
}

struct VocabVisitor;

impl<'de> Visitor<'de> for VocabVisitor {
    type Value = RawVocab;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of token ids or an array of [token, score] pairs")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<RawVocab, A::Error> {
        let mut entries = Entries::default();
        while let Some((token, id)) = map.next_entry::<String, u32>()? {
            entries.push(&token, id, false);
        }
        Ok(RawVocab {
            entries,
            is_list: false,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<RawVocab, A::Error> {
        let mut entries = Entries::default();
        while let Some((token, _score)) = seq.next_element::<(String, f64)>()? {
            let id = u32::try_from(entries.len())
                .map_err(|_| serde::de::Error::custom("more than 2^32 vocab entries"))?;
            entries.push(&token, id, false);
        }
        Ok(RawVocab {
            entries,
            is_list: true,
        })
    }
}

/// The bytes of a tokenizer.json: the mapped file, or one made in memory
/// from older tokenizer files (see `other_files`).
pub(crate) enum Bytes {
    Mapped(crate::mapped::Mapped),
    Made(Arc<[u8]>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Made(bytes) => bytes,
        }
    }
}

/// A tokenizer.json kept for a second look after the load: its mapped
/// bytes, where `model.vocab` (an object) and `model.merges` lie, and the
/// places of the merges' strings.
pub(crate) struct Source {
    pub bytes: Bytes,
    pub vocab: Range<usize>,
    pub merges: Range<usize>,
    pub places: MergePlaces,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("bytes", &self.bytes.len())
            .field("merges", &self.places.merges.len())
            .finish_non_exhaustive()
    }
}

/// Where the scan found `model.vocab` and `model.merges`, and the merges'
/// places: what a [`Source`] keeps besides the bytes.
type Found = (Range<usize>, Range<usize>, MergePlaces);

/// Refuses `path`, of `len` bytes, when it is larger than `limit`.
pub(crate) fn check_size(path: &Path, len: u64, limit: u64) -> Result<()> {
    if len > limit {
        return Err(Error::bad_file(
            path,
            format!("file is {len} bytes, more than the limit of {limit}"),
        ));
    }
    Ok(())
}

/// Reads and parses `path` (a tokenizer.json); with `keep`, also keeps it
/// as a [`Source`] when the scan read it (an object vocab and merges),
/// for a second look without a second scan. `preview` is called once the
/// scan has read the model vocab (see `Vocab::load_previewing`).
pub(crate) fn read(
    path: &Path,
    keep: bool,
    preview: Option<&mut dyn FnMut(&Preview)>,
) -> Result<(RawTokenizer, Option<Source>)> {
    let meta = std::fs::metadata(path).map_err(|err| Error::io(path, err))?;
    check_size(path, meta.len(), MAX_TOKENIZER_BYTES)?;
    let file = std::fs::File::open(path).map_err(|err| Error::io(path, err))?;
    // Mapping instead of reading saves copying the file and a quarter of
    // the load time; a file truncated while it is parsed is reported as
    // such (see `mapped`).
    let bytes = crate::mapped::Mapped::map(path, &file).map_err(|err| Error::io(path, err))?;
    read_bytes(path, Bytes::Mapped(bytes), keep, preview)
}

/// [`read`] for the bytes of a tokenizer.json at hand (one made from
/// older files); `path` names it in errors.
pub(crate) fn read_bytes(
    path: &Path,
    bytes: Bytes,
    keep: bool,
    preview: Option<&mut dyn FnMut(&Preview)>,
) -> Result<(RawTokenizer, Option<Source>)> {
    let (raw, found) = from_bytes(&bytes, keep, preview)
        .map_err(|err| Error::bad_file(path, format!("not a valid tokenizer file: {err}")))?;
    let source = found.map(|(vocab, merges, places)| Source {
        bytes,
        vocab,
        merges,
        places,
    });
    Ok((raw, source))
}

/// Parses the bytes of a tokenizer.json: as serde alone would, faster;
/// with `keep`, also says what the scan found, when it read the file.
fn from_bytes(
    bytes: &[u8],
    keep: bool,
    preview: Option<&mut dyn FnMut(&Preview)>,
) -> serde_json::Result<(RawTokenizer, Option<Found>)> {
    match scanned(bytes, keep, preview) {
        Some(parsed) => Ok(parsed),
        None => Ok((serde_json::from_slice(bytes)?, None)),
    }
}

/// The parse of `bytes` with the merges checked (their places recorded
/// when `keep`) and the vocab object read by the hand-written scan, in one
/// walk, the rest parsed by serde without them; `None` on anything
/// unexpected (or an error), or with nothing cut out: serde then parses
/// the whole file (and says what is wrong).
fn scanned(
    bytes: &[u8],
    keep: bool,
    mut preview: Option<&mut dyn FnMut(&Preview)>,
) -> Option<(RawTokenizer, Option<Found>)> {
    let mut places = keep.then(|| MergePlaces::for_file(bytes.len()));
    // Sized for entries of 12 bytes (`"ab": 1234,\n`; pretty-printed ones
    // are longer) in a vocab as long as the file, strings as long as it:
    // no copies as they grow, the pages beyond never touched. Capped (at
    // 4M entries, 64 MiB of strings) so that a huge file does not reserve
    // gigabytes at once.
    let read = RefCell::new(ReadEntries::with_capacity(
        (bytes.len() / 12).min(1 << 22),
        bytes.len().min(1 << 26),
    ));
    let escapes_ok = Cell::new(true);
    let layout = scan::locate(
        bytes,
        |merge| {
            if let Some(p) = &mut places {
                p.record(bytes, merge);
            }
        },
        |token, id| match token.text() {
            Some(text) => read.borrow_mut().push(&text, id),
            None => escapes_ok.set(false),
        },
        |added| {
            let Some(preview) = preview.as_mut().filter(|_| escapes_ok.get()) else {
                return;
            };
            // The added tokens written before the model, if serde reads them.
            let added: Vec<RawAdded> = match added.map(|r| serde_json::from_slice(&bytes[r])) {
                None => Vec::new(),
                Some(Ok(added)) => added,
                Some(Err(_)) => return,
            };
            let added: Vec<(u32, &str)> = added.iter().map(|a| (a.id, &*a.content)).collect();
            preview(&Preview {
                model: &read.borrow(),
                added: &added,
            });
        },
    )?;
    let mut cut: Vec<_> = layout.merges.clone().into_iter().collect();
    let entries = match &layout.vocab {
        Some(v) if layout.vocab_read && escapes_ok.get() => {
            let entries = read.into_inner().finish()?;
            cut.push(v.clone());
            Some(entries)
        }
        _ => None,
    };
    if cut.is_empty() {
        return None;
    }
    let mut raw: RawTokenizer = serde_json::from_slice(&scan::splice(bytes, &mut cut)).ok()?;
    let read_vocab = layout.vocab.filter(|_| entries.is_some());
    if let Some(entries) = entries {
        let is_list = false;
        raw.model.vocab = Some(RawVocab { entries, is_list });
    }
    let found = match (
        read_vocab,
        layout.merges,
        places.and_then(MergePlaces::complete),
    ) {
        (Some(vocab), Some(merges), Some(places)) => Some((vocab, merges, places)),
        _ => None,
    };
    Some((raw, found))
}

/// The model name as `info` shows it: the `type` when present, otherwise
/// inferred the way the tokenizers crate does for old files.
pub(crate) fn model_name(model: &RawModel) -> String {
    if let Some(kind) = &model.kind {
        return kind.clone();
    }
    let is_list = model.vocab.as_ref().is_some_and(|v| v.is_list);
    if is_list {
        "Unigram"
    } else if model.merges.is_some() {
        "BPE"
    } else if model.continuing_subword_prefix.is_some() || model.max_input_chars_per_word.is_some()
    {
        "WordPiece"
    } else {
        "WordLevel"
    }
    .to_string()
}

/// Every object of type `ty` in a (possibly nested `Sequence`) component.
pub(super) fn find_type<'a>(
    v: &'a Value,
    ty: &str,
    out: &mut Vec<&'a serde_json::Map<String, Value>>,
) {
    match v {
        Value::Object(obj) => {
            if obj.get("type").and_then(Value::as_str) == Some(ty) {
                out.push(obj);
            }
            for child in obj.values() {
                find_type(child, ty, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| find_type(item, ty, out)),
        _ => {}
    }
}

fn has_type(v: Option<&Value>, ty: &str) -> bool {
    let mut found = Vec::new();
    if let Some(v) = v {
        find_type(v, ty, &mut found);
    }
    !found.is_empty()
}

/// Which storage convention the entries follow, from the pre-tokenizer,
/// decoder, normalizer and model settings.
pub(crate) fn detect_style(raw: &RawTokenizer, model: &str) -> TokenStyle {
    let parts = [
        raw.pre_tokenizer.as_ref(),
        raw.decoder.as_ref(),
        raw.normalizer.as_ref(),
    ];
    if parts.iter().any(|p| has_type(*p, "ByteLevel")) {
        return TokenStyle::ByteLevel;
    }
    for part in parts.iter().flatten() {
        let mut found = Vec::new();
        find_type(part, "Metaspace", &mut found);
        if let Some(obj) = found.first() {
            let replacement = obj
                .get("replacement")
                .and_then(Value::as_str)
                .and_then(|s| s.chars().next())
                .unwrap_or('▁');
            return TokenStyle::Metaspace { replacement };
        }
    }
    // Llama 2 and friends in the legacy layout: Prepend("▁") / Replace(" ",
    // "▁") normalizers and a Replace("▁", " ") decoder.
    let mut found = Vec::new();
    for part in parts.iter().flatten() {
        find_type(part, "Replace", &mut found);
        find_type(part, "Prepend", &mut found);
    }
    let mentions_marker = found.iter().any(|obj| {
        obj.values().any(|v| match v {
            Value::String(s) => s.contains('▁'),
            Value::Object(o) => o
                .values()
                .any(|s| s.as_str().is_some_and(|s| s.contains('▁'))),
            _ => false,
        })
    });
    if mentions_marker {
        return TokenStyle::Metaspace { replacement: '▁' };
    }
    if model == "WordPiece" {
        let prefix = raw
            .model
            .continuing_subword_prefix
            .clone()
            .unwrap_or_else(|| "##".to_string());
        return TokenStyle::WordPiece { prefix };
    }
    TokenStyle::Plain
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a parse kept, comparable.
    fn summary(raw: &RawTokenizer) -> String {
        let added: Vec<_> = raw
            .added_tokens
            .iter()
            .flatten()
            .map(|a| (a.id, &a.content, a.special))
            .collect();
        let vocab = raw.model.vocab.as_ref().map(|v| {
            let entries: Vec<_> = v.entries.iter().map(|e| (e.token, e.id, e.added)).collect();
            (entries, v.is_list)
        });
        format!(
            "{added:?} {:?} {:?} {:?} {:?} {vocab:?} {}",
            raw.normalizer,
            raw.pre_tokenizer,
            raw.decoder,
            raw.model.kind,
            model_name(&raw.model)
        )
    }

    #[test]
    fn the_fast_path_gives_what_serde_gives_on_damaged_files() {
        // Every fixture tokenizer.json, and thousands of copies with one
        // byte changed to a JSON-significant one (or cut short): the scan
        // must accept exactly what serde accepts, with the same contents.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let files = [
            "pieces-byte-level",
            "pieces-sentencepiece",
            "bert",
            "untrained",
        ];
        let swaps = b"\"\\,:[]{} 0-9eu\n\xc3\xff";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut accepted, mut by_scan, mut kept_places) = (0, 0, 0);
        for dir in files {
            let original = std::fs::read(root.join(dir).join("tokenizer.json")).unwrap();
            for round in 0..600 {
                let mut b = original.clone();
                if round % 10 == 9 {
                    b.truncate(next(b.len()));
                } else {
                    let at = next(b.len());
                    b[at] = swaps[next(swaps.len())];
                }
                let fast = from_bytes(&b, false, None).map(|(raw, _)| raw);
                let slow = serde_json::from_slice::<RawTokenizer>(&b);
                match (&fast, &slow) {
                    (Ok(f), Ok(s)) => {
                        assert_eq!(summary(f), summary(s), "{dir} round {round}");
                        accepted += 1;
                        by_scan += usize::from(scanned(&b, false, None).is_some());
                        // Keeping the merges' places changes nothing read.
                        let (kept, found) = from_bytes(&b, true, None).unwrap();
                        assert_eq!(summary(&kept), summary(s), "{dir} round {round}");
                        kept_places += usize::from(found.is_some());
                    }
                    (Err(f), Err(s)) => assert_eq!(f.to_string(), s.to_string()),
                    _ => panic!(
                        "{dir} round {round}: fast {:?}, serde {:?}",
                        fast.as_ref().map(|_| ()),
                        slow.as_ref().map(|_| ())
                    ),
                }
            }
        }
        // Many changes land in strings and still parse, most of them by
        // the scan: both paths ran.
        assert!(accepted > 300, "{accepted} accepted");
        assert!(by_scan > 300, "{by_scan} of {accepted} read by the scan");
        assert!(
            kept_places > 200,
            "{kept_places} of {accepted} kept their merges' places"
        );
    }
}
