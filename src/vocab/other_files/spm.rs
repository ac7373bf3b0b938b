//! Reading the pieces of a SentencePiece model (`tokenizer.model`), a
//! protobuf `ModelProto`: field 1 holds the pieces in id order, each a
//! message of `piece` (1, a string), `score` (2, a float) and `type` (3:
//! 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte: the
//! numbers of GGUF's token types, [`TokenType`]);
//! field 2, the trainer spec, holds `model_type` (3: 1 Unigram, 2 BPE,
//! 3 word, 4 char) and `byte_fallback` (35). Everything else is skipped by
//! its wire type. Only what the vocabulary needs is read.

use crate::vocab::TokenType;

/// One piece: its text, score and type; its id is its place.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Piece {
    pub text: String,
    pub score: f32,
    pub kind: TokenType,
}

/// What embscope reads of a SentencePiece model.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Model {
    pub pieces: Vec<Piece>,
    /// Whether the trainer spec says BPE (else Unigram, word or char).
    pub bpe: bool,
    pub byte_fallback: bool,
}

/// Whether `bytes` look like a tiktoken BPE file (`base64 rank` lines, the
/// `tokenizer.model` of Llama 3's original release), not a protobuf.
pub(super) fn is_tiktoken(bytes: &[u8]) -> bool {
    let line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (token, rank) = (&line[..space], &line[space + 1..]);
    !token.is_empty()
        && token
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && !rank.is_empty()
        && rank.iter().all(u8::is_ascii_digit)
}

/// Parses a `ModelProto`; the error says what is wrong and where.
pub(super) fn parse(bytes: &[u8]) -> Result<Model, String> {
    let mut model = Model {
        pieces: Vec::new(),
        bpe: false,
        byte_fallback: false,
    };
    let mut r = Reader { bytes, at: 0 };
    while let Some((field, value)) = r.field()? {
        match (field, value) {
            (1, Value::Bytes(b)) => {
                let id = model.pieces.len();
                model
                    .pieces
                    .push(piece(b).map_err(|e| format!("piece {id}: {e}"))?);
            }
            (2, Value::Bytes(b)) => {
                let mut t = Reader { bytes: b, at: 0 };
                while let Some((field, value)) = t.field()? {
                    match (field, value) {
                        (3, Value::Varint(v)) => model.bpe = v == 2,
                        (35, Value::Varint(v)) => model.byte_fallback = v != 0,
                        _ => {}
                    }
                }
            }
            (1 | 2, _) => return Err(format!("field {field} has the wrong wire type")),
            _ => {}
        }
    }
    if model.pieces.is_empty() {
        return Err("no pieces".to_string());
    }
    Ok(model)
}

/// One `SentencePiece` message.
fn piece(bytes: &[u8]) -> Result<Piece, String> {
    let mut p = Piece {
        text: String::new(),
        score: 0.0,
        kind: TokenType::Normal,
    };
    let mut r = Reader { bytes, at: 0 };
    while let Some((field, value)) = r.field()? {
        match (field, value) {
            (1, Value::Bytes(b)) => {
                p.text = String::from_utf8(b.to_vec()).map_err(|_| "text is not UTF-8")?;
            }
            (2, Value::Fixed32(v)) => p.score = f32::from_bits(v),
            (3, Value::Varint(v)) => {
                p.kind = i64::try_from(v)
                    .ok()
                    .and_then(TokenType::from_code)
                    .ok_or_else(|| format!("type {v} is not a piece type"))?;
            }
            (1..=3, _) => return Err(format!("field {field} has the wrong wire type")),
            _ => {}
        }
    }
    Ok(p)
}

/// A field's value by wire type.
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// Reads fields off a message's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err(format!("cut short at byte {}", self.at));
            };
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("a varint longer than 10 bytes at byte {}", self.at))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("a field of {n} bytes at byte {} runs past the end", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// The next field number and value, `None` at the end.
    fn field(&mut self) -> Result<Option<(u64, Value<'a>)>, String> {
        if self.at == self.bytes.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let n = self.varint()?;
                Value::Bytes(self.take(n)?)
            }
            5 => {
                let b = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            other => return Err(format!("wire type {other} at byte {}", self.at)),
        };
        Ok(Some((key >> 3, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::tokenizer_files::write_sentencepiece_model;

    #[test]
    fn reads_pieces_types_and_the_trainer_spec() {
        let dir = tempfile::tempdir().unwrap();
        let pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("▁king", -3.5, 1)];
        write_sentencepiece_model(dir.path(), &pieces).unwrap();
        let mut m = std::fs::read(dir.path().join("tokenizer.model")).unwrap();
        // Fields this reader skips: a normalizer spec, a 64-bit value.
        m.extend_from_slice(b"\x1a\x05\x0a\x03nfk\x49\0\0\0\0\0\0\0\0");
        let model = parse(&m).unwrap();
        assert!(model.bpe && model.byte_fallback);
        let got: Vec<(&str, f32, TokenType)> = (model.pieces.iter())
            .map(|p| (p.text.as_str(), p.score, p.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("<unk>", 0.0, TokenType::Unknown),
                ("<s>", 0.0, TokenType::Control),
                ("▁king", -3.5, TokenType::Normal)
            ]
        );
        // Cut anywhere inside, it is an error, never a panic.
        for end in 1..m.len() {
            if let Ok(model) = parse(&m[..end]) {
                assert!(model.pieces.len() <= 3);
            }
        }
        assert_eq!(
            parse(&m[..5]).unwrap_err(),
            "a field of 14 bytes at byte 2 runs past the end"
        );
        assert_eq!(
            parse(b"\x0a\x02\x18\x09").unwrap_err(),
            "piece 0: type 9 is not a piece type"
        );
    }

    #[test]
    fn tiktoken_files_are_told_apart() {
        assert!(is_tiktoken(b"IQ== 0\nIg== 1\n"));
        assert!(!is_tiktoken(b"\x0a\x09\x0a\x05<unk>"));
        assert!(!is_tiktoken(b""));
    }
}
