//! Parsing and validating one safetensors header, from untrusted bytes.
//!
//! The safetensors crate reads it, as it does for the loaders built on it
//! (transformers, candle): the length prefix under a 100 MB cap, a UTF-8
//! JSON object of known dtypes, `data_offsets` in order and back to back
//! from the start of the data area to the end of the file, each matching
//! shape × dtype size. embscope adds what the crate cannot see: a tensor
//! name given twice, which its map silently keeps once
//! ([`Header::duplicates`]). When the crate refuses a file, the message
//! names the fault in embscope's words (`header_json`: which tensor,
//! which bytes, what was expected) and says that loaders refuse it too,
//! with the crate's reason.

use std::collections::BTreeMap;
use std::path::Path;

use safetensors::tensor::Metadata;
use safetensors::{SafeTensorError, SafeTensors};

use super::header_json::{self, Entries};
pub use super::header_json::{MAX_HEADER_LEN, RawTensor};
use crate::dtype::Dtype;
use crate::{Error, Result};

/// Who else refuses a file the safetensors crate refuses.
const LOADERS: &str = "transformers and candle";

/// A validated header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Tensors in file order (by start offset); of a name given twice, the
    /// last entry.
    pub tensors: Vec<RawTensor>,
    /// The `__metadata__` map, if any.
    pub metadata: BTreeMap<String, String>,
    /// The names the header gives more than once, each once. Loaders
    /// refuse such a file (see `refusal`), or read one of the entries: it
    /// is read only by `check`, which reports it.
    pub duplicates: Vec<String>,
    /// Why the safetensors crate refuses the file, when it does (then
    /// `duplicates` is why).
    pub refusal: Option<String>,
}

impl Header {
    /// What is wrong with a header that gives names twice, for a message
    /// about its file: the first such name, how many more, and what
    /// loaders make of it. `None` when every name is given once.
    pub fn duplicate_fault(&self) -> Option<String> {
        let first = self.duplicates.first()?;
        let more = match self.duplicates.len() - 1 {
            0 => String::new(),
            1 => " (and 1 other name)".to_string(),
            n => format!(" (and {n} other names)"),
        };
        let loaders = match &self.refusal {
            Some(why) => format!("{LOADERS} refuse it (safetensors: {why})"),
            None => "loaders keep one of its entries".to_string(),
        };
        Some(format!(
            "the header gives tensor `{first}` twice{more}; {loaders}"
        ))
    }
}

/// Parses and validates the header of `file` (its whole mapped bytes). A
/// header whose only fault is a name given twice is read (see
/// [`Header::duplicates`]); the caller decides.
pub fn parse(path: &Path, file: &[u8]) -> Result<Header> {
    let (refusal, category) = match SafeTensors::read_metadata(file) {
        Ok((n, metadata)) => return from_crate(path, file, n, &metadata),
        Err(refusal) => (refusal.to_string(), category(&refusal)),
    };
    match header_json::read(file) {
        Err(fault) => Err(Error::bad_file(
            path,
            format!("{fault} ({LOADERS} refuse it too; safetensors: {category})"),
        )),
        Ok(Entries {
            tensors,
            metadata,
            duplicates,
        }) if !duplicates.is_empty() => Ok(Header {
            tensors,
            metadata,
            duplicates,
            refusal: Some(refusal),
        }),
        Ok(_) => Err(Error::bad_file(
            path,
            format!("{LOADERS} refuse it (safetensors: {refusal})"),
        )),
    }
}

/// The crate's reason for refusing a header, as a message that already
/// names the fault in embscope's words gives it: for a header that is
/// not UTF-8 or not JSON of the expected shape, without the decoder's
/// words, which the message has.
fn category(refusal: &SafeTensorError) -> String {
    match refusal {
        SafeTensorError::InvalidHeader(_) => "invalid UTF-8 in header".to_string(),
        SafeTensorError::InvalidHeaderDeserialization(_) => "invalid JSON in header".to_string(),
        other => other.to_string(),
    }
}

/// The header as the crate read it (`n` bytes of JSON after the length
/// prefix), with the names given twice found in the JSON.
fn from_crate(path: &Path, file: &[u8], n: usize, metadata: &Metadata) -> Result<Header> {
    let data_start = 8 + n;
    let json = &file[8..data_start];
    let duplicates = header_json::repeated_names(json);
    let mut tensors = Vec::new();
    for name in metadata.offset_keys() {
        let Some(info) = metadata.info(&name) else {
            continue;
        };
        let dtype = dtype_of(info.dtype).ok_or_else(|| {
            Error::bad_file(
                path,
                format!(
                    "tensor `{name}`: dtype {:?} is not one embscope reads",
                    info.dtype
                ),
            )
        })?;
        let (start, end) = info.data_offsets;
        tensors.push(RawTensor {
            name,
            dtype,
            shape: info.shape.clone(),
            start: data_start + start,
            end: data_start + end,
        });
    }
    let metadata = (metadata.metadata().iter().flatten())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Header {
        tensors,
        metadata,
        duplicates,
        refusal: None,
    })
}

/// embscope's dtype for the crate's; `None` for one added to the crate
/// after this list was written.
fn dtype_of(d: safetensors::Dtype) -> Option<Dtype> {
    use safetensors::Dtype as S;
    Some(match d {
        S::BOOL => Dtype::BOOL,
        S::F4 => Dtype::F4,
        S::F6_E2M3 => Dtype::F6_E2M3,
        S::F6_E3M2 => Dtype::F6_E3M2,
        S::U8 => Dtype::U8,
        S::I8 => Dtype::I8,
        S::F8_E5M2 => Dtype::F8_E5M2,
        S::F8_E4M3 => Dtype::F8_E4M3,
        S::F8_E8M0 => Dtype::F8_E8M0,
        S::F8_E4M3FNUZ => Dtype::F8_E4M3FNUZ,
        S::F8_E5M2FNUZ => Dtype::F8_E5M2FNUZ,
        S::I16 => Dtype::I16,
        S::U16 => Dtype::U16,
        S::F16 => Dtype::F16,
        S::BF16 => Dtype::BF16,
        S::I32 => Dtype::I32,
        S::U32 => Dtype::U32,
        S::F32 => Dtype::F32,
        S::C64 => Dtype::C64,
        S::F64 => Dtype::F64,
        S::I64 => Dtype::I64,
        S::U64 => Dtype::U64,
        _ => return None,
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
            assert!(
                msg.contains("transformers and candle refuse it too; safetensors: "),
                "{msg}"
            );
        }
    }

    #[test]
    fn every_dtype_the_crate_reads_is_embscopes_of_the_same_name() {
        for name in Dtype::all_names().split(", ") {
            let theirs: safetensors::Dtype = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(dtype_of(theirs), Dtype::parse_header(name), "{name}");
        }
    }

    #[test]
    fn bytes_no_tensor_owns_are_refused_as_loaders_refuse_them() {
        let one = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
        let two = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#;
        let three = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
        for (bytes, want) in [
            (
                file(one, 8),
                "bytes 0..4 of the data area (8 bytes) belong to no tensor",
            ),
            (
                file(two, 12),
                "bytes 4..8 of the data area (12 bytes) belong to no tensor",
            ),
            (
                file(three, 6),
                "bytes 4..6 of the data area (6 bytes) belong to no tensor",
            ),
        ] {
            let msg = err(&bytes);
            assert!(msg.contains(want), "{msg:?} lacks {want:?}");
            assert!(msg.contains("safetensors: "), "{msg}");
        }
    }

    #[test]
    fn a_name_given_twice_is_read_with_the_fault_kept() {
        // Two entries for `a`: the second is read, the crate refuses the
        // bytes the first one had.
        let twice = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#;
        let bytes = file(twice, 12);
        let h = parse(Path::new("m.safetensors"), &bytes).unwrap();
        assert_eq!(h.duplicates, ["a"]);
        let names: Vec<(&str, usize)> = h
            .tensors
            .iter()
            .map(|t| (t.name.as_str(), t.start - 8 - twice.len()))
            .collect();
        assert_eq!(names, [("b", 4), ("a", 8)]);
        let fault = h.duplicate_fault().unwrap();
        assert!(fault.starts_with("the header gives tensor `a` twice; transformers and candle refuse it (safetensors: "), "{fault}");
        // The same entry twice: the crate reads the file, the name is
        // still given twice.
        let same = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
        let bytes = file(same, 4);
        let h = parse(Path::new("m.safetensors"), &bytes).unwrap();
        assert_eq!((h.duplicates.len(), h.refusal.is_none()), (1, true));
        assert_eq!(
            h.duplicate_fault().unwrap(),
            "the header gives tensor `a` twice; loaders keep one of its entries"
        );
        // A name given twice beside another fault: the other fault.
        let overlap = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}"#;
        assert!(err(&file(overlap, 8)).contains("overlap"));
    }
}
