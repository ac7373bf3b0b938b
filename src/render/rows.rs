//! Output of `rows`: every row as CSV, JSON or a numpy `.npy` file.
//!
//! The `.npy` file holds one structured array, a record per row with
//! named fields, because that is what numpy and pandas load with no
//! arguments: `a = np.load(f)` gives `a["score"]`, `a["token"]` …, and
//! `pd.DataFrame(np.load(f))` a frame with one column per field. (A plain
//! float array would need its column names from a file beside it, and
//! tokens could not be in it.) Tokens are fixed-width unicode (`<U`) as
//! wide as the longest, up to [`TOKEN_CHARS`] chars (longer ones cut,
//! ending in `…`; the CSV and JSON keep them whole). Missing figures are
//! NaN in `.npy`, empty in CSV and null in JSON.

use std::io::{self, Write};

use crate::cmd::rows::{Row, RowsReport};
use crate::render::output::Format;

/// Widest token in a `.npy` file, in chars: a cap on the file's size
/// (every record holds this many 4-byte chars), far above ordinary tokens.
pub const TOKEN_CHARS: usize = 64;
/// Width of the `kind` field in a `.npy` file: `partial-utf8`.
const KIND_CHARS: usize = 12;

/// The columns, in the order of every format.
const COLUMNS: [&str; 10] = [
    "id",
    "token",
    "kind",
    "embed_norm",
    "head_norm",
    "head_cosine",
    "embed_distance",
    "score",
    "strong",
    "reference",
];

/// Writes `r` to `out` as `format` asks (a table is CSV).
pub fn write(r: &RowsReport, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Json => {
            serde_json::to_writer(&mut *out, r).map_err(io::Error::other)?;
            out.write_all(b"\n")?;
            out.flush()
        }
        Format::Npy => npy(r, out),
        Format::Csv | Format::Table => csv(r, out),
    }
}

/// CSV: one line per row under a header naming [`COLUMNS`].
fn csv(r: &RowsReport, out: &mut impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(COLUMNS)?;
    let f32s = |v: Option<f32>| v.map(|x| x.to_string()).unwrap_or_default();
    for row in &r.rows {
        w.write_record([
            row.id.to_string(),
            row.token.clone().unwrap_or_default(),
            row.kind.map(|k| k.name()).unwrap_or_default().to_string(),
            f32s(row.embed_norm),
            f32s(row.head_norm),
            f32s(row.head_cosine),
            f32s(row.embed_distance),
            row.score.map(|s| s.to_string()).unwrap_or_default(),
            row.strong.to_string(),
            row.reference.to_string(),
        ])?;
    }
    w.flush()
}

/// The `.npy` header: the structured dtype, a token field `width` chars
/// wide, and the number of records.
fn npy_header(width: usize, rows: usize) -> Vec<u8> {
    let types = [
        "<u4".to_string(),
        format!("<U{width}"),
        format!("<U{KIND_CHARS}"),
        "<f4".into(),
        "<f4".into(),
        "<f4".into(),
        "<f4".into(),
        "<f8".into(),
        "|b1".into(),
        "|b1".into(),
    ];
    let descr: Vec<String> = COLUMNS
        .iter()
        .zip(&types)
        .map(|(name, t)| format!("('{name}', '{t}')"))
        .collect();
    let dict = format!(
        "{{'descr': [{}], 'fortran_order': False, 'shape': ({rows},), }}",
        descr.join(", ")
    );
    // Magic, version 1.0, the length, then the dict padded with spaces and
    // ended by a newline to a multiple of 64 bytes, as numpy writes it.
    let unpadded = 10 + dict.len() + 1;
    let len = dict.len() + 1 + unpadded.next_multiple_of(64) - unpadded;
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&(len as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(10 + len - 1, b' ');
    h.push(b'\n');
    h
}

/// `s` as `width` little-endian UCS-4 chars, cut with `…` when longer,
/// padded with zeros (which numpy strips).
fn ucs4(s: &str, width: usize, out: &mut Vec<u8>) {
    let n = s.chars().count();
    let chars: Box<dyn Iterator<Item = char>> = if n > width {
        Box::new(s.chars().take(width - 1).chain(['…']))
    } else {
        Box::new(s.chars())
    };
    let mut written = 0;
    for c in chars {
        out.extend_from_slice(&u32::from(c).to_le_bytes());
        written += 1;
    }
    out.resize(out.len() + 4 * (width - written), 0);
}

/// A numpy `.npy` file of one structured array, a record per row.
fn npy(r: &RowsReport, out: &mut impl Write) -> io::Result<()> {
    let width = r
        .rows
        .iter()
        .filter_map(|row| row.token.as_deref())
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(1, TOKEN_CHARS);
    out.write_all(&npy_header(width, r.rows.len()))?;
    let mut rec = Vec::new();
    for row in &r.rows {
        rec.clear();
        record(row, width, &mut rec);
        out.write_all(&rec)?;
    }
    out.flush()
}

/// One row's record.
fn record(row: &Row, width: usize, rec: &mut Vec<u8>) {
    rec.extend_from_slice(&row.id.to_le_bytes());
    ucs4(row.token.as_deref().unwrap_or(""), width, rec);
    ucs4(row.kind.map_or("", |k| k.name()), KIND_CHARS, rec);
    for v in [
        row.embed_norm,
        row.head_norm,
        row.head_cosine,
        row.embed_distance,
    ] {
        rec.extend_from_slice(&v.unwrap_or(f32::NAN).to_le_bytes());
    }
    rec.extend_from_slice(&row.score.unwrap_or(f64::NAN).to_le_bytes());
    rec.extend_from_slice(&[u8::from(row.strong), u8::from(row.reference)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_names_every_field() {
        let h = npy_header(7, 3);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(usize::from(u16::from_le_bytes([h[8], h[9]])), h.len() - 10);
        let dict = std::str::from_utf8(&h[10..]).unwrap();
        assert!(dict.ends_with(" \n"));
        assert!(
            dict.contains("('token', '<U7'), ('kind', '<U12')"),
            "{dict}"
        );
        assert!(dict.contains("'shape': (3,)"), "{dict}");
    }

    #[test]
    fn tokens_are_cut_to_the_width() {
        let mut out = Vec::new();
        ucs4("añ", 3, &mut out);
        assert_eq!(out, [97, 0, 0, 0, 0xf1, 0, 0, 0, 0, 0, 0, 0]);
        out.clear();
        ucs4("abcd", 3, &mut out);
        let chars: Vec<u32> = out
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(chars, [97, 98, 0x2026]);
    }
}
