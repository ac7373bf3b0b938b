//! The median of many `f64`s in [`f64::total_cmp`] order: the values are
//! copied as `u64` keys of the same order (see [`key`]), whose plain
//! comparisons make `select_nth_unstable` quicker than comparing floats.

/// The median of `values` (`None` without any): the middle value in
/// [`f64::total_cmp`] order, or the mean of the two middle values for an
/// even count.
pub(crate) fn median_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (lo, hi, even) = middle(values)?;
    Some(if even { (lo + hi) / 2.0 } else { hi })
}

/// The middle `values` (`None` without any) in [`f64::total_cmp`] order,
/// as [`median_of`] has them: those of ranks `n / 2 - 1` and `n / 2` for
/// an even count `n` (then `true`), the middle one twice for an odd count.
pub(crate) fn middle(values: impl Iterator<Item = f64>) -> Option<(f64, f64, bool)> {
    let mut keys: Vec<u64> = values.map(key).collect();
    let n = keys.len();
    if n == 0 {
        return None;
    }
    let (below, &mut hi, _) = keys.select_nth_unstable(n / 2);
    if n % 2 == 1 {
        return Some((value(hi), value(hi), false));
    }
    let lo = *below
        .iter()
        .max()
        .expect("an even count has a value below the middle");
    Some((value(lo), value(hi), true))
}

/// A key whose unsigned order is [`f64::total_cmp`]'s order of `x`.
pub(crate) fn key(x: f64) -> u64 {
    let bits = x.to_bits();
    // Negative values: every bit flipped (larger magnitudes come first);
    // others: the sign bit set (they come after every negative one).
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// The value of a [`key`].
fn value(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The median of `v` (non-empty), as [`median_of`] has it.
    fn median(v: &[f64]) -> f64 {
        median_of(v.iter().copied()).expect("the median of no values")
    }

    /// The median as a sort defines it.
    fn sorted_median(v: &[f64]) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let mid = s.len() / 2;
        if s.len().is_multiple_of(2) {
            (s[mid - 1] + s[mid]) / 2.0
        } else {
            s[mid]
        }
    }

    /// A small deterministic generator (xorshift).
    fn values(n: usize, seed: u64, spread: f64) -> Vec<f64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                1.0 + spread * ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
            })
            .collect()
    }

    #[test]
    fn keys_order_values_as_total_cmp_does() {
        let v = [
            f64::NEG_INFINITY,
            -3.5,
            -1e-300,
            -0.0,
            0.0,
            5e-324,
            1.0,
            1.0 + f64::EPSILON,
            f64::INFINITY,
        ];
        for w in v.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{} before {}", w[0], w[1]);
        }
        for x in v {
            assert_eq!(value(key(x)).to_bits(), x.to_bits());
        }
    }

    #[test]
    fn medians_are_the_sorted_middle_bit_for_bit() {
        // Wide and narrow spreads, odd and even lengths, small and large;
        // then sorted inputs, both ways.
        for (n, spread) in [
            (1, 1.0),
            (2, 1.0),
            (7, 1.0),
            (600, 1e-9),
            (4_095, 3.0),
            (100_001, 2.0),
        ] {
            for seed in 1..4 {
                let mut v = values(n, seed * 7919 + n as u64, spread);
                if n > 2 {
                    v[0] = -v[0];
                    v[1] = 0.0;
                }
                let got = median(&v);
                assert_eq!(
                    got.to_bits(),
                    sorted_median(&v).to_bits(),
                    "n {n} spread {spread}"
                );
            }
        }
        let mut v = values(10_001, 6, 1.0);
        v.sort_by(f64::total_cmp);
        assert_eq!(median(&v).to_bits(), sorted_median(&v).to_bits());
        v.reverse();
        assert_eq!(median(&v).to_bits(), sorted_median(&v).to_bits());
    }

    #[test]
    fn medians_of_filtered_values_skip_the_others() {
        let v = [f64::NAN, 3.0, 1.0, f64::NAN, 2.0, 10.0];
        let finite = || v.iter().copied().filter(|x| !x.is_nan());
        assert_eq!(median_of(finite()), Some(2.5));
        assert_eq!(
            middle(finite().filter(|&x| x < 5.0)),
            Some((2.0, 2.0, false))
        );
        assert_eq!(median_of(finite().filter(|&x| x > 50.0)), None);
    }

    #[test]
    fn repeated_values_give_their_value() {
        assert_eq!(median(&[2.5; 1000]), 2.5);
        // The two middle values are equal: the even case keeps it.
        let mut v = vec![1.0; 600];
        v.extend(vec![4.0; 599]);
        v.push(0.5);
        assert_eq!(median(&v), 1.0);
        let mut v = vec![1.0; 600];
        v.extend(vec![4.0; 600]);
        assert_eq!(median(&v), 2.5);
    }
}
