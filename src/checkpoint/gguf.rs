//! Reading one GGUF file (versions 2 and 3) from untrusted, mapped bytes.
//!
//! candle's `gguf_file::Content::read` parses the header, the metadata and
//! the tensor infos. Around it this module checks what candle does not:
//! before the call, a walk over the metadata section that allocates nothing
//! (`guard`) rejects what would make candle panic (an alignment of 0) or
//! allocate far beyond the file (millions of tiny values, each a 32-byte
//! `Value`); after it, every tensor must be non-empty, a whole number of
//! type blocks per row, at an offset aligned to `general.alignment`, with its
//! bytes inside the file and apart from the other tensors', and no name or
//! key may be repeated.

use std::collections::HashMap;
use std::io::Cursor;
use std::path::Path;

use candle_core::quantized::GgmlDType;
use candle_core::quantized::gguf_file::{Content, Value};

use super::header::RawTensor;
use crate::dtype::Dtype;
use crate::{Error, Result};

/// The GGUF magic, `GGUF` in file order.
const MAGIC: &[u8; 4] = b"GGUF";
/// Alignment of tensor data when `general.alignment` is absent.
const DEFAULT_ALIGNMENT: u64 = 32;
/// Largest `general.alignment` accepted (1 MiB).
const MAX_ALIGNMENT: u64 = 1 << 20;
/// Deepest nesting of arrays accepted (candle's own cap).
const MAX_DEPTH: usize = 64;
/// Most memory the parsed metadata may take (values at 32 bytes each plus
/// string bytes); real tokenizers need tens of MiB.
const MAX_METADATA_MEMORY: u64 = 1 << 30;
/// Bytes candle's `Value` takes in memory.
const VALUE_SIZE: u64 = 32;

/// A validated GGUF header.
#[derive(Debug)]
pub struct Gguf {
    /// Format version (2 or 3).
    pub version: u32,
    /// Every metadata key-value, as candle read it.
    pub metadata: HashMap<String, Value>,
    /// Alignment of tensor data.
    pub alignment: u64,
    /// Tensors by start offset, with absolute byte ranges and shapes in
    /// row-major order (`[vocab, hidden]` for a vocabulary matrix).
    pub tensors: Vec<RawTensor>,
}

/// Reads and validates the GGUF file `path`, whose bytes are `file`.
pub fn read(path: &Path, file: &[u8]) -> Result<Gguf> {
    let bad = |msg: String| Error::bad_file(path, msg);
    let pre = guard(file).map_err(bad)?;
    let patched = patch_types(file, &pre);
    let header = patched.as_ref().map_or(file, |(header, _)| header);
    let content = Content::read(&mut Cursor::new(header)).map_err(|e| {
        let msg = one_line(&e.to_string());
        match msg.strip_prefix("unknown dtype for tensor ") {
            Some(ty) => bad(format!(
                "a tensor has ggml type {ty}, which embscope does not know (it knows F32, F16, BF16, F64, the integer types, Q4_0 to Q8_1, the K-quants, the IQ types, TQ1_0, TQ2_0, MXFP4 and NVFP4)"
            )),
            None => bad(format!("not a readable GGUF file ({msg})")),
        }
    })?;
    let lacked = patched.map(|(_, types)| types).unwrap_or_default();
    if content.metadata.len() as u64 != pre.kv_count {
        return Err(bad(format!(
            "header declares {} metadata entries, {} distinct keys found; a key must appear once",
            pre.kv_count,
            content.metadata.len()
        )));
    }
    if content.tensor_infos.len() as u64 != pre.tensor_count {
        return Err(bad(format!(
            "header declares {} tensors, {} distinct names found; a tensor must be stored once",
            pre.tensor_count,
            content.tensor_infos.len()
        )));
    }
    let alignment = pre.alignment;
    let data_start = content.tensor_data_offset;
    let file_len = file.len() as u64;
    // A file of no tensors (llama.cpp's vocabulary-only `ggml-vocab-*.gguf`)
    // has no data section, and its writers end it with the metadata,
    // unpadded: only a file that claims tensors needs their data.
    if pre.tensor_count > 0 && data_start > file_len {
        return Err(bad(format!(
            "tensor data starts at byte {data_start}, beyond the end of the file ({file_len} bytes); truncated?"
        )));
    }
    // By name, so that the first problem reported does not depend on
    // hash order.
    let mut infos: Vec<_> = content.tensor_infos.iter().collect();
    infos.sort_by_key(|(name, _)| *name);
    let mut tensors = Vec::with_capacity(infos.len());
    for (name, info) in infos {
        let dtype = lacked
            .get(name)
            .copied()
            .unwrap_or_else(|| dtype_of(info.ggml_dtype));
        tensors.push(tensor(name, dtype, info, data_start, alignment, file_len).map_err(bad)?);
    }
    tensors.sort_by(|a, b| (a.start, a.end, &a.name).cmp(&(b.start, b.end, &b.name)));
    for pair in tensors.windows(2) {
        if pair[1].start < pair[0].end {
            return Err(bad(format!(
                "tensors `{}` and `{}` overlap (bytes {}..{} and {}..{})",
                pair[0].name, pair[1].name, pair[0].start, pair[0].end, pair[1].start, pair[1].end
            )));
        }
    }
    Ok(Gguf {
        version: pre.version,
        metadata: content.metadata,
        alignment,
        tensors,
    })
}

/// The embscope dtype of a ggml type.
fn dtype_of(g: GgmlDType) -> Dtype {
    match g {
        GgmlDType::F32 => Dtype::F32,
        GgmlDType::F16 => Dtype::F16,
        GgmlDType::BF16 => Dtype::BF16,
        GgmlDType::Q4_0 => Dtype::Q4_0,
        GgmlDType::Q4_1 => Dtype::Q4_1,
        GgmlDType::Q5_0 => Dtype::Q5_0,
        GgmlDType::Q5_1 => Dtype::Q5_1,
        GgmlDType::Q8_0 => Dtype::Q8_0,
        GgmlDType::Q8_1 => Dtype::Q8_1,
        GgmlDType::Q2K => Dtype::Q2_K,
        GgmlDType::Q3K => Dtype::Q3_K,
        GgmlDType::Q4K => Dtype::Q4_K,
        GgmlDType::Q5K => Dtype::Q5_K,
        GgmlDType::Q6K => Dtype::Q6_K,
        GgmlDType::Q8K => Dtype::Q8_K,
    }
}

/// Validates one tensor info, of type `dtype`, and makes its byte range
/// absolute.
fn tensor(
    name: &str,
    dtype: Dtype,
    info: &candle_core::quantized::gguf_file::TensorInfo,
    data_start: u64,
    alignment: u64,
    file_len: u64,
) -> std::result::Result<RawTensor, String> {
    let shape: Vec<usize> = info.shape.dims().to_vec();
    if shape.contains(&0) {
        return Err(format!(
            "tensor `{name}` has shape {shape:?}; every dimension must be at least 1"
        ));
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(|| format!("tensor `{name}`: shape {shape:?} overflows"))?;
    let (block, _) = dtype.block();
    let row = *shape.last().unwrap_or(&1) as u64;
    if !row.is_multiple_of(block) {
        return Err(format!(
            "tensor `{name}` of {dtype} has rows of {row} values, not a multiple of the {block}-value block"
        ));
    }
    let bytes = dtype
        .bytes_for(elements)
        .ok_or_else(|| format!("tensor `{name}`: shape {shape:?} of {dtype} overflows"))?;
    if !info.offset.is_multiple_of(alignment) {
        return Err(format!(
            "tensor `{name}` is at data offset {}, not a multiple of the alignment {alignment}",
            info.offset
        ));
    }
    let start = data_start.checked_add(info.offset);
    let end = start.and_then(|s| s.checked_add(bytes));
    match (start, end) {
        (Some(start), Some(end)) if end <= file_len => Ok(RawTensor {
            name: name.to_string(),
            dtype,
            shape,
            start: start as usize,
            end: end as usize,
        }),
        _ => Err(format!(
            "tensor `{name}` ({shape:?} {dtype}, {bytes} bytes at data offset {}) reaches beyond the end of the file ({file_len} bytes); truncated?",
            info.offset
        )),
    }
}

/// What the walk before candle learned.
struct Pre {
    version: u32,
    tensor_count: u64,
    kv_count: u64,
    alignment: u64,
    /// Where the tensor infos start.
    infos: usize,
}

/// Walks the fixed header and the metadata section without allocating:
/// magic, version 2 or 3, every length inside the file, nesting within
/// [`MAX_DEPTH`], the memory candle would take within
/// [`MAX_METADATA_MEMORY`], and a usable `general.alignment`.
fn guard(file: &[u8]) -> std::result::Result<Pre, String> {
    let mut r = Reader { file, pos: 0 };
    let magic = r.take(4).map_err(|_| too_short(file))?;
    if magic != MAGIC {
        return Err(format!(
            "not a GGUF file (starts with `{}`, expected the magic `GGUF`)",
            magic.escape_ascii()
        ));
    }
    let version = r.u32().map_err(|_| too_short(file))?;
    if !(2..=3).contains(&version) {
        return Err(format!(
            "GGUF version {version} is not supported (expected 2 or 3)"
        ));
    }
    let tensor_count = r.u64().map_err(|_| too_short(file))?;
    let kv_count = r.u64().map_err(|_| too_short(file))?;
    // A key takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 + 8.
    let least = kv_count
        .saturating_mul(13)
        .saturating_add(tensor_count.saturating_mul(24));
    if least > r.left() {
        return Err(format!(
            "header declares {tensor_count} tensors and {kv_count} metadata entries, which need at least {least} bytes; {} left in the file",
            r.left()
        ));
    }
    let mut walk = Walk {
        memory: 0,
        alignment: None,
    };
    for i in 0..kv_count {
        let key = r.string().map_err(|e| format!("metadata entry {i}: {e}"))?;
        let shown = String::from_utf8_lossy(key);
        let ty = r.u32().map_err(|e| format!("metadata `{shown}`: {e}"))?;
        walk.memory += VALUE_SIZE + key.len() as u64;
        if key == b"general.alignment" {
            walk.alignment = Some(
                r.clone()
                    .integer(ty)
                    .map_err(|e| format!("metadata `general.alignment`: {e}"))?,
            );
        }
        walk.value(&mut r, ty, 0)
            .map_err(|e| format!("metadata `{shown}`: {e}"))?;
        if walk.memory > MAX_METADATA_MEMORY {
            return Err(format!(
                "metadata would take more than {} MiB in memory; not a model file embscope can read",
                MAX_METADATA_MEMORY >> 20
            ));
        }
    }
    let alignment = match walk.alignment {
        None => DEFAULT_ALIGNMENT,
        Some(a) if a > 0 && a % 8 == 0 && a as u64 <= MAX_ALIGNMENT => a as u64,
        Some(a) => {
            return Err(format!(
                "`general.alignment` is {a}, expected a multiple of 8 from 8 to {MAX_ALIGNMENT} (32 by default)"
            ));
        }
    };
    Ok(Pre {
        version,
        tensor_count,
        kv_count,
        alignment,
        infos: r.pos,
    })
}

/// The ggml types candle's reader does not know, by ggml type id: the
/// `IQ` and ternary types, `MXFP4`, `NVFP4`, and the plain integers and F64.
fn candle_lacks(id: u32) -> Option<Dtype> {
    Some(match id {
        16 => Dtype::IQ2_XXS,
        17 => Dtype::IQ2_XS,
        18 => Dtype::IQ3_XXS,
        19 => Dtype::IQ1_S,
        20 => Dtype::IQ4_NL,
        21 => Dtype::IQ3_S,
        22 => Dtype::IQ2_S,
        23 => Dtype::IQ4_XS,
        24 => Dtype::I8,
        25 => Dtype::I16,
        26 => Dtype::I32,
        27 => Dtype::I64,
        28 => Dtype::F64,
        29 => Dtype::IQ1_M,
        34 => Dtype::TQ1_0,
        35 => Dtype::TQ2_0,
        39 => Dtype::MXFP4,
        40 => Dtype::NVFP4,
        _ => return None,
    })
}

/// The tensors whose ggml type candle's reader does not know (see
/// [`candle_lacks`]; an `IQ4_XS` download has hundreds), by name, and a
/// copy of the header up to the end of the tensor infos with their type
/// ids set to F32's, for candle to read everything else from; `None` when
/// there are none. A walk that runs past the end of the file, or meets a
/// type id nobody knows, stops here and leaves the error to candle.
fn patch_types(file: &[u8], pre: &Pre) -> Option<(Vec<u8>, HashMap<String, Dtype>)> {
    let mut r = Reader {
        file,
        pos: pre.infos,
    };
    let mut found = Vec::new();
    for _ in 0..pre.tensor_count {
        let name = r.string().ok()?;
        let dims = u64::from(r.u32().ok()?);
        r.take(dims.checked_mul(8)?).ok()?;
        let at = r.pos;
        if let Some(dtype) = candle_lacks(r.u32().ok()?) {
            found.push((at, String::from_utf8_lossy(name).into_owned(), dtype));
        }
        r.u64().ok()?;
    }
    if found.is_empty() {
        return None;
    }
    let mut header = file[..r.pos].to_vec();
    let mut types = HashMap::new();
    for (at, name, dtype) in found {
        header[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        types.insert(name, dtype);
    }
    Some((header, types))
}

fn too_short(file: &[u8]) -> String {
    format!(
        "file is {} bytes, too short for a GGUF header (24 bytes expected)",
        file.len()
    )
}

/// A cursor over the file that never reads past its end.
#[derive(Clone)]
struct Reader<'a> {
    file: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> u64 {
        (self.file.len() - self.pos) as u64
    }

    fn take(&mut self, n: u64) -> std::result::Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!(
                "{n} bytes needed at byte {}, only {} left in the file",
                self.pos,
                self.left()
            ));
        }
        let s = &self.file[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    /// The next `N` bytes, for `from_le_bytes`.
    fn le<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64)?);
        Ok(a)
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.le()?))
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.le()?))
    }

    fn string(&mut self) -> std::result::Result<&'a [u8], String> {
        let n = self.u64()?;
        self.take(n)
            .map_err(|e| format!("string of {n} bytes: {e}"))
    }

    /// An integer value of GGUF type `ty`, of the types candle reads
    /// `general.alignment` from (8 to 32 bits, signed or not; candle takes
    /// a negative one as absent, the caller rejects it).
    fn integer(&mut self, ty: u32) -> std::result::Result<i64, String> {
        Ok(match ty {
            0 => u8::from_le_bytes(self.le()?).into(),
            1 => i8::from_le_bytes(self.le()?).into(),
            2 => u16::from_le_bytes(self.le()?).into(),
            3 => i16::from_le_bytes(self.le()?).into(),
            4 => u32::from_le_bytes(self.le()?).into(),
            5 => i32::from_le_bytes(self.le()?).into(),
            _ => return Err("expected an integer of at most 32 bits".into()),
        })
    }
}

/// On-disk size of a scalar GGUF value type (none for string and array).
fn scalar_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// The state of the metadata walk.
struct Walk {
    memory: u64,
    alignment: Option<i64>,
}

impl Walk {
    /// Skips one value of type `ty`, counting the memory candle would take.
    fn value(&mut self, r: &mut Reader, ty: u32, depth: usize) -> std::result::Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("arrays nested deeper than {MAX_DEPTH}"));
        }
        match ty {
            8 => {
                self.memory += r.string()?.len() as u64;
            }
            9 => {
                let inner = r.u32()?;
                let n = r.u64()?;
                let least = match (scalar_size(inner), inner) {
                    (Some(s), _) => s,
                    (None, 8) => 8,
                    (None, 9) => 12,
                    _ => return Err(format!("unknown value type {inner} in an array")),
                };
                if n.saturating_mul(least) > r.left() {
                    return Err(format!(
                        "array of {n} values needs at least {} bytes, only {} left in the file",
                        n.saturating_mul(least),
                        r.left()
                    ));
                }
                self.memory = self.memory.saturating_add(n.saturating_mul(VALUE_SIZE));
                if self.memory > MAX_METADATA_MEMORY {
                    return Ok(());
                }
                match scalar_size(inner) {
                    Some(s) => {
                        r.take(n * s)?;
                    }
                    None => {
                        for _ in 0..n {
                            self.value(r, inner, depth + 1)?;
                            if self.memory > MAX_METADATA_MEMORY {
                                return Ok(());
                            }
                        }
                    }
                }
            }
            t => {
                let s = scalar_size(t).ok_or_else(|| format!("unknown value type {t}"))?;
                r.take(s)?;
            }
        }
        Ok(())
    }
}

/// The first line of a message, without a trailing period.
fn one_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    line.trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header with no tensors and `general.alignment` of GGUF type `ty`
    /// stored as `value`.
    fn with_alignment(ty: u32, value: &[u8]) -> Vec<u8> {
        let key = b"general.alignment";
        let mut f = b"GGUF".to_vec();
        f.extend(3u32.to_le_bytes());
        f.extend(0u64.to_le_bytes());
        f.extend(1u64.to_le_bytes());
        f.extend((key.len() as u64).to_le_bytes());
        f.extend(key);
        f.extend(ty.to_le_bytes());
        f.extend(value);
        f
    }

    #[test]
    fn alignment_is_checked_with_its_value_and_range() {
        let ok = guard(&with_alignment(2, &64u16.to_le_bytes())).unwrap();
        assert_eq!(ok.alignment, 64);
        for (ty, value, shown) in [
            (5, (-8i32).to_le_bytes().to_vec(), "-8"),
            (4, (1u32 << 21).to_le_bytes().to_vec(), "2097152"),
            (0, vec![12], "12"),
        ] {
            let err = guard(&with_alignment(ty, &value)).err().unwrap();
            assert_eq!(
                err,
                format!(
                    "`general.alignment` is {shown}, expected a multiple of 8 from 8 to 1048576 (32 by default)"
                )
            );
        }
        let err = guard(&with_alignment(6, &1f32.to_le_bytes()))
            .err()
            .unwrap();
        assert_eq!(
            err,
            "metadata `general.alignment`: expected an integer of at most 32 bits"
        );
    }
}
