//! embscope's own reading of a safetensors header's JSON, beside the
//! safetensors crate's: the tensor entries as written ([`RawTensor`]),
//! the names given twice (which the crate's map keeps once), and, for a
//! header the crate refused, the fault in the user's terms (which tensor,
//! which bytes, what was expected) where the crate's reason does not
//! give them (`invalid shape, data type, or offset for tensor`). A header
//! whose only fault is a name given twice is read, so that `check` can
//! report it and audit the rest.
//!
//! Nothing is allocated from a length before it is checked.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::dtype::Dtype;

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

/// The entries of a header as [`read`] reads them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Entries {
    /// Tensors by start offset; of a name given twice, the last entry.
    pub tensors: Vec<RawTensor>,
    /// The `__metadata__` map, if any.
    pub metadata: BTreeMap<String, String>,
    /// The names given more than once, each once.
    pub duplicates: Vec<String>,
}

/// Reads the header of `file` (its whole bytes) as the crate would, less
/// its refusal of a name given twice (the last entry is kept, as the
/// crate's map keeps it); `Err` says what is wrong, without the file name.
pub(super) fn read(file: &[u8]) -> Result<Entries, String> {
    let file_len = file.len() as u64;
    if file_len < 8 {
        return Err(format!(
            "file is {file_len} bytes, too short for a safetensors header (8-byte length prefix expected)"
        ));
    }
    let mut prefix = [0u8; 8];
    prefix.copy_from_slice(&file[..8]);
    let n = u64::from_le_bytes(prefix);
    if n > MAX_HEADER_LEN {
        return Err(format!(
            "header length {n} exceeds the {MAX_HEADER_LEN}-byte cap; not a safetensors file?"
        ));
    }
    if n > file_len - 8 {
        return Err(format!(
            "header length {n} runs past the end of the file ({file_len} bytes); truncated?"
        ));
    }
    let data_start = 8 + n as usize;
    let data_len = file.len() - data_start;
    let json = std::str::from_utf8(&file[8..data_start])
        .map_err(|e| format!("header is not UTF-8 ({e})"))?;
    let json = json.trim_end();
    let value: Value =
        serde_json::from_str(json).map_err(|e| format!("header is not valid JSON ({e})"))?;
    if !value.is_object() {
        return Err("header is not a JSON object".into());
    }
    // Read again, member by member: the map of `value` keeps one entry
    // of a name given twice.
    let Members(members) =
        serde_json::from_str(json).map_err(|e| format!("header is not valid JSON ({e})"))?;
    let duplicates = repeated(members.iter().map(|(name, _)| name.as_str()));

    let mut metadata = BTreeMap::new();
    let mut by_name: BTreeMap<&str, RawTensor> = BTreeMap::new();
    for (name, entry) in &members {
        if name == "__metadata__" {
            metadata = parse_metadata(entry)?;
            continue;
        }
        let t = parse_entry(name, entry, data_len)?;
        let t = RawTensor {
            start: t.start + data_start,
            end: t.end + data_start,
            ..t
        };
        by_name.insert(name, t);
    }
    let mut tensors: Vec<RawTensor> = by_name.into_values().collect();
    tensors.sort_by_key(|t| (t.start, t.end));
    let relative = |at: usize| at - data_start;
    for pair in tensors.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.start < a.end {
            return Err(format!(
                "tensors `{}` and `{}` overlap (bytes {}..{} and {}..{} of the data area)",
                a.name,
                b.name,
                relative(a.start),
                relative(a.end),
                relative(b.start),
                relative(b.end)
            ));
        }
    }
    // The bytes an entry given twice had are no tensor's: that is the
    // fault then, reported as such.
    if duplicates.is_empty() {
        let mut covered = data_start;
        let ends = tensors.iter().map(|t| (t.start, t.end));
        for (start, end) in ends.chain(std::iter::once((file.len(), file.len()))) {
            if start > covered {
                return Err(format!(
                    "bytes {}..{} of the data area ({data_len} bytes) belong to no tensor",
                    relative(covered),
                    relative(start)
                ));
            }
            covered = covered.max(end);
        }
    }
    Ok(Entries {
        tensors,
        metadata,
        duplicates,
    })
}

/// The names the JSON object `json` (a header the crate read) gives more
/// than once, each once.
pub(super) fn repeated_names(json: &[u8]) -> Vec<String> {
    // The crate parsed the same bytes, so this does not fail.
    let Names(names) = serde_json::from_slice(json).unwrap_or(Names(Vec::new()));
    repeated(names.iter().map(String::as_str))
}

/// The names `names` gives more than once, each once, in the order of
/// their second appearance.
fn repeated<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !seen.insert(name) && !out.iter().any(|d| d == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The members of a JSON object in file order, a name given twice kept
/// twice (serde_json's map keeps one).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Value>()? {
            members.push(member);
        }
        Ok(Members(members))
    }
}

fn parse_metadata(v: &Value) -> Result<BTreeMap<String, String>, String> {
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
fn parse_entry(name: &str, v: &Value, data_len: usize) -> Result<RawTensor, String> {
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

/// The member names of a JSON object in file order, values skipped: a
/// name given twice is there twice.
struct Names(Vec<String>);

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(NamesVisitor)
    }
}

struct NamesVisitor;

impl<'de> Visitor<'de> for NamesVisitor {
    type Value = Names;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Names, A::Error> {
        let mut names = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            names.push(name);
        }
        Ok(Names(names))
    }
}
