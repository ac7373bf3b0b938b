//! The element types a safetensors header may name, and the block-quantized
//! types of GGUF files (`Q8_0`, `Q4_K`, `IQ4_XS` ...), with their sizes.
//!
//! Header-only commands work from this table rather than candle's `DType`,
//! which cannot represent every safetensors type (BOOL, U16, F8_E5M2 ...).
//! A block-quantized type stores a fixed number of values in a block of
//! fixed size ([`Dtype::block`]); sizes go through [`Dtype::bytes_for`].

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
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ2_S,
    IQ3_XXS,
    IQ3_S,
    IQ1_S,
    IQ1_M,
    IQ4_NL,
    IQ4_XS,
    TQ1_0,
    TQ2_0,
    MXFP4,
    NVFP4,
}

/// The block-quantized GGUF types, with values per block and bytes per block
/// (ggml's `QK*` constants and block struct sizes).
const QUANTIZED: [(Dtype, u64, u64); 25] = [
    (Dtype::Q4_0, 32, 18),
    (Dtype::Q4_1, 32, 20),
    (Dtype::Q5_0, 32, 22),
    (Dtype::Q5_1, 32, 24),
    (Dtype::Q8_0, 32, 34),
    (Dtype::Q8_1, 32, 36),
    (Dtype::Q2_K, 256, 84),
    (Dtype::Q3_K, 256, 110),
    (Dtype::Q4_K, 256, 144),
    (Dtype::Q5_K, 256, 176),
    (Dtype::Q6_K, 256, 210),
    (Dtype::Q8_K, 256, 292),
    (Dtype::IQ2_XXS, 256, 66),
    (Dtype::IQ2_XS, 256, 74),
    (Dtype::IQ2_S, 256, 82),
    (Dtype::IQ3_XXS, 256, 98),
    (Dtype::IQ3_S, 256, 110),
    (Dtype::IQ1_S, 256, 50),
    (Dtype::IQ1_M, 256, 56),
    (Dtype::IQ4_NL, 32, 18),
    (Dtype::IQ4_XS, 256, 136),
    (Dtype::TQ1_0, 256, 54),
    (Dtype::TQ2_0, 256, 66),
    (Dtype::MXFP4, 32, 17),
    (Dtype::NVFP4, 64, 36),
];

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
            Dtype::Q4_0 => "Q4_0",
            Dtype::Q4_1 => "Q4_1",
            Dtype::Q5_0 => "Q5_0",
            Dtype::Q5_1 => "Q5_1",
            Dtype::Q8_0 => "Q8_0",
            Dtype::Q8_1 => "Q8_1",
            Dtype::Q2_K => "Q2_K",
            Dtype::Q3_K => "Q3_K",
            Dtype::Q4_K => "Q4_K",
            Dtype::Q5_K => "Q5_K",
            Dtype::Q6_K => "Q6_K",
            Dtype::Q8_K => "Q8_K",
            Dtype::IQ2_XXS => "IQ2_XXS",
            Dtype::IQ2_XS => "IQ2_XS",
            Dtype::IQ2_S => "IQ2_S",
            Dtype::IQ3_XXS => "IQ3_XXS",
            Dtype::IQ3_S => "IQ3_S",
            Dtype::IQ1_S => "IQ1_S",
            Dtype::IQ1_M => "IQ1_M",
            Dtype::IQ4_NL => "IQ4_NL",
            Dtype::IQ4_XS => "IQ4_XS",
            Dtype::TQ1_0 => "TQ1_0",
            Dtype::TQ2_0 => "TQ2_0",
            Dtype::MXFP4 => "MXFP4",
            Dtype::NVFP4 => "NVFP4",
        }
    }

    /// Parses a header spelling exactly as safetensors writes it (`"BF16"`).
    pub fn parse_header(s: &str) -> Option<Dtype> {
        ALL.iter().copied().find(|d| d.name() == s)
    }

    /// Parses a user's spelling: the header spelling in any case, a GGUF
    /// type (`q8_0`, `q4_k`, also `q4k`), or the torch spellings used by
    /// `--dtype` (`bfloat16`, `float16`, `fp8` ...).
    pub fn parse(s: &str) -> Option<Dtype> {
        let upper = s.to_ascii_uppercase();
        if let Some(d) = Self::parse_header(&upper) {
            return Some(d);
        }
        if let Some(&(d, _, _)) = QUANTIZED
            .iter()
            .find(|(d, _, _)| d.name() == upper || d.name().replace("_K", "K") == upper)
        {
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

    /// Size of one element in bits (4 for F4, 6 for the F6 types). For a
    /// block-quantized type, the bits per weight rounded up to a whole bit
    /// ([`Dtype::bits_per_weight`] is exact; sizes come from
    /// [`Dtype::bytes_for`]).
    pub fn bits(self) -> u64 {
        if let Some((n, bytes)) = self.quant_block() {
            return (bytes * 8).div_ceil(n);
        }
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL | Dtype::U8 | Dtype::I8 => 8,
            Dtype::F8_E5M2 | Dtype::F8_E4M3 | Dtype::F8_E8M0 => 8,
            Dtype::F8_E4M3FNUZ | Dtype::F8_E5M2FNUZ => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
            q => unreachable!("{q} is block-quantized"),
        }
    }

    /// Values per block and bytes per block of a block-quantized GGUF type.
    fn quant_block(self) -> Option<(u64, u64)> {
        QUANTIZED
            .iter()
            .find(|(d, _, _)| *d == self)
            .map(|&(_, n, b)| (n, b))
    }

    /// `values` stored as this dtype, little-endian, as a file holds
    /// them: the bytes tests build matrices from. F32, F64, BF16 and F16.
    #[cfg(test)]
    pub(crate) fn encode(self, values: &[f32]) -> Vec<u8> {
        match self {
            Dtype::F32 => values.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Dtype::F64 => (values.iter())
                .flat_map(|&x| f64::from(x).to_le_bytes())
                .collect(),
            Dtype::BF16 => (values.iter())
                .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
                .collect(),
            Dtype::F16 => (values.iter())
                .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
                .collect(),
            other => panic!("no test writer for {other}"),
        }
    }

    /// The block-quantized GGUF types, in ggml's order.
    #[cfg(test)]
    pub(crate) fn quantized() -> impl Iterator<Item = Dtype> {
        QUANTIZED.iter().map(|&(d, _, _)| d)
    }

    /// True for the block-quantized GGUF types (`Q8_0`, `Q4_K` ...).
    pub fn is_quantized(self) -> bool {
        self.quant_block().is_some()
    }

    /// The smallest storable unit: `(values, bytes)`. One value for most
    /// types; 2 values in a byte for F4, 4 in 3 bytes for the F6 types, a
    /// block (32 or 256 values) for the quantized ones.
    pub fn block(self) -> (u64, u64) {
        if let Some(b) = self.quant_block() {
            return b;
        }
        match self.bits() {
            4 => (2, 1),
            6 => (4, 3),
            bits => (1, bits / 8),
        }
    }

    /// Average storage bits per value (8.5 for Q8_0, 4.5 for Q4_K).
    pub fn bits_per_weight(self) -> f64 {
        let (n, bytes) = self.block();
        (bytes * 8) as f64 / n as f64
    }

    /// True for the real floating-point types and the block-quantized ones
    /// (the ones a weight matrix is stored in and that `--dtype` what-ifs
    /// convert).
    pub fn is_float(self) -> bool {
        self.is_quantized()
            || matches!(
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
    /// values are not a whole number of blocks (bytes for F4, F6).
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        let (n, bytes) = self.block();
        if !elements.is_multiple_of(n) {
            return None;
        }
        (elements / n).checked_mul(bytes)
    }

    /// Bytes taken by `elements` values with the last block padded (what a
    /// what-if conversion would store), or `None` on overflow.
    pub fn bytes_padded(self, elements: u64) -> Option<u64> {
        let (n, bytes) = self.block();
        elements.div_ceil(n).checked_mul(bytes)
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
        assert_eq!(Dtype::F6_E2M3.bytes_for(8), Some(6));
        assert_eq!(Dtype::F6_E2M3.bytes_for(6), None);
    }

    #[test]
    fn quantized_blocks_match_candle() {
        use candle_core::quantized::GgmlDType as G;
        for (d, g) in [
            (Dtype::Q4_0, G::Q4_0),
            (Dtype::Q4_1, G::Q4_1),
            (Dtype::Q5_0, G::Q5_0),
            (Dtype::Q5_1, G::Q5_1),
            (Dtype::Q8_0, G::Q8_0),
            (Dtype::Q8_1, G::Q8_1),
            (Dtype::Q2_K, G::Q2K),
            (Dtype::Q3_K, G::Q3K),
            (Dtype::Q4_K, G::Q4K),
            (Dtype::Q5_K, G::Q5K),
            (Dtype::Q6_K, G::Q6K),
            (Dtype::Q8_K, G::Q8K),
        ] {
            assert_eq!(
                d.block(),
                (g.block_size() as u64, g.type_size() as u64),
                "{d}"
            );
        }
        assert_eq!(Dtype::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(Dtype::Q4_K.bits_per_weight(), 4.5);
        assert_eq!(Dtype::Q6_K.bytes_for(512), Some(420));
        assert_eq!(Dtype::Q6_K.bytes_for(100), None);
        assert_eq!(Dtype::Q6_K.bytes_padded(100), Some(210));
        for (s, d) in [
            ("q8_0", Dtype::Q8_0),
            ("Q4_K", Dtype::Q4_K),
            ("q6k", Dtype::Q6_K),
        ] {
            assert_eq!(Dtype::parse(s), Some(d), "{s}");
        }
        assert_eq!(Dtype::parse_header("Q8_0"), None, "not a safetensors dtype");
    }

    #[test]
    fn types_candle_lacks_have_llamas_bits_per_weight() {
        // As ggml-common.h's comments give them.
        for (d, bpw) in [
            (Dtype::IQ2_XXS, 2.0625),
            (Dtype::IQ2_XS, 2.3125),
            (Dtype::IQ2_S, 2.5625),
            (Dtype::IQ3_XXS, 3.0625),
            (Dtype::IQ3_S, 3.4375),
            (Dtype::IQ1_S, 1.5625),
            (Dtype::IQ1_M, 1.75),
            (Dtype::IQ4_NL, 4.5),
            (Dtype::IQ4_XS, 4.25),
            (Dtype::TQ1_0, 1.6875),
            (Dtype::TQ2_0, 2.0625),
            (Dtype::MXFP4, 4.25),
            (Dtype::NVFP4, 4.5),
        ] {
            assert_eq!(d.bits_per_weight(), bpw, "{d}");
            assert!(d.is_quantized(), "{d}");
        }
        assert_eq!(Dtype::parse("iq4_xs"), Some(Dtype::IQ4_XS));
    }
}
