//! Reading `vocab.txt`, `vocab.json`, `merges.txt` and SentencePiece
//! models as `transformers` reads them, and writing the tokenizer.json
//! model of what they hold.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::vocab::derived_merges::{self, TooMany};
use crate::vocab::entries::Entries;
use crate::vocab::parse::{self, RawVocab};

use super::spm;

/// The model vocabulary of the older files.
pub(super) enum Vocabulary {
    /// vocab.txt's lines.
    WordPiece(Vec<String>),
    /// vocab.json's bytes (checked), its entries, and merges.txt's merges.
    ByteLevel {
        json: Vec<u8>,
        entries: Entries,
        /// merges.txt's merges as a JSON array.
        merges: Vec<u8>,
    },
    /// A SentencePiece model's pieces (tokenizer.model, spiece.model).
    SentencePiece(spm::Model),
}

/// Reads a file of at most the size a tokenizer.json may have.
pub(super) fn read_limited(path: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    parse::check_size(path, meta.len(), parse::MAX_TOKENIZER_BYTES)?;
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

/// `bytes` as UTF-8 text, or an error naming the line that is not.
fn utf8_text(path: &Path, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        Error::bad_file(path, format!("line {line} is not valid UTF-8"))
    })
}

/// The lines of `text` as Python's text mode reads them: `\n`, `\r\n`
/// and `\r` end a line; a last line without an end counts.
fn python_lines(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let (mut out, mut start, mut i) = (Vec::new(), 0, 0);
    while i < b.len() {
        match b[i] {
            b'\n' | b'\r' => {
                out.push(&text[start..i]);
                i += if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < b.len() {
        out.push(&text[start..]);
    }
    out
}

impl Vocabulary {
    /// vocab.txt: line `i` is the entry of id `i` (as `BertTokenizer`'s
    /// `load_vocab` reads it).
    pub(super) fn word_piece(path: &Path) -> Result<Vocabulary> {
        let text = utf8_text(path, read_limited(path)?)?;
        let lines = python_lines(&text);
        if lines.len() as u64 > u64::from(parse::MAX_ID) {
            return Err(Error::bad_file(
                path,
                format!(
                    "{} lines, more than the limit of {} tokens",
                    lines.len(),
                    parse::MAX_ID
                ),
            ));
        }
        Ok(Vocabulary::WordPiece(
            lines.into_iter().map(str::to_string).collect(),
        ))
    }

    /// vocab.json (an object token → id) and merges.txt (`left right` per
    /// line; `#version` lines and a last empty line skipped, as the
    /// `tokenizers` crate reads them).
    pub(super) fn byte_level(vocab: &Path, merges: &Path) -> Result<Vocabulary> {
        let json = read_limited(vocab)?;
        let expected = "expected a JSON object of token ids";
        if json.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(Error::bad_file(vocab, expected));
        }
        let raw: RawVocab = serde_json::from_slice(&json)
            .map_err(|e| Error::bad_file(vocab, format!("{expected}: {e}")))?;
        let text = utf8_text(merges, read_limited(merges)?)?;
        // The merges as a JSON array of `"left right"` strings, written as
        // they are read: no string per merge.
        let mut array = Vec::with_capacity(text.len() + text.len() / 4);
        array.push(b'[');
        for (i, line) in text.split_terminator('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.starts_with("#version") {
                continue;
            }
            if line.split(' ').count() != 2 {
                return Err(Error::bad_file(
                    merges,
                    format!(
                        "line {} is {line:?}, expected two tokens separated by one space",
                        i + 1
                    ),
                ));
            }
            if array.len() > 1 {
                array.push(b',');
            }
            serde_json::to_writer(&mut array, line).expect("a string serializes");
        }
        array.push(b']');
        Ok(Vocabulary::ByteLevel {
            json,
            entries: raw.entries,
            merges: array,
        })
    }

    /// tokenizer.model's pieces, or `None` for a tiktoken file of that
    /// name (Llama 3's original release), which is not read.
    pub(super) fn sentence_piece(path: &Path) -> Result<Option<Vocabulary>> {
        let bytes = read_limited(path)?;
        if spm::is_tiktoken(&bytes) {
            return Ok(None);
        }
        let model = spm::parse(&bytes)
            .map_err(|e| Error::bad_file(path, format!("not a SentencePiece model: {e}")))?;
        Ok(Some(Vocabulary::SentencePiece(model)))
    }

    /// The pieces of a SentencePiece vocabulary (none for the others).
    pub(super) fn pieces(&self) -> &[spm::Piece] {
        match self {
            Vocabulary::SentencePiece(model) => &model.pieces,
            _ => &[],
        }
    }

    /// Token → id, as Python's dict of them (as transformers loads the
    /// file) keeps it: the last id of a repeated token. Its length is the
    /// vocabulary size transformers counts.
    pub(super) fn index(&self) -> HashMap<&str, u32> {
        match self {
            Vocabulary::WordPiece(lines) => (lines.iter().enumerate())
                .map(|(id, t)| (t.as_str(), id as u32))
                .collect(),
            Vocabulary::ByteLevel { entries, .. } => {
                entries.iter().map(|e| (e.token, e.id)).collect()
            }
            Vocabulary::SentencePiece(m) => (m.pieces.iter().enumerate())
                .map(|(id, p)| (p.text.as_str(), id as u32))
                .collect(),
        }
    }

    /// tokenizer.json: `head`'s members, then `model` with the vocab (and
    /// merges) written after its settings, as in real files. A
    /// SentencePiece BPE model gets the merges transformers derives from
    /// its pieces when `encodes` (none otherwise: its encoding is refused);
    /// the second value says why it cannot encode after all, when its
    /// pieces imply more merges than embscope derives.
    pub(super) fn write(
        &self,
        head: &Value,
        model: &Value,
        encodes: bool,
    ) -> (Vec<u8>, Option<String>) {
        let mut out = serde_json::to_vec(head).expect("a Value serializes");
        out.pop(); // the closing brace
        out.extend_from_slice(b",\"model\":");
        let settings = serde_json::to_vec(model).expect("a Value serializes");
        out.extend_from_slice(&settings[..settings.len() - 1]);
        out.extend_from_slice(b",\"vocab\":");
        let mut refused = None;
        match self {
            Vocabulary::WordPiece(lines) => object(&mut out, lines.iter().map(String::as_str)),
            Vocabulary::ByteLevel { json, merges, .. } => {
                out.extend_from_slice(json);
                out.extend_from_slice(b",\"merges\":");
                out.extend_from_slice(merges);
            }
            // Unigram's vocab is a list of [piece, score]; a BPE model's
            // pieces are an object, its merges derived when it encodes.
            Vocabulary::SentencePiece(m) if !m.bpe => {
                // A score that is not finite would be written as null.
                let list: Vec<(&str, f32)> = (m.pieces.iter())
                    .map(|p| {
                        (
                            p.text.as_str(),
                            if p.score.is_finite() { p.score } else { 0.0 },
                        )
                    })
                    .collect();
                serde_json::to_writer(&mut out, &list).expect("pieces serialize");
            }
            Vocabulary::SentencePiece(m) => {
                object(&mut out, m.pieces.iter().map(|p| p.text.as_str()));
                out.extend_from_slice(b",\"merges\":");
                let merges = match encodes.then(|| spm_merges(&m.pieces)) {
                    Some(Ok(merges)) => merges,
                    Some(Err(too_many)) => {
                        refused = Some(too_many.to_string());
                        Vec::new()
                    }
                    None => Vec::new(),
                };
                serde_json::to_writer(&mut out, &merges).expect("pairs serialize");
            }
        }
        out.extend_from_slice(b"}}");
        (out, refused)
    }
}

/// Writes a JSON object of `tokens`, each to its place: `{"a":0,"b":1}`.
fn object<'a>(out: &mut Vec<u8>, tokens: impl Iterator<Item = &'a str>) {
    out.push(b'{');
    for (id, token) in tokens.enumerate() {
        if id > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, token).expect("a string serializes");
        out.extend_from_slice(format!(":{id}").as_bytes());
    }
    out.push(b'}');
}

/// The merges transformers derives from a SentencePiece BPE model's pieces
/// (`generate_merges`): every split of a piece into two pieces, by the
/// piece's id, then by where it splits. A piece given twice counts at its
/// last id, as in Python's dict of them. Bounded (see `derived_merges`).
fn spm_merges(pieces: &[spm::Piece]) -> std::result::Result<Vec<[&str; 2]>, TooMany> {
    let index: HashMap<&str, usize> = (pieces.iter().enumerate())
        .map(|(id, p)| (p.text.as_str(), id))
        .collect();
    // Each string once, at its last id, in id order.
    let held: Vec<&str> = (pieces.iter().enumerate())
        .filter(|&(id, p)| index.get(p.text.as_str()) == Some(&id))
        .map(|(_, p)| p.text.as_str())
        .collect();
    let bytes: Vec<&[u8]> = held.iter().map(|t| t.as_bytes()).collect();
    let cuts = derived_merges::cuts(&bytes, 0..held.len() as u32, true)?;
    Ok(cuts
        .iter()
        .map(|c| [held[c.left as usize], held[c.right as usize]])
        .collect())
}
