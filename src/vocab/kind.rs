//! What a token stands for as bytes of text, and what kind of token that
//! makes it (special, a lone byte, a fragment of a UTF-8 char, or normal
//! text).

use serde::Serialize;

use super::readable::{byte_fallback, byte_level_char_to_byte};
use super::{TokenStyle, Vocab};

/// The kind of a vocabulary entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenKind {
    /// A special or control token (BOS, `[CLS]`), or a reserved
    /// placeholder (see [`is_placeholder`]).
    Special,
    /// A single byte that is not text on its own: a SentencePiece
    /// `<0xNN>` entry or a byte-level entry of one non-ASCII byte.
    Byte,
    /// Several bytes that are not valid UTF-8: a piece of a multi-byte char.
    PartialUtf8,
    /// Text.
    Normal,
}

/// Reserved placeholder entries, untrained by design: BERT's `[unused12]`,
/// Llama 3's `<|reserved_special_token_3|>`, Gemma's `<unused5>`, Mistral's
/// `<SPECIAL_42>` (the fillers after its named special tokens), DeepSeek
/// V3's `<｜place▁holder▁no▁7｜>`, Phi-3's `<|placeholder4|>` and Phi-4's
/// `<|dummy_12|>`. T5's `<extra_id_N>` sentinels are not among them: span
/// corruption trains them; nor DeepSeek V4's `<|place_holder_mm_span_N|>`,
/// which mark spans of multimodal input. Takes the token as text or as
/// bytes.
pub fn is_placeholder(token: impl AsRef<[u8]>) -> bool {
    let t = token.as_ref();
    (t.starts_with(b"[unused") && t.ends_with(b"]"))
        || (t.starts_with(b"<unused") && t.ends_with(b">"))
        || (t.starts_with(b"<|reserved") && t.ends_with(b"|>"))
        || numbered(t, b"<SPECIAL_", b">")
        || numbered(t, "<｜place▁holder▁no▁".as_bytes(), "｜>".as_bytes())
        || numbered(t, b"<|placeholder", b"|>")
        || numbered(t, b"<|dummy_", b"|>")
}

/// Whether `t` is `prefix`, a decimal number, then `suffix`.
fn numbered(t: &[u8], prefix: &[u8], suffix: &[u8]) -> bool {
    t.strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(suffix))
        .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
}

/// The text of an entry, as bytes.
pub(super) struct Text {
    /// What the entry stands for.
    pub bytes: Vec<u8>,
    /// A byte entry: SentencePiece `<0xNN>`, or one non-ASCII byte-level char.
    pub lone_byte: bool,
    /// A WordPiece continuation (`##ing`): it never starts a word.
    pub continuation: bool,
}

impl Vocab {
    /// The text of `id`'s entry; `None` when there is no entry.
    pub(super) fn text(&self, id: u32) -> Option<Text> {
        let e = self.entry(id)?;
        let raw = e.token;
        let plain = |bytes: Vec<u8>| Text {
            bytes,
            lone_byte: false,
            continuation: false,
        };
        if e.added {
            return Some(plain(raw.as_bytes().to_vec()));
        }
        Some(match &self.style {
            TokenStyle::ByteLevel => {
                let mut bytes = Vec::with_capacity(raw.len());
                for c in raw.chars() {
                    match byte_level_char_to_byte(c) {
                        Some(b) => bytes.push(b),
                        None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    }
                }
                Text {
                    lone_byte: bytes.len() == 1 && !bytes[0].is_ascii(),
                    ..plain(bytes)
                }
            }
            TokenStyle::Metaspace { replacement } => match byte_fallback(raw) {
                Some(b) => Text {
                    lone_byte: true,
                    ..plain(vec![b])
                },
                None => plain(
                    raw.chars()
                        .map(|c| if c == *replacement { ' ' } else { c })
                        .collect::<String>()
                        .into_bytes(),
                ),
            },
            TokenStyle::WordPiece { prefix } => match raw.strip_prefix(prefix.as_str()) {
                Some(rest) if !rest.is_empty() => Text {
                    continuation: true,
                    ..plain(rest.as_bytes().to_vec())
                },
                _ => plain(raw.as_bytes().to_vec()),
            },
            TokenStyle::Plain => plain(raw.as_bytes().to_vec()),
        })
    }

    /// The kind of `id`'s entry; `None` when the tokenizer has no entry.
    pub fn kind(&self, id: u32) -> Option<TokenKind> {
        let text = self.text(id)?;
        Some(
            if self.is_special(id) || is_placeholder(self.entry(id)?.token) {
                TokenKind::Special
            } else if text.lone_byte {
                TokenKind::Byte
            } else if std::str::from_utf8(&text.bytes).is_err() {
                TokenKind::PartialUtf8
            } else {
                TokenKind::Normal
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        for t in [
            "[unused0]",
            "[unused993]",
            "<unused5>",
            "<|reserved_special_token_250|>",
            "<SPECIAL_20>",
            "<｜place▁holder▁no▁773｜>",
            "<|placeholder6|>",
            "<|dummy_85|>",
        ] {
            assert!(is_placeholder(t), "{t}");
        }
        for t in [
            "<extra_id_0>",
            "unused",
            "[UNK]",
            "<|begin_of_text|>",
            "##unused",
            "<SPECIAL_>",
            "<SPECIAL_x1>",
            "[SPECIAL_3]",
            "<｜place▁holder▁no▁｜>",
            "<|place_holder_mm_span_0149|>",
            "<|dummy_x|>",
            "<｜begin▁of▁sentence｜>",
        ] {
            assert!(!is_placeholder(t), "{t}");
        }
    }
}
