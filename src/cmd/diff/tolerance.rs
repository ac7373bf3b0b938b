//! When a pair of rows counts as identical: values equal after conversion
//! to f32 when the fine-tune's dtype holds every value of the base's (a
//! BF16 row saved as F32 is identical); otherwise equal within what the
//! rounding explains. A block-quantized side may be off by one step of
//! its grid at the row's largest value; a float narrower than the base's,
//! by half a step of its own.

use serde::Serialize;

use crate::dtype::Dtype;
use crate::rows::pairs::PairSums;

/// How far apart the values of an unchanged pair of rows may be.
#[derive(Debug, Clone, Serialize)]
pub struct Tolerance {
    /// Allowed difference per unit of the base row's largest magnitude.
    pub base: f32,
    /// Allowed difference per unit of the tuned row's largest magnitude.
    pub tuned: f32,
    /// Allowed difference whatever the magnitudes (half the smallest
    /// step of a narrower float, for values near zero).
    pub floor: f32,
    /// Why, for the reader.
    pub why: String,
}

impl Tolerance {
    /// The tolerance of a base stored as `base` against a fine-tune stored
    /// as `tuned`; `None` when values must be equal.
    pub fn of(base: Dtype, tuned: Dtype) -> Option<Tolerance> {
        let mut t = Tolerance {
            base: 0.0,
            tuned: 0.0,
            floor: 0.0,
            why: String::new(),
        };
        let mut why = Vec::new();
        if let Some(step) = grid_step(base) {
            t.base = step;
            why.push(format!(
                "BASE is {base}: one step of its grid, {}",
                fraction(step)
            ));
        }
        if let Some(step) = grid_step(tuned) {
            t.tuned = step;
            why.push(format!(
                "TUNED is {tuned}: one step of its grid, {}",
                fraction(step)
            ));
        } else if !holds(tuned, base) {
            let (half, floor) = half_step(tuned);
            t.tuned = half;
            t.floor = floor;
            why.push(format!(
                "TUNED is {tuned}, which does not hold every {base} value: half a step of {tuned}, {}",
                fraction(half)
            ));
        }
        if why.is_empty() {
            return None;
        }
        t.why = format!("values within rounding count as equal ({})", why.join("; "));
        Some(t)
    }

    /// Whether the pair whose sums are `s` is within the tolerance.
    pub(crate) fn allows(&self, s: &PairSums) -> bool {
        s.max_diff <= self.base * s.max_a + self.tuned * s.max_b + self.floor
    }
}

/// `step` as a fraction of the row's largest magnitude, for the reader.
fn fraction(step: f32) -> String {
    format!("1/{:.0} of the row's largest magnitude", 1.0 / step)
}

/// One step of a block-quantized type's grid, per unit of the largest
/// magnitude it stores (the step of a block holding that value, so at
/// least the step of any block of the row). Grids that are not even take
/// their largest gap. `None` for float types.
fn grid_step(d: Dtype) -> Option<f32> {
    Some(match d {
        Dtype::Q8_0 | Dtype::Q8_1 | Dtype::Q8_K => 1.0 / 127.0,
        Dtype::Q6_K => 1.0 / 32.0,
        Dtype::Q5_0 => 1.0 / 16.0,
        Dtype::Q5_1 | Dtype::Q5_K => 2.0 / 31.0,
        Dtype::Q4_0 => 1.0 / 8.0,
        Dtype::Q4_1 | Dtype::Q4_K => 2.0 / 15.0,
        Dtype::Q3_K => 1.0 / 4.0,
        Dtype::Q2_K => 2.0 / 3.0,
        // The non-linear 4-bit grid of llama.cpp: its widest gap, 24 of 127.
        Dtype::IQ4_NL | Dtype::IQ4_XS => 24.0 / 127.0,
        // E2M1 values up to 6, 2 apart at the top.
        Dtype::MXFP4 | Dtype::NVFP4 => 1.0 / 3.0,
        Dtype::IQ3_S | Dtype::IQ3_XXS => 1.0 / 2.0,
        d if d.is_quantized() => 1.0,
        _ => return None,
    })
}

/// Half a step of a float type per unit of a value's magnitude, and half
/// its smallest step (its subnormals').
fn half_step(d: Dtype) -> (f32, f32) {
    let (mantissa, smallest) = match d {
        Dtype::F32 => (23, -149),
        Dtype::F16 => (10, -24),
        Dtype::BF16 => (7, -133),
        Dtype::F8_E4M3 => (3, -9),
        Dtype::F8_E5M2 => (2, -16),
        _ => (52, -1074),
    };
    (
        (-(mantissa + 1) as f32).exp2(),
        ((smallest - 1) as f32).exp2(),
    )
}

/// Whether the float type `wide` holds every value of `narrow` exactly.
fn holds(wide: Dtype, narrow: Dtype) -> bool {
    use Dtype::{BF16, F8_E4M3, F8_E5M2, F16, F32, F64};
    wide == narrow
        || match wide {
            F64 => true,
            F32 => narrow != F64,
            F16 | BF16 => matches!(narrow, F8_E4M3 | F8_E5M2),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(max_diff: f32, max_a: f32, max_b: f32) -> PairSums {
        PairSums {
            max_diff,
            max_a,
            max_b,
            ..PairSums::default()
        }
    }

    #[test]
    fn wider_floats_compare_exactly_others_within_rounding() {
        for (base, tuned) in [
            (Dtype::BF16, Dtype::F32),
            (Dtype::F16, Dtype::F32),
            (Dtype::BF16, Dtype::BF16),
            (Dtype::F8_E4M3, Dtype::BF16),
            (Dtype::F32, Dtype::F64),
        ] {
            assert!(Tolerance::of(base, tuned).is_none(), "{base} {tuned}");
        }
        let t = Tolerance::of(Dtype::F32, Dtype::BF16).unwrap();
        assert_eq!((t.base, t.tuned), (0.0, 1.0 / 256.0));
        assert!(t.allows(&sums(1.0 / 256.0, 9.0, 1.0)));
        assert!(!t.allows(&sums(0.005, 9.0, 1.0)));
        assert!(t.why.contains("half a step of BF16"), "{}", t.why);
        // F16 after BF16: narrower in range, with a floor for subnormals.
        let t = Tolerance::of(Dtype::BF16, Dtype::F16).unwrap();
        assert!(t.floor > 0.0 && t.floor < 1e-7);
    }

    #[test]
    fn a_quantized_side_allows_a_step_of_its_grid() {
        let t = Tolerance::of(Dtype::BF16, Dtype::Q8_0).unwrap();
        assert_eq!((t.base, t.tuned, t.floor), (0.0, 1.0 / 127.0, 0.0));
        assert!(t.allows(&sums(1.0, 0.0, 127.0)));
        assert!(!t.allows(&sums(1.01, 0.0, 127.0)));
        assert!(t.why.contains("TUNED is Q8_0"), "{}", t.why);
        assert!(t.why.contains("1/127"), "{}", t.why);
        // A quantized base and a BF16 fine-tune: both roundings.
        let t = Tolerance::of(Dtype::Q4_K, Dtype::BF16).unwrap();
        assert_eq!((t.base, t.tuned), (2.0 / 15.0, 1.0 / 256.0));
        assert!(Tolerance::of(Dtype::Q4_K, Dtype::F32).unwrap().tuned == 0.0);
        for d in Dtype::quantized() {
            assert!(grid_step(d).is_some_and(|s| s > 0.0 && s <= 1.0), "{d}");
        }
    }
}
