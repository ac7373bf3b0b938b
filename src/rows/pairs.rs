//! Rows compared two by two, each pair read once: `diff` streams the rows
//! of a base matrix beside the rows of a fine-tune of it and needs, per
//! pair, the sums a cosine, a relative change and an equality test are
//! made of ([`PairSums`]); and, in the same read of each base row, the
//! column sums of the base mean and the key that finds a copied row.
//!
//! BF16 and F32 rows are read in place, other dtypes converted to f32 a
//! row at a time, each side as its own dtype has it (a BF16 base beside
//! an F32 fine-tune, a Q8_0 one). The loop is compiled for AVX-512 and
//! for AVX2, both with fused multiply-adds, and portable; the widest the
//! CPU has runs (see `cpu::RowBuild`). The sum of squares of the first
//! row of a pair is made as `dots::dots` makes it, bit for bit, so that a
//! row's key (see `key::values_key`) is the same whichever loop read it.

use super::dots::{axpy, dots, madd};
use super::key::values_key;
use super::mean::add_row;
use super::row::{Bf16, F32Bytes, L, Row};
use crate::cpu::{Isa, PORTABLE_FUSES, RowBuild};
use crate::dtype::Dtype;
use crate::matrix::convert;

/// What one read of a pair of rows `(a, b)` of equal length sums: the
/// squares, the product and the difference, and the largest magnitudes.
/// Maxima skip NaN; a NaN or an infinity shows in the sums instead.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PairSums {
    /// `a·a`, summed as [`dots`] sums it.
    pub aa: f32,
    /// `b·b`.
    pub bb: f32,
    /// `a·b`.
    pub ab: f32,
    /// `(a − b)·(a − b)`, from the differences (exact where they are small).
    pub dd: f32,
    /// The largest `|a_j − b_j|`.
    pub max_diff: f32,
    /// The largest `|a_j|`.
    pub max_a: f32,
    /// The largest `|b_j|`.
    pub max_b: f32,
}

impl PairSums {
    /// Whether every sum is finite: no value is NaN or infinite (or so
    /// large that its square overflows).
    pub(crate) fn finite(&self) -> bool {
        (self.aa + self.bb + self.ab + self.dd).is_finite()
    }
}

/// `x` when it is larger than `m`, else `m` (so a NaN `x` leaves `m`): one
/// `max` instruction once vectorised, where `f32::max` needs more.
#[inline(always)]
fn larger(x: f32, m: f32) -> f32 {
    if x > m { x } else { m }
}

/// The sums of `a` and `b` (of equal length), in [`L`] f32 lanes (value
/// `j` of each step in lane `j`), the lanes then added in order and the
/// values past the last whole step one by one, as [`dots`] adds them.
#[inline(always)]
pub(crate) fn pair_sums<const FMA: bool>(a: impl Row, b: impl Row) -> PairSums {
    let len = a.len();
    assert_eq!(b.len(), len, "rows of equal length");
    let whole = len / L * L;
    let [mut aa, mut bb, mut ab, mut dd, mut md, mut ma, mut mb] = [[0f32; L]; 7];
    for k in (0..whole).step_by(L) {
        // A step has work enough for the memory to sit idle between its
        // loads: both rows ask for their bytes further on (see `dots`).
        a.prefetch_ahead(k);
        b.prefetch_ahead(k);
        let (x, y) = (a.chunk(k), b.chunk(k));
        for l in 0..L {
            let d = x[l] - y[l];
            aa[l] = madd::<FMA>(x[l], x[l], aa[l]);
            bb[l] = madd::<FMA>(y[l], y[l], bb[l]);
            ab[l] = madd::<FMA>(x[l], y[l], ab[l]);
            dd[l] = madd::<FMA>(d, d, dd[l]);
            md[l] = larger(d.abs(), md[l]);
            ma[l] = larger(x[l].abs(), ma[l]);
            mb[l] = larger(y[l].abs(), mb[l]);
        }
    }
    let top = |m: &[f32; L]| m.iter().fold(0f32, |t, &x| larger(x, t));
    let mut s = PairSums {
        aa: aa.iter().sum(),
        bb: bb.iter().sum(),
        ab: ab.iter().sum(),
        dd: dd.iter().sum(),
        max_diff: top(&md),
        max_a: top(&ma),
        max_b: top(&mb),
    };
    for j in whole..len {
        let (x, y) = (a.at(j), b.at(j));
        let d = x - y;
        s.aa += x * x;
        s.bb += y * y;
        s.ab += x * y;
        s.dd += d * d;
        s.max_diff = larger(d.abs(), s.max_diff);
        s.max_a = larger(x.abs(), s.max_a);
        s.max_b = larger(y.abs(), s.max_b);
    }
    s
}

/// [`pair_sums`] of two rows already in f32, in the `build` given.
pub(crate) fn pair_of(build: RowBuild, a: &[f32], b: &[f32]) -> PairSums {
    match build.isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { pair_avx512(a, b) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { pair_avx2(a, b) },
        _ => pair_sums::<PORTABLE_FUSES>(a, b),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,fma")]
fn pair_avx512(a: &[f32], b: &[f32]) -> PairSums {
    pair_sums::<true>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn pair_avx2(a: &[f32], b: &[f32]) -> PairSums {
    pair_sums::<true>(a, b)
}

/// One block of base rows and what is asked of each.
pub(crate) struct Block<'a> {
    /// Values per row.
    pub cols: usize,
    /// The base rows' dtype.
    pub base_dtype: Dtype,
    /// Whole base rows, as stored.
    pub base: &'a [u8],
    /// The tuned rows' dtype.
    pub tuned_dtype: Dtype,
    /// For each base row, the stored tuned row it is compared with, if any.
    pub tuned: &'a [Option<&'a [u8]>],
    /// Column sums each finite base row is added to, in f64 (`None`: not
    /// asked).
    pub sums: Option<&'a mut [f64]>,
    /// Whether each base row's key is made (see `key::values_key`).
    pub keys: bool,
}

/// What [`compare`] makes of one base row.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Compared {
    /// The pair's sums; without a tuned row, only `aa` is made.
    pub sums: PairSums,
    /// The base row's key (0 when not asked).
    pub key: u64,
}

/// Base rows added in f32 before their sum is added to the f64 column
/// sums: adding in f32 takes half the instructions and memory of adding
/// each row in f64, and a sum of this many values loses less than a
/// millionth of its magnitude.
const F32_RUN: usize = 64;

/// Buffers for rows of dtypes read converted, and the f32 sum of the last
/// few base rows, reused block after block.
#[derive(Default)]
pub(crate) struct Scratch {
    base: Vec<f32>,
    tuned: Vec<f32>,
    run: Vec<f32>,
}

/// Compares the rows of `block`, appending one [`Compared`] per base row
/// to `out` and adding the finite base rows to `block.sums`; returns how
/// many were added.
pub(crate) fn compare(
    build: RowBuild,
    block: Block,
    scratch: &mut Scratch,
    out: &mut Vec<Compared>,
) -> usize {
    match build.isa() {
        // SAFETY: a `RowBuild` runs only on a CPU with its instructions.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { compare_avx512(block, scratch, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { compare_avx2(block, scratch, out) },
        _ => forms::<PORTABLE_FUSES>(block, scratch, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,fma")]
fn compare_avx512(block: Block, scratch: &mut Scratch, out: &mut Vec<Compared>) -> usize {
    forms::<true>(block, scratch, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn compare_avx2(block: Block, scratch: &mut Scratch, out: &mut Vec<Compared>) -> usize {
    forms::<true>(block, scratch, out)
}

/// How a side's stored rows are read: in place, or converted to f32.
trait Reader: Copy {
    /// The row as the loops read it.
    type Row<'r>: Row;
    /// The row stored in `bytes`; `scratch` holds it when converted.
    fn read<'r>(self, bytes: &'r [u8], scratch: &'r mut [f32]) -> Self::Row<'r>;
}

/// BF16 rows, widened in registers.
#[derive(Clone, Copy)]
struct InPlaceBf16;

impl Reader for InPlaceBf16 {
    type Row<'r> = Bf16<'r>;
    #[inline(always)]
    fn read<'r>(self, bytes: &'r [u8], _: &'r mut [f32]) -> Bf16<'r> {
        Bf16(bytes)
    }
}

/// F32 rows, read from their bytes.
#[derive(Clone, Copy)]
struct InPlaceF32;

impl Reader for InPlaceF32 {
    type Row<'r> = F32Bytes<'r>;
    #[inline(always)]
    fn read<'r>(self, bytes: &'r [u8], _: &'r mut [f32]) -> F32Bytes<'r> {
        F32Bytes(bytes)
    }
}

/// Rows of any other dtype, converted to f32 first.
#[derive(Clone, Copy)]
struct Converted(Dtype);

impl Reader for Converted {
    type Row<'r> = &'r [f32];
    #[inline(always)]
    fn read<'r>(self, bytes: &'r [u8], scratch: &'r mut [f32]) -> &'r [f32] {
        convert(self.0, bytes, scratch);
        scratch
    }
}

/// [`rows`] with the readers of both sides' dtypes.
#[inline(always)]
fn forms<const FMA: bool>(block: Block, scratch: &mut Scratch, out: &mut Vec<Compared>) -> usize {
    macro_rules! tuned {
        ($base:expr) => {
            match block.tuned_dtype {
                Dtype::BF16 => rows::<FMA, _, _>($base, InPlaceBf16, block, scratch, out),
                Dtype::F32 => rows::<FMA, _, _>($base, InPlaceF32, block, scratch, out),
                d => rows::<FMA, _, _>($base, Converted(d), block, scratch, out),
            }
        };
    }
    match block.base_dtype {
        Dtype::BF16 => tuned!(InPlaceBf16),
        Dtype::F32 => tuned!(InPlaceF32),
        d => tuned!(Converted(d)),
    }
}

/// The loop of [`compare`] over the block's rows, each base row read once
/// for everything asked of it while it is in cache.
#[inline(always)]
fn rows<const FMA: bool, A: Reader, B: Reader>(
    base: A,
    tuned: B,
    block: Block,
    scratch: &mut Scratch,
    out: &mut Vec<Compared>,
) -> usize {
    let Block {
        cols,
        base_dtype,
        base: raw,
        tuned: tuned_rows,
        mut sums,
        keys,
        ..
    } = block;
    let row_bytes = base_dtype
        .bytes_for(cols as u64)
        .expect("Matrix::new checked the row size") as usize;
    scratch.base.resize(cols, 0.0);
    scratch.tuned.resize(cols, 0.0);
    scratch.run.clear();
    scratch.run.resize(cols, 0.0);
    out.reserve(tuned_rows.len());
    let (mut added, mut in_run) = (0, 0);
    for (i, other) in tuned_rows.iter().enumerate() {
        let a = base.read(&raw[i * row_bytes..(i + 1) * row_bytes], &mut scratch.base);
        let s = match other {
            Some(bytes) => pair_sums::<FMA>(a, tuned.read(bytes, &mut scratch.tuned)),
            None => PairSums {
                aa: dots::<FMA, 0>(a, []).0,
                ..PairSums::default()
            },
        };
        if let Some(sums) = sums.as_deref_mut()
            && s.aa.is_finite()
        {
            axpy::<FMA, _>(&mut scratch.run, &[1.0], &[a]);
            added += 1;
            in_run += 1;
            if in_run == F32_RUN {
                flush(sums, &mut scratch.run);
                in_run = 0;
            }
        }
        out.push(Compared {
            sums: s,
            key: if keys { values_key(a, s.aa) } else { 0 },
        });
    }
    if let Some(sums) = sums
        && in_run > 0
    {
        flush(sums, &mut scratch.run);
    }
    added
}

/// Adds the f32 sums of `run` to `sums` in f64, and zeroes them.
#[inline(always)]
fn flush(sums: &mut [f64], run: &mut [f32]) {
    add_row(sums, &*run);
    run.fill(0.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values that BF16, F16 and F32 all hold exactly.
    fn row(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|j| (((j * 7919 + seed * 31) % 201) as f32 - 100.0) / 64.0)
            .collect()
    }

    #[test]
    fn sums_are_the_exact_ones_and_the_first_square_is_dots_bit_for_bit() {
        // Two whole steps of 32 and a tail of 7.
        let (a, mut b) = (row(71, 1), row(71, 2));
        b[70] = f32::NAN;
        let s = pair_sums::<true>(a.as_slice(), b.as_slice());
        assert!(!s.finite() && s.bb.is_nan());
        b[70] = 0.5;
        let s = pair_sums::<true>(a.as_slice(), b.as_slice());
        let exact = |f: &dyn Fn(f64, f64) -> f64| -> f64 {
            a.iter()
                .zip(&b)
                .map(|(&x, &y)| f(f64::from(x), f64::from(y)))
                .sum()
        };
        for (got, want) in [
            (s.aa, exact(&|x, _| x * x)),
            (s.bb, exact(&|_, y| y * y)),
            (s.ab, exact(&|x, y| x * y)),
            (s.dd, exact(&|x, y| (x - y) * (x - y))),
        ] {
            assert!(
                (f64::from(got) - want).abs() <= 1e-6 * want.abs(),
                "{got} {want}"
            );
        }
        let max = |f: &dyn Fn(usize) -> f32| (0..71).map(f).fold(0f32, f32::max);
        assert_eq!(s.max_diff, max(&|j| (a[j] - b[j]).abs()));
        assert_eq!(
            (s.max_a, s.max_b),
            (max(&|j| a[j].abs()), max(&|j| b[j].abs()))
        );
        for fma in [false, true] {
            let (got, want) = match fma {
                true => (
                    pair_sums::<true>(a.as_slice(), b.as_slice()).aa,
                    dots::<true, 0>(a.as_slice(), []).0,
                ),
                false => (
                    pair_sums::<false>(a.as_slice(), b.as_slice()).aa,
                    dots::<false, 0>(a.as_slice(), []).0,
                ),
            };
            assert_eq!(got.to_bits(), want.to_bits(), "fma {fma}");
        }
    }

    #[test]
    fn every_dtype_pairing_gives_the_sums_of_the_values() {
        // Three rows of 100 values; the second has no tuned row.
        let cols = 100;
        let base: Vec<f32> = (0..3).flat_map(|i| row(cols, i)).collect();
        let tuned: Vec<f32> = (0..3).flat_map(|i| row(cols, i + 5)).collect();
        let build = RowBuild::detect();
        let want = |i: usize| {
            pair_of(
                build,
                &base[i * cols..(i + 1) * cols],
                &tuned[i * cols..(i + 1) * cols],
            )
        };
        for bd in [Dtype::BF16, Dtype::F32, Dtype::F16] {
            for td in [Dtype::BF16, Dtype::F32, Dtype::F16] {
                let (b, t) = (bd.encode(&base), td.encode(&tuned));
                let tb = t.len() / 3;
                let others = [Some(&t[..tb]), None, Some(&t[2 * tb..])];
                let mut sums = vec![0f64; cols];
                let mut out = Vec::new();
                let added = compare(
                    build,
                    Block {
                        cols,
                        base_dtype: bd,
                        base: &b,
                        tuned_dtype: td,
                        tuned: &others,
                        sums: Some(&mut sums),
                        keys: true,
                    },
                    &mut Scratch::default(),
                    &mut out,
                );
                assert_eq!((added, out.len()), (3, 3));
                assert_eq!(out[0].sums, want(0), "{bd} {td}");
                assert_eq!(out[2].sums, want(2), "{bd} {td}");
                assert_eq!(out[1].sums.aa, want(1).aa, "{bd} {td}");
                assert_eq!(out[1].sums.bb, 0.0);
                let key = values_key(&base[cols..2 * cols], want(1).aa);
                assert_eq!(out[1].key, key, "{bd} {td}");
                let col0: f64 = (0..3).map(|i| f64::from(base[i * cols])).sum();
                assert_eq!(sums[0], col0);
            }
        }
    }

    #[test]
    fn every_build_agrees() {
        let (a, b) = (row(200, 3), row(200, 4));
        let builds = RowBuild::tested();
        let first = pair_of(builds[0], &a, &b);
        for &build in &builds {
            let s = pair_of(build, &a, &b);
            if build.fused() {
                assert_eq!(s, first, "{build:?}");
            }
            assert!((s.ab - first.ab).abs() <= 1e-5 * first.ab.abs().max(1.0));
            assert_eq!(s.max_diff, first.max_diff);
        }
    }
}
