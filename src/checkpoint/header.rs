//! Parsing and validating one safetensors header, from untrusted bytes.
//!
//! Checks what the safetensors crate checks and more: the header length fits
//! the file and a cap, the header is a JSON object, every dtype is known,
//! `data_offsets` are ordered, inside the data area, match shape × dtype size
//! and do not overlap. Nothing is allocated from a length before it is checked.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::dtype::Dtype;
use crate::{Error, Result};

/// Largest header accepted, as in the safetensors crate (100 MB).
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// One tensor entry of a header, with offsets made absolute in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTensor {
    /// Tensor name as written.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape; empty for a scalar.
    pub shape: Vec<usize>,
    /// First byte of the data, from the start of the file.
    pub start: usize,
    /// One past the last byte of the data, from the start of the file.
    pub end: usize,
}

/// A validated header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Tensors in file order (by start offset).
    pub tensors: Vec<RawTensor>,
    /// The `__metadata__` map, if any.
    pub metadata: BTreeMap<String, String>,
}

/// Parses and validates the header of `file` (its whole mapped bytes).
pub fn parse(path: &Path, file: &[u8]) -> Result<Header> {
    let bad = |msg: String| Error::bad_file(path, msg);
    let file_len = file.len() as u64;
    if file_len < 8 {
        return Err(bad(format!(
            "file is {file_len} bytes, too short for a safetensors header (8-byte length prefix expected)"
        )));
    }
    let mut prefix = [0u8; 8];
    prefix.copy_from_slice(&file[..8]);
    let n = u64::from_le_bytes(prefix);
    if n > MAX_HEADER_LEN {
        return Err(bad(format!(
            "header length {n} exceeds the {MAX_HEADER_LEN}-byte cap; not a safetensors file?"
        )));
    }
    if n > file_len - 8 {
        return Err(bad(format!(
            "header length {n} runs past the end of the file ({file_len} bytes); truncated?"
        )));
    }
    let header_len = n as usize;
    let data_start = 8 + header_len;
    let data_len = file.len() - data_start;
    let json = std::str::from_utf8(&file[8..data_start])
        .map_err(|e| bad(format!("header is not UTF-8 ({e})")))?;
    let value: Value = serde_json::from_str(json.trim_end())
        .map_err(|e| bad(format!("header is not valid JSON ({e})")))?;
    let Value::Object(map) = value else {
        return Err(bad("header is not a JSON object".into()));
    };

    let mut metadata = BTreeMap::new();
    let mut tensors = Vec::with_capacity(map.len());
    for (name, entry) in map {
        if name == "__metadata__" {
            metadata = parse_metadata(&entry).map_err(bad)?;
            continue;
        }
        let t = parse_entry(&name, &entry, data_len).map_err(bad)?;
        tensors.push(RawTensor {
            start: t.start + data_start,
            end: t.end + data_start,
            ..t
        });
    }
    tensors.sort_by_key(|t| (t.start, t.end));
    for pair in tensors.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.start < a.end {
            return Err(bad(format!(
                "tensors `{}` and `{}` overlap (bytes {}..{} and {}..{} of the data area)",
                a.name,
                b.name,
                a.start - data_start,
                a.end - data_start,
                b.start - data_start,
                b.end - data_start
            )));
        }
    }
    Ok(Header { tensors, metadata })
}

fn parse_metadata(v: &Value) -> std::result::Result<BTreeMap<String, String>, String> {
    let Value::Object(map) = v else {
        return Err("`__metadata__` is not an object of strings".into());
    };
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(format!("`__metadata__.{k}` is not a string")),
        })
        .collect()
}

/// Validates one entry; offsets in the result are relative to the data area.
fn parse_entry(name: &str, v: &Value, data_len: usize) -> std::result::Result<RawTensor, String> {
    let Value::Object(obj) = v else {
        return Err(format!("tensor `{name}`: entry is not an object"));
    };
    let dtype_s = obj
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("tensor `{name}`: missing string `dtype`"))?;
    let dtype = Dtype::parse_header(dtype_s).ok_or_else(|| {
        format!(
            "tensor `{name}`: unknown dtype `{dtype_s}`, expected one of {}",
            Dtype::all_names()
        )
    })?;
    let shape = obj
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("tensor `{name}`: missing array `shape`"))?
        .iter()
        .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| format!("tensor `{name}`: shape must be non-negative integers"))?;
    let offsets = obj
        .get("data_offsets")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 2)
        .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)))
        .ok_or_else(|| {
            format!("tensor `{name}`: `data_offsets` must be two non-negative integers")
        })?;
    let (begin, end) = offsets;
    if begin > end {
        return Err(format!(
            "tensor `{name}`: data_offsets [{begin}, {end}] are out of order"
        ));
    }
    if end > data_len as u64 {
        return Err(format!(
            "tensor `{name}`: data_offsets end {end} is beyond the data area ({data_len} bytes); truncated?"
        ));
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(|| format!("tensor `{name}`: shape {shape:?} overflows"))?;
    let expected = dtype.bytes_for(elements).ok_or_else(|| {
        format!("tensor `{name}`: {elements} {dtype} values are not a whole number of bytes")
    })?;
    if end - begin != expected {
        return Err(format!(
            "tensor `{name}`: shape {shape:?} of {dtype} needs {expected} bytes, data_offsets give {}",
            end - begin
        ));
    }
    Ok(RawTensor {
        name: name.to_string(),
        dtype,
        shape,
        start: begin as usize,
        end: end as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: usize) -> Vec<u8> {
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.resize(v.len() + data, 0);
        v
    }

    fn err(bytes: &[u8]) -> String {
        parse(Path::new("m.safetensors"), bytes)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn valid_header_gives_absolute_offsets_and_metadata() {
        let h = r#"{"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let bytes = file(h, 12);
        let parsed = parse(Path::new("m.safetensors"), &bytes).unwrap();
        assert_eq!(parsed.metadata["format"], "pt");
        assert_eq!(parsed.tensors[0].name, "a");
        assert_eq!(parsed.tensors[0].start, 8 + h.len());
        assert_eq!(parsed.tensors[1].end, 8 + h.len() + 12);
    }

    #[test]
    fn hostile_headers_are_one_line_errors() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![1, 2, 3], "too short"),
            (u64::MAX.to_le_bytes().to_vec(), "exceeds"),
            (file("{}", 0)[..9].to_vec(), "runs past the end"),
            (file("not json", 0), "not valid JSON"),
            (file("[1,2]", 0), "not a JSON object"),
            (
                file(
                    r#"{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}}"#,
                    4,
                ),
                "unknown dtype `F12`",
            ),
            (
                file(
                    r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#,
                    8,
                ),
                "needs 8 bytes",
            ),
            (
                file(
                    r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}"#,
                    8,
                ),
                "out of order",
            ),
            (
                file(
                    r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
                    2,
                ),
                "beyond the data area",
            ),
            (
                file(
                    r#"{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#,
                    4,
                ),
                "non-negative",
            ),
            (
                file(
                    r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}}"#,
                    4,
                ),
                "overflows",
            ),
            (
                file(
                    r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
                    12,
                ),
                "overlap",
            ),
            (file(r#"{"__metadata__":{"x":1}}"#, 0), "not a string"),
        ];
        for (bytes, want) in cases {
            let msg = err(&bytes);
            assert!(msg.contains(want), "{msg:?} lacks {want:?}");
            assert!(msg.starts_with("`m.safetensors`"), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
        }
    }
}
