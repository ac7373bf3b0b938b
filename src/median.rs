//! The median of many `f64`s without copying them: `check` and
//! `undertrained` take a dozen medians of one value per row (norms, their
//! logarithms, deviations from those) right after the streaming pass,
//! and a copy of 128k values for `select_nth_unstable` costs more in
//! page faults of fresh memory than the selection itself.
//!
//! Values are ordered as [`f64::total_cmp`] orders them, through a `u64`
//! key with the same order. One pass samples every 64th value; the sorted
//! sample bounds a narrow window around the middle rank, and a second pass
//! counts the values below it and keeps the few in it (about a tenth),
//! among which the middle is selected. The answer is the element a sort
//! would put there; a window that misses (a crafted order) falls back to
//! selecting among all the values.

/// One value in this many is sampled to place the window.
const SAMPLE_EVERY: usize = 64;

/// Keys per branch-free step of the window pass.
const CHUNK: usize = 256;

/// The median of `values` (`None` without any): the middle value in
/// [`f64::total_cmp`] order, or the mean of the two middle values for an
/// even count; without a copy of them: `values` is gone through a few
/// times, so it should be cheap to make again (a filter or a map of a
/// slice).
pub(crate) fn median_of(values: impl Iterator<Item = f64> + Clone) -> Option<f64> {
    let (lo, hi, even) = middle(values)?;
    Some(if even { (lo + hi) / 2.0 } else { hi })
}

/// The middle `values` (`None` without any) in [`f64::total_cmp`] order,
/// as [`median_of`] has them: those of ranks `n / 2 - 1` and `n / 2` for
/// an even count `n` (then `true`), the middle one twice for an odd count.
pub(crate) fn middle(values: impl Iterator<Item = f64> + Clone) -> Option<(f64, f64, bool)> {
    let keys = values.map(key);
    let mut sample = Vec::new();
    let mut n = 0;
    for x in keys.clone() {
        if n % SAMPLE_EVERY == 0 {
            sample.push(x);
        }
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let (even, hi) = (n.is_multiple_of(2), n / 2);
    let (a, b) = ranks(keys, n, sample, if even { hi - 1 } else { hi }, hi);
    Some((value(a), value(b), even))
}

/// The keys of ranks `a` and `b` (`a <= b <= a + 1`) among the `n`
/// `keys`, of which `sample` holds every [`SAMPLE_EVERY`]th: the sample,
/// sorted, bounds a window of keys around those ranks (a few standard
/// deviations of a sample's rank wide); one pass counts the keys below
/// it and keeps those in it, and the ranks are picked among those. When
/// the window misses (unlikely, or crafted), among all the keys.
fn ranks(
    keys: impl Iterator<Item = u64> + Clone,
    n: usize,
    mut sample: Vec<u64>,
    a: usize,
    b: usize,
) -> (u64, u64) {
    sample.sort_unstable();
    let s = sample.len();
    let margin = 2 * s.isqrt() + 8;
    let lo = (a * s / n).checked_sub(margin).map_or(0, |i| sample[i]);
    let hi = sample.get(b * s / n + margin).copied().unwrap_or(u64::MAX);
    let mut below = 0;
    let mut window = Vec::new();
    let (mut rest, mut chunk) = (keys.clone(), [0; CHUNK]);
    loop {
        // Without a branch per key: each is written at the end of the
        // chunk's window keys, and the end moves on when it is one.
        let (mut len, mut read) = (0, 0);
        for x in rest.by_ref().take(CHUNK) {
            below += usize::from(x < lo);
            chunk[len] = x;
            len += usize::from(lo <= x && x <= hi);
            read += 1;
        }
        window.extend_from_slice(&chunk[..len]);
        if read < CHUNK {
            break;
        }
    }
    if below <= a && b < below + window.len() {
        return pick(window, a - below, b - below);
    }
    pick(keys.collect(), a, b)
}

/// The keys of ranks `a` and `b` (`a <= b <= a + 1`) of `v`.
fn pick(mut v: Vec<u64>, a: usize, b: usize) -> (u64, u64) {
    let (_, &mut x, above) = v.select_nth_unstable(a);
    let y = if b == a {
        x
    } else {
        *above.iter().min().expect("rank b is in v")
    };
    (x, y)
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
        // Wide and narrow spreads (rows normalised to one length share
        // most key bits), odd and even lengths, small and large.
        for (n, spread) in [
            (1, 1.0),
            (2, 1.0),
            (7, 1.0),
            (600, 1e-9),
            (4_095, 3.0),
            (100_000, 1e-6),
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
    }

    #[test]
    fn a_sample_that_misses_the_middle_still_gives_it() {
        // Every sampled value (each 64th) is far above the others, so the
        // window the sample places misses the middle rank; then sorted
        // inputs, both ways.
        let mut v = values(10_000, 5, 1.0);
        v.iter_mut().step_by(SAMPLE_EVERY).for_each(|x| *x += 1e9);
        assert_eq!(median(&v).to_bits(), sorted_median(&v).to_bits());
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
