//! Human forms of raw vocabulary entries, and back.
//!
//! Owns the three storage conventions a tokenizer.json can use for its
//! entries — GPT-2 byte-level (`Ġ`, `Ċ`, …), SentencePiece (`▁`, `<0x0A>`)
//! and WordPiece (`##`) — and the escaping that keeps a token on one line.

/// How the raw strings of a vocabulary encode text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum TokenStyle {
    /// GPT-2 byte-level BPE: every byte is mapped to a printable char
    /// (`Ġ` is a space, `Ċ` a newline).
    ByteLevel,
    /// SentencePiece: `replacement` (usually `▁`) stands for a space and
    /// `<0xNN>` entries are single bytes (byte fallback).
    Metaspace {
        /// The char standing for a space.
        replacement: char,
    },
    /// WordPiece: entries continuing a word start with `prefix` (`##`),
    /// which is kept as is in the readable form.
    WordPiece {
        /// The continuation prefix.
        prefix: String,
    },
    /// No known convention: entries are shown as stored.
    Plain,
}

/// GPT-2's `bytes_to_unicode`: byte → the printable char standing for it.
const BYTE_TO_CHAR: [char; 256] = byte_to_char_table();

const fn is_printable_byte(b: u8) -> bool {
    matches!(b, 33..=126 | 161..=172 | 174..=255)
}

const fn byte_to_char_table() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    let mut b = 0usize;
    while b < 256 {
        if is_printable_byte(b as u8) {
            table[b] = b as u8 as char;
        } else {
            // 256 + 68 stays far below the surrogate range, so this never fails.
            table[b] = match char::from_u32(next) {
                Some(c) => c,
                None => '\0',
            };
            next += 1;
        }
        b += 1;
    }
    table
}

/// The byte-level char standing for byte `b` (GPT-2's `bytes_to_unicode`).
pub(crate) fn byte_to_char(b: u8) -> char {
    BYTE_TO_CHAR[usize::from(b)]
}

/// The byte a byte-level char stands for, if it is one of the 256.
pub(crate) fn byte_level_char_to_byte(c: char) -> Option<u8> {
    let code = c as u32;
    if code < 256 && is_printable_byte(code as u8) {
        return Some(code as u8);
    }
    let n = code.checked_sub(256)? as usize;
    NON_PRINTABLE.get(n).copied()
}

/// The 68 bytes without a printable char of their own, in order: byte-level
/// char `256 + n` stands for `NON_PRINTABLE[n]`.
const NON_PRINTABLE: [u8; 68] = non_printable_table();

const fn non_printable_table() -> [u8; 68] {
    let mut table = [0u8; 68];
    let mut n = 0;
    let mut b = 0usize;
    while b < 256 {
        if !is_printable_byte(b as u8) {
            table[n] = b as u8;
            n += 1;
        }
        b += 1;
    }
    table
}

/// The byte of a SentencePiece byte-fallback entry such as `<0x0A>`.
pub(crate) fn byte_fallback(raw: &str) -> Option<u8> {
    let hex = raw.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// Appends `s` to `out`, escaping what would break a one-line display or
/// make two entries look alike: control chars (`\n`, `\t`, `\u{7}`), the
/// Unicode line separators, and `\` and `"` themselves (`\\`, `\"`), so
/// that every form reads back with [`unescape`].
pub(crate) fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.extend(c.escape_debug());
            }
            c => out.push(c),
        }
    }
}

/// The text an escaped form stands for (the inverse of [`escape_into`]):
/// `\\`, `\"`, `\'`, `\n`, `\t`, `\r`, `\0` and `\u{…}`; `None` when a
/// backslash starts no such escape.
pub(crate) fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            '"' => '"',
            '\'' => '\'',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'u' => {
                if chars.next()? != '{' {
                    return None;
                }
                let mut code = 0u32;
                let mut digits = 0;
                loop {
                    let d = chars.next()?;
                    if d == '}' && digits > 0 {
                        break;
                    }
                    code = code * 16 + d.to_digit(16)?;
                    digits += 1;
                    if digits > 6 {
                        return None;
                    }
                }
                char::from_u32(code)?
            }
            _ => return None,
        });
    }
    Some(out)
}

/// The human form of a raw entry. `added` entries (from `added_tokens`) are
/// stored as plain text and are only escaped.
pub(crate) fn readable(raw: &str, style: &TokenStyle, added: bool) -> String {
    let mut out = String::with_capacity(raw.len() + 2);
    if added {
        escape_into(&mut out, raw);
        return out;
    }
    match style {
        TokenStyle::ByteLevel => {
            let mut bytes = Vec::with_capacity(raw.len());
            for c in raw.chars() {
                match byte_level_char_to_byte(c) {
                    Some(b) => bytes.push(b),
                    None => {
                        let mut buf = [0u8; 4];
                        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            // Bytes that are not (yet) UTF-8, such as the first byte of a
            // multi-byte char, read as `<0xE9>`, as SentencePiece stores them.
            for chunk in bytes.utf8_chunks() {
                escape_into(&mut out, chunk.valid());
                for b in chunk.invalid() {
                    out.push_str(&format!("<0x{b:02X}>"));
                }
            }
        }
        TokenStyle::Metaspace { replacement } => match byte_fallback(raw) {
            Some(b) if b.is_ascii() => escape_into(&mut out, &char::from(b).to_string()),
            // A lone byte of a multi-byte char is not text: keep `<0xE2>`.
            Some(_) => out.push_str(raw),
            None => {
                let text: String = raw
                    .chars()
                    .map(|c| if c == *replacement { ' ' } else { c })
                    .collect();
                escape_into(&mut out, &text);
            }
        },
        TokenStyle::WordPiece { .. } | TokenStyle::Plain => escape_into(&mut out, raw),
    }
    out
}

/// The raw form a piece of text would be stored under (the inverse of
/// [`readable`] for unescaped text): byte-level chars for byte-level BPE,
/// `▁` for spaces in SentencePiece, unchanged otherwise.
pub(crate) fn to_raw(text: &str, style: &TokenStyle) -> String {
    match style {
        TokenStyle::ByteLevel => {
            // `<0xE9>` stands for the byte itself (see [`readable`]).
            let mut raw = String::with_capacity(text.len());
            let mut rest = text;
            while let Some(c) = rest.chars().next() {
                if let Some(b) = rest.get(..6).and_then(byte_fallback) {
                    raw.push(BYTE_TO_CHAR[b as usize]);
                    rest = &rest[6..];
                } else {
                    let mut buf = [0u8; 4];
                    let bytes = c.encode_utf8(&mut buf).bytes();
                    raw.extend(bytes.map(|b| BYTE_TO_CHAR[b as usize]));
                    rest = &rest[c.len_utf8()..];
                }
            }
            raw
        }
        TokenStyle::Metaspace { replacement } => text
            .chars()
            .map(|c| if c == ' ' { *replacement } else { c })
            .collect(),
        TokenStyle::WordPiece { .. } | TokenStyle::Plain => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_table_is_a_bijection() {
        let mut seen = std::collections::HashSet::new();
        for b in 0u8..=255 {
            let c = BYTE_TO_CHAR[b as usize];
            assert!(seen.insert(c), "{c:?} twice");
            assert_eq!(byte_level_char_to_byte(c), Some(b));
        }
        assert_eq!(BYTE_TO_CHAR[b' ' as usize], 'Ġ');
        assert_eq!(BYTE_TO_CHAR[b'\n' as usize], 'Ċ');
        assert_eq!(byte_level_char_to_byte('é'), Some(0xE9));
        assert_eq!(byte_level_char_to_byte('\u{3b1}'), None);
    }

    #[test]
    fn readable_forms() {
        let bl = TokenStyle::ByteLevel;
        let sp = TokenStyle::Metaspace { replacement: '▁' };
        let wp = TokenStyle::WordPiece {
            prefix: "##".into(),
        };
        let cases: &[(&str, &TokenStyle, bool, &str)] = &[
            ("Ġking", &bl, false, " king"),
            ("Ċ", &bl, false, "\\n"),
            ("ĊĊ", &bl, false, "\\n\\n"),
            ("ĉ", &bl, false, "\\t"),
            ("ć", &bl, false, "\\u{7}"),
            ("hello", &bl, false, "hello"),
            // "é" is the two bytes C3 A9, stored as "Ã©".
            ("ĠcafÃ©", &bl, false, " café"),
            // A lone lead byte is not UTF-8: it reads as SentencePiece's
            // byte form.
            ("Ã", &bl, false, "<0xC3>"),
            ("ĠcafÃ", &bl, false, " caf<0xC3>"),
            ("ðŁĳ", &bl, false, "<0xF0><0x9F><0x91>"),
            ("<|begin_of_text|>", &bl, true, "<|begin_of_text|>"),
            ("▁Paris", &sp, false, " Paris"),
            ("<0x0A>", &sp, false, "\\n"),
            ("<0x41>", &sp, false, "A"),
            ("<0xE2>", &sp, false, "<0xE2>"),
            ("<s>", &sp, true, "<s>"),
            ("##ing", &wp, false, "##ing"),
            ("[CLS]", &wp, true, "[CLS]"),
            ("a\nb", &TokenStyle::Plain, false, "a\\nb"),
            // A literal backslash-n, a backslash and a quote stay apart
            // from a newline and from the quotes around a display.
            ("a\\nb", &TokenStyle::Plain, false, "a\\\\nb"),
            ("\\n", &bl, false, "\\\\n"),
            ("\"", &bl, false, "\\\""),
            ("\\", &bl, false, "\\\\"),
            ("\"", &bl, true, "\\\""),
        ];
        for (raw, style, added, want) in cases {
            assert_eq!(readable(raw, style, *added), *want, "{raw:?} as {style:?}");
        }
    }

    #[test]
    fn to_raw_inverts_readable() {
        let cases: &[(&str, TokenStyle, &str)] = &[
            (" king", TokenStyle::ByteLevel, "Ġking"),
            (" café", TokenStyle::ByteLevel, "ĠcafÃ©"),
            (" caf<0xC3>", TokenStyle::ByteLevel, "ĠcafÃ"),
            ("\n", TokenStyle::ByteLevel, "Ċ"),
            (
                " New York",
                TokenStyle::Metaspace { replacement: '▁' },
                "▁New▁York",
            ),
            ("ing", TokenStyle::Plain, "ing"),
        ];
        for (text, style, want) in cases {
            assert_eq!(to_raw(text, style), *want);
            assert_eq!(readable(want, style, false), text.replace('\n', "\\n"));
        }
    }

    #[test]
    fn unescape_inverts_escape() {
        for text in [
            "plain",
            "a\nb",
            "\\n",
            "\"",
            "\\",
            "\u{7}\t\r\0",
            "\u{2028}",
            "é ▁",
        ] {
            let mut escaped = String::new();
            escape_into(&mut escaped, text);
            assert_eq!(unescape(&escaped).as_deref(), Some(text), "{escaped:?}");
        }
        assert_eq!(unescape("\\'x").as_deref(), Some("'x"));
        for bad in [
            "\\",
            "a\\q",
            "\\u",
            "\\u{}",
            "\\u{110000}",
            "\\u{1234567}",
            "\\u{7",
        ] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn byte_fallback_parses_only_exact_form() {
        let cases = [
            ("<0x0A>", Some(10)),
            ("<0xff>", Some(255)),
            ("<0x0A", None),
            ("<0x0AB>", None),
            ("<0xZZ>", None),
            ("0x0A", None),
        ];
        for (raw, want) in cases {
            assert_eq!(byte_fallback(raw), want, "{raw}");
        }
    }
}
