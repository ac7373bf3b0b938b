//! The dot-product loops: `r·r` with the dot products against up to two
//! vectors (only the vectors given cost anything), one row or a tile of
//! rows at a time, and `acc += y·r` over several rows, over any [`Row`],
//! with or without fused multiply-adds, written so the compiler
//! vectorises them. `check`, `undertrained` and the component share these
//! loops, so their sums agree bit for bit.

use super::row::{L, Row};

/// `x * y + acc`, fused when `FMA` (only in builds for CPUs that have
/// it: elsewhere `mul_add` is a slow library call).
#[inline(always)]
pub(crate) fn madd<const FMA: bool>(x: f32, y: f32, acc: f32) -> f32 {
    if FMA { x.mul_add(y, acc) } else { x * y + acc }
}

/// `r·r` and `r·v` for each of the `N` vectors (at most 2, each of
/// `r.len()` values), accumulated in [`L`] f32 lanes (value `j` of each
/// step in lane `j`) and the lanes then added in order; values past the
/// last whole step are added one by one. (The one-row case of
/// [`dots_rows`], whose sums are the same bit for bit.)
#[inline(always)]
pub(crate) fn dots<const FMA: bool, const N: usize>(
    r: impl Row,
    vs: [&[f32]; N],
) -> (f32, [f32; N]) {
    let [sums] = dots_rows::<FMA, N, 1, _>([r], vs);
    sums
}

/// Rows per call of [`dots_rows`] in [`dots_each`].
const ROW_TILE: usize = 8;

/// [`dots`] of rows `row(0)`, …, `row(n - 1)` (of equal length), in
/// order, each row's sums passed to `f`: with two vectors, [`ROW_TILE`]
/// rows at a time (see [`dots_rows`]); with one or none, one row at a
/// time, as a single stream of bytes. One vector (16 KiB for a
/// 4096-wide row) stays in L1 while a row streams past it, and a single
/// stream of bytes keeps the hardware prefetchers ahead better than
/// several at once, so with one vector or none the tiles only cost. Two
/// vectors fill L1 on their own: a row at a time, each row would evict
/// them, hence the tiles.
#[inline(always)]
pub(crate) fn dots_each<const FMA: bool, const N: usize, T: Row>(
    n: usize,
    row: impl Fn(usize) -> T,
    vs: [&[f32]; N],
    mut f: impl FnMut((f32, [f32; N])),
) {
    let mut i = 0;
    while N == 2 && i + ROW_TILE <= n {
        let rows: [T; ROW_TILE] = std::array::from_fn(|t| row(i + t));
        dots_rows::<FMA, N, ROW_TILE, T>(rows, vs)
            .into_iter()
            .for_each(&mut f);
        i += ROW_TILE;
    }
    for i in i..n {
        f(dots::<FMA, N>(row(i), vs));
    }
}

/// Values per column chunk of [`dots_rows`]: 2 KiB of each vector.
const CHUNK: usize = 16 * L;

/// [`dots`] of `R` rows of equal length at once, with the same sums bit
/// for bit: each lane of each row still adds its steps in column order.
/// The columns are walked in chunks of [`CHUNK`] values, each chunk of the
/// vectors meeting every row before the next chunk, so the vectors are
/// read from L1 once per chunk for all `R` rows. One row at a time, two
/// vectors of a 4096-wide matrix (32 KiB, all of a typical L1) would be
/// evicted by each row's bytes and read again from L2 for every row.
#[inline(always)]
pub(crate) fn dots_rows<const FMA: bool, const N: usize, const R: usize, T: Row>(
    rows: [T; R],
    vs: [&[f32]; N],
) -> [(f32, [f32; N]); R] {
    const { assert!(N <= 2, "at most two vectors") };
    let len = rows.first().map_or(0, |r| r.len());
    assert!(rows.iter().all(|r| r.len() == len), "rows of equal length");
    let step = |n: usize, k: usize| -> &[f32; L] {
        match vs.get(n) {
            Some(v) => v[k..k + L].try_into().expect("L values"),
            None => &[0.0; L],
        }
    };
    // Per row: the lanes of `r·r`, `r·v0` and `r·v1` between chunks.
    let mut state = [[[0f32; L]; 3]; R];
    let whole = len / L * L;
    for c0 in (0..whole).step_by(CHUNK) {
        let c1 = (c0 + CHUNK).min(whole);
        for (r, st) in rows.iter().zip(&mut state) {
            // Named arrays, not one array of `N`: the compiler keeps these
            // in registers.
            let [mut sq, mut a0, mut a1] = *st;
            for k in (c0..c1).step_by(L) {
                // With dot products, a step has work enough for the memory
                // to sit idle between its loads, and asking ahead hides the
                // wait. `r·r` alone streams at memory speed on the hardware
                // prefetchers, and requests of its own only compete with
                // them.
                if N > 0 {
                    r.prefetch_ahead(k);
                }
                let (x, v0, v1) = (r.chunk(k), step(0, k), step(1, k));
                for l in 0..L {
                    sq[l] = madd::<FMA>(x[l], x[l], sq[l]);
                    if N > 0 {
                        a0[l] = madd::<FMA>(x[l], v0[l], a0[l]);
                    }
                    if N > 1 {
                        a1[l] = madd::<FMA>(x[l], v1[l], a1[l]);
                    }
                }
            }
            *st = [sq, a0, a1];
        }
    }
    std::array::from_fn(|i| {
        let (r, [sq, a0, a1]) = (rows[i], &state[i]);
        let mut sq_total: f32 = sq.iter().sum();
        let mut totals: [f32; N] =
            std::array::from_fn(|n| if n == 0 { a0 } else { a1 }.iter().sum());
        for j in whole..len {
            let x = r.at(j);
            sq_total += x * x;
            for (t, v) in totals.iter_mut().zip(vs) {
                *t += x * v[j];
            }
        }
        (sq_total, totals)
    })
}

/// `acc += y₀ · r₀ + y₁ · r₁ + …`, the rows added one after another to
/// each value (the same sums, bit for bit, as adding each whole row in
/// turn), `acc` read and written once for all of them: a step of [`L`]
/// values is kept in registers while each row's step is added.
#[inline(always)]
pub(crate) fn axpy<const FMA: bool, T: Row>(acc: &mut [f32], ys: &[f32], rows: &[T]) {
    let whole = acc.len() / L * L;
    for k in (0..whole).step_by(L) {
        let ac: &mut [f32; L] = (&mut acc[k..k + L]).try_into().expect("L values");
        let mut a = *ac;
        for (&y, r) in ys.iter().zip(rows) {
            let rc = r.chunk(k);
            for i in 0..L {
                a[i] = madd::<FMA>(y, rc[i], a[i]);
            }
        }
        *ac = a;
    }
    for (j, a) in acc.iter_mut().enumerate().skip(whole) {
        for (&y, r) in ys.iter().zip(rows) {
            *a = madd::<FMA>(y, r.at(j), *a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::rows::row::Bf16;

    #[test]
    fn rows_at_once_sum_as_one_at_a_time_bit_for_bit() {
        // Rows of 1100 values: 34 whole steps (more than two chunks) and a
        // tail of 12; 19 rows: two tiles and 3 rows after them (two
        // vectors; with one, every row is taken alone).
        let (n, cols) = (19, 1100);
        let values: Vec<f32> = (0..n * cols)
            .map(|i| ((i * 7919 % 1009) as f32 - 500.0) / 333.0)
            .collect();
        let bytes = Dtype::BF16.encode(&values);
        let v0: Vec<f32> = (0..cols).map(|j| (j as f32 * 0.37).sin()).collect();
        let v1: Vec<f32> = (0..cols).map(|j| (j as f32 * 0.11).cos()).collect();
        let f32_row = |i: usize| &values[i * cols..(i + 1) * cols];
        let bf16_row = |i: usize| Bf16(&bytes[i * 2 * cols..(i + 1) * 2 * cols]);
        let mut got = Vec::new();
        dots_each::<true, 2, _>(n, f32_row, [&v0, &v1], |s| got.push(s));
        let want: Vec<_> = (0..n)
            .map(|i| dots::<true, 2>(f32_row(i), [&v0, &v1]))
            .collect();
        assert_eq!(got, want);
        let mut got = Vec::new();
        dots_each::<false, 1, _>(n, bf16_row, [&v1], |s| got.push(s));
        let want: Vec<_> = (0..n)
            .map(|i| dots::<false, 1>(bf16_row(i), [&v1]))
            .collect();
        assert_eq!(got, want);
        // And one row alone is the plain lane-by-lane sum.
        let r = f32_row(4);
        let mut lanes = [0f32; L];
        for (j, x) in r[..cols / L * L].iter().enumerate() {
            lanes[j % L] = x.mul_add(*x, lanes[j % L]);
        }
        let tail: f32 = lanes.iter().sum();
        let sq = r[cols / L * L..].iter().fold(tail, |s, x| s + x * x);
        assert_eq!(dots::<true, 0>(r, []).0, sq);
    }

    #[test]
    fn sums_cover_the_tail_and_both_row_types() {
        let r: Vec<f32> = (0..37).map(|i| i as f32).collect();
        let (ones, twos) = (vec![1.0; 37], vec![2.0; 37]);
        let d = dots::<false, 2>(r.as_slice(), [&ones, &twos]);
        assert_eq!(d, dots::<true, 2>(r.as_slice(), [&ones, &twos]));
        assert_eq!(d, ((0..37).map(|i| (i * i) as f32).sum(), [666.0, 1332.0]));
        assert_eq!(dots::<false, 1>(r.as_slice(), [&twos]), (d.0, [1332.0]));
        assert_eq!(dots::<false, 0>(r.as_slice(), []), (d.0, []));
        let bytes = Dtype::BF16.encode(&r);
        assert_eq!(dots::<false, 2>(Bf16(&bytes), [&ones, &twos]), d);
        let mut acc = vec![1.0; 37];
        axpy::<false, _>(&mut acc, &[2.0], &[Bf16(&bytes)]);
        assert_eq!((acc[0], acc[36]), (1.0, 73.0));
        // Several rows at once sum as each row in turn, to the bit.
        let rows: Vec<Vec<f32>> = (0..5)
            .map(|t| {
                (0..37)
                    .map(|j| ((j * 7 + t * 3) % 11) as f32 / 3.0 - 1.7)
                    .collect()
            })
            .collect();
        let ys = [0.3, -1.1, 2.7, 1e-3, 5.5];
        let rows: Vec<&[f32]> = rows.iter().map(Vec::as_slice).collect();
        let mut once = vec![0.25; 37];
        axpy::<true, _>(&mut once, &ys, &rows);
        let mut each = vec![0.25; 37];
        for (y, r) in ys.iter().zip(&rows) {
            axpy::<true, _>(&mut each, &[*y], &[*r]);
        }
        assert_eq!(once, each);
    }

    #[test]
    fn bf16_rows_sum_as_their_f32_values_do_bit_for_bit() {
        // Values whose sums round differently in another order: 3 whole
        // steps and a tail of 4.
        let n = 100;
        let wave = |i: usize, a: f32| ((i as f32 * a).sin() * 3.7).powi(3);
        let bytes: Vec<u8> = (0..n)
            .flat_map(|i| half::bf16::from_f32(wave(i, 0.77)).to_le_bytes())
            .collect();
        let values: Vec<f32> = (0..n).map(|i| Bf16(&bytes).at(i)).collect();
        let a: Vec<f32> = (0..n).map(|i| wave(i, 1.31)).collect();
        let b: Vec<f32> = (0..n).map(|i| wave(i, 0.19) + 1e-3).collect();
        fn two(fma: bool, r: impl Row, a: &[f32], b: &[f32]) -> (f32, [f32; 2]) {
            match fma {
                true => dots::<true, 2>(r, [a, b]),
                false => dots::<false, 2>(r, [a, b]),
            }
        }
        for fma in [false, true] {
            let got = two(fma, Bf16(&bytes), &a, &b);
            let want = two(fma, values.as_slice(), &a, &b);
            assert_eq!(got.0.to_bits(), want.0.to_bits());
            assert_eq!(got.1.map(f32::to_bits), want.1.map(f32::to_bits));
            let exact: f64 = (0..n).map(|i| f64::from(values[i]) * f64::from(a[i])).sum();
            assert!((f64::from(got.1[0]) - exact).abs() < 1e-4 * exact.abs().max(1.0));
        }
    }
}
