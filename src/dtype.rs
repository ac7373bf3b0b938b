//! The element types a safetensors header may name, with their sizes.
//!
//! Header-only commands work from this table rather than candle's `DType`,
//! which cannot represent every safetensors type (BOOL, U16, F8_E5M2 ...).

use serde::Serialize;

/// A safetensors element type, spelled as in the header (`"BF16"`, `"F8_E4M3"` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[allow(non_camel_case_types)]
pub enum Dtype {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

const ALL: [Dtype; 22] = [
    Dtype::BOOL,
    Dtype::F4,
    Dtype::F6_E2M3,
    Dtype::F6_E3M2,
    Dtype::U8,
    Dtype::I8,
    Dtype::F8_E5M2,
    Dtype::F8_E4M3,
    Dtype::F8_E8M0,
    Dtype::F8_E4M3FNUZ,
    Dtype::F8_E5M2FNUZ,
    Dtype::I16,
    Dtype::U16,
    Dtype::F16,
    Dtype::BF16,
    Dtype::I32,
    Dtype::U32,
    Dtype::F32,
    Dtype::C64,
    Dtype::F64,
    Dtype::I64,
    Dtype::U64,
];

impl Dtype {
    /// The header spelling, e.g. `"BF16"`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::BOOL => "BOOL",
            Dtype::F4 => "F4",
            Dtype::F6_E2M3 => "F6_E2M3",
            Dtype::F6_E3M2 => "F6_E3M2",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::F8_E5M2 => "F8_E5M2",
            Dtype::F8_E4M3 => "F8_E4M3",
            Dtype::F8_E8M0 => "F8_E8M0",
            Dtype::F8_E4M3FNUZ => "F8_E4M3FNUZ",
            Dtype::F8_E5M2FNUZ => "F8_E5M2FNUZ",
            Dtype::I16 => "I16",
            Dtype::U16 => "U16",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I32 => "I32",
            Dtype::U32 => "U32",
            Dtype::F32 => "F32",
            Dtype::C64 => "C64",
            Dtype::F64 => "F64",
            Dtype::I64 => "I64",
            Dtype::U64 => "U64",
        }
    }

    /// Parses a header spelling exactly as safetensors writes it (`"BF16"`).
    pub fn parse_header(s: &str) -> Option<Dtype> {
        ALL.iter().copied().find(|d| d.name() == s)
    }

    /// Parses a user's spelling: the header spelling in any case, or
    /// the torch spellings used by `--dtype` (`bfloat16`, `float16`, `fp8` ...).
    pub fn parse(s: &str) -> Option<Dtype> {
        let upper = s.to_ascii_uppercase();
        if let Some(d) = Self::parse_header(&upper) {
            return Some(d);
        }
        Some(match upper.trim_start_matches("TORCH.") {
            "BFLOAT16" => Dtype::BF16,
            "FLOAT16" | "HALF" | "FP16" => Dtype::F16,
            "FLOAT32" | "FLOAT" | "FP32" => Dtype::F32,
            "FLOAT64" | "DOUBLE" | "FP64" => Dtype::F64,
            "FLOAT8_E4M3FN" | "FP8" | "F8" | "FP8_E4M3" => Dtype::F8_E4M3,
            "FLOAT8_E5M2" | "FP8_E5M2" => Dtype::F8_E5M2,
            "INT8" => Dtype::I8,
            "UINT8" => Dtype::U8,
            _ => return None,
        })
    }

    /// Every header spelling, for error messages.
    pub fn all_names() -> String {
        ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
    }

    /// Size of one element in bits (4 for F4, 6 for the F6 types).
    pub fn bits(self) -> u64 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL | Dtype::U8 | Dtype::I8 => 8,
            Dtype::F8_E5M2 | Dtype::F8_E4M3 | Dtype::F8_E8M0 => 8,
            Dtype::F8_E4M3FNUZ | Dtype::F8_E5M2FNUZ => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }

    /// True for the real floating-point types (the ones a weight matrix is
    /// stored in and that `--dtype` what-ifs convert).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Dtype::F4
                | Dtype::F6_E2M3
                | Dtype::F6_E3M2
                | Dtype::F8_E5M2
                | Dtype::F8_E4M3
                | Dtype::F8_E8M0
                | Dtype::F8_E4M3FNUZ
                | Dtype::F8_E5M2FNUZ
                | Dtype::F16
                | Dtype::BF16
                | Dtype::F32
                | Dtype::F64
        )
    }

    /// Bytes taken by `elements` values, or `None` on overflow or when the
    /// bit count is not a whole number of bytes.
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        let bits = elements.checked_mul(self.bits())?;
        bits.is_multiple_of(8).then_some(bits / 8)
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_and_torch_spellings() {
        for (s, d) in [
            ("BF16", Dtype::BF16),
            ("bf16", Dtype::BF16),
            ("bfloat16", Dtype::BF16),
            ("torch.float16", Dtype::F16),
            ("F8_E5M2", Dtype::F8_E5M2),
            ("fp8", Dtype::F8_E4M3),
            ("U16", Dtype::U16),
        ] {
            assert_eq!(Dtype::parse(s), Some(d), "{s}");
        }
        assert_eq!(Dtype::parse("F12"), None);
    }

    #[test]
    fn sub_byte_sizes_need_whole_bytes() {
        assert_eq!(Dtype::F4.bytes_for(4), Some(2));
        assert_eq!(Dtype::F4.bytes_for(3), None);
        assert_eq!(Dtype::BF16.bytes_for(u64::MAX), None);
        assert_eq!(Dtype::F32.bytes_for(10), Some(40));
    }
}
