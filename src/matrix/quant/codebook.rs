//! The GGUF types whose values come from a codebook the format fixes
//! (`IQ1_S`, `IQ1_M`, `IQ2_XXS`, `IQ2_XS`, `IQ2_S`, `IQ3_XXS`: 256 to 2,048
//! grid points each) and the ternary `TQ1_0`, decoded by the `ferrox-quant`
//! crate, whose tables are llama.cpp's (`ggml-common.h`) and whose
//! decoders it checks against ggml's to the bit;
//! `benches/gguf_reference.py` checks them against the `gguf` Python
//! package on random blocks of every type. No llama.cpp mix gives these
//! types to a vocabulary matrix, so their speed (a few ns a value) is
//! left as it is; `IQ3_S`, the embedding of the `IQ2_S`, `IQ2_M` and `IQ3`
//! mixes, has a decoder of ours over the crate's codebook (see `blocks`).

use ferrox_quant::ternary;

use crate::dtype::Dtype;

/// Decodes whole blocks of `dtype` in `bytes` into `out` (which holds
/// exactly their values) when it is one of the types decoded here;
/// returns false, touching nothing, for the others.
///
/// Panics if the lengths disagree; [`super::super::Matrix::new`]
/// guarantees they do not.
pub(super) fn dequantize(dtype: Dtype, bytes: &[u8], out: &mut [f32]) -> bool {
    let decoded = match dtype {
        Dtype::IQ1_S => ferrox_quant::dequant_iq1_s(bytes),
        Dtype::IQ1_M => ferrox_quant::dequant_iq1_m(bytes),
        Dtype::IQ2_XXS => ferrox_quant::dequant_iq2_xxs(bytes),
        Dtype::IQ2_XS => ferrox_quant::dequant_iq2_xs(bytes),
        Dtype::IQ2_S => ferrox_quant::dequant_iq2_s(bytes),
        Dtype::IQ3_XXS => ferrox_quant::dequant_iq3_xxs(bytes),
        Dtype::TQ1_0 => ternary::dequant_trits(bytes, ternary::TQ1_0),
        _ => return false,
    };
    let values = decoded.unwrap_or_else(|e| panic!("{dtype}: {e}"));
    out.copy_from_slice(&values);
    true
}
