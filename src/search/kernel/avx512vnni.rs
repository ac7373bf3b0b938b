//! The AVX512-VNNI kernel (`avx512vnni`) for BF16 matrices: an int8 first
//! pass with a rigorous error bound, refined with AVX-512 BF16 inside the
//! scan while the block is in cache.
//!
//! # Quantization
//!
//! Each block of rows is quantized once per scan, shared by every query: a
//! row `r` gets the scale `s_r = max |r_i| / 127` and `r^_i` = `r_i / s_r`
//! rounded (one FMA onto `1.5 * 2^23 + 128`, whose bits then hold the
//! byte; `VPERMT2B` gathers the bytes) in `[-127, 127]`, stored as the byte `r^_i + 128` (the unsigned side
//! of `VPDPBUSD`; the `+ 128` adds `128 sum q^_i` to every product with
//! query `q`, a per-query constant taken off again). Queries are quantized
//! once per search the same way, in f64. The same pass computes the row's
//! squared norm and the squared norm of its residual `e_r = r - s_r r^`
//! (each `e_r,i` comes from one fused multiply-add, so it is the exact
//! residual rounded once). Bytes keep the columns' order, padded to a
//! multiple of 64 with zeros.
//!
//! # The bound
//!
//! With `q = s_q q^ + e_q` and `r = s_r r^ + e_r` (exact, for the scales
//! actually used),
//! `q . r - s_q s_r (q^ . r^) = s_q q^ . e_r + e_q . r`, so by Cauchy-Schwarz
//! the int8 score errs by at most `|s_q q^| |e_r| + |e_q| |r|`, with `|e_r|`
//! and `|r|` bounded from their f32 sums (Higham's `gamma_D`, plus an
//! absolute term for underflow) and the query's terms computed in f64. The
//! integer sum is exact: `255 * 127 * columns < 2^31` is required ([`fits`]).
//! For cosine the bound is divided by the norms as in `shortlist`.
//!
//! # Refinement
//!
//! That bound is much wider than the f32 kernels' (about 0.02 in cosine on
//! Gaussian rows), so the int8 score only filters: for each row and query
//! whose int8 upper bound reaches the query's running threshold (the k-th
//! best lower bound so far, see `shortlist`), the row's score is recomputed
//! with the AVX-512 BF16 dot product and offered to the shortlist with that
//! kernel's tight bound; the others provably cannot be in the top k. Rows
//! or queries the int8 bound cannot describe (non-finite values, a maximum
//! below 2^-100, an untrusted norm) are always refined.

mod simd;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::avx512bf16::Halves;
use crate::matrix::Matrix;
use crate::search::shortlist::{Metric, RowBounds, Scorer, Shortlist, dot64};
use simd::{Tiles, quantize_row, refine, walk};

/// The unit roundoff of f32.
const U: f64 = 1.0 / (1u64 << 24) as f64;
/// Relative slack for rounding the bounds themselves in f64.
const SLACK: f64 = 1e-9;
/// Rows and queries whose largest value is below this are always refined
/// (their scale would be subnormal).
const TINY: f32 = 1.0 / (1u128 << 100) as f32;
/// Columns per chunk (one zmm of bytes).
const CHUNK: usize = 64;
/// Queries per query tile (6 × 4 KiB stay in L1 for Llama-sized rows;
/// 8 measured slower, as did 4 with 6-row tiles).
const QUERY_TILE: usize = 6;

/// True when the CPU runs this kernel (see `cpu::has_avx512vnni`).
pub(super) fn available() -> bool {
    crate::cpu::has_avx512vnni()
}

/// True when the i32 sums of `cols` columns cannot overflow.
pub(super) fn fits(cols: usize) -> bool {
    let width = cols.div_ceil(CHUNK) * CHUNK;
    (255 * 127u64).saturating_mul(width as u64) < 1 << 31
}

/// Per query, the highest threshold (k-th best lower bound) any worker has
/// reached so far, as [`key`]s: a row whose upper bound is below it has k
/// rows strictly better than it in that worker's lists, so all workers may
/// drop it.
pub(in crate::search) struct Floors(Vec<AtomicU64>);

impl Floors {
    /// No threshold yet for `nq` queries.
    pub(in crate::search) fn new(nq: usize) -> Self {
        Floors(
            (0..nq)
                .map(|_| AtomicU64::new(key(f64::NEG_INFINITY)))
                .collect(),
        )
    }

    /// Raises each query's floor to its list's threshold, if higher.
    pub(in crate::search) fn raise(&self, lists: &[Shortlist]) {
        for (list, shared) in lists.iter().zip(&self.0) {
            if list.tau > unkey(shared.load(Relaxed)) {
                shared.fetch_max(key(list.tau), Relaxed);
            }
        }
    }
}

/// An f64 (not NaN) as a u64 in the same order.
fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The f64 of a [`key`].
fn unkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// One query's int8 form and the terms of its error bound.
#[derive(Clone, Copy, Debug)]
struct QueryQuant {
    /// The int8 bound describes the query (finite, not tiny).
    sure: bool,
    /// `128 * sum q^_i`, taken off the VNNI sums.
    offset: i32,
    /// `s_q`.
    scale: f64,
    /// An upper bound on `|s_q q^|`.
    hat_norm: f64,
    /// An upper bound on `|e_q|`.
    err_norm: f64,
}

/// The queries of one search, quantized, plus their BF16 halves for the
/// refinement.
pub(super) struct Prepared {
    cols: usize,
    /// `cols` rounded up to [`CHUNK`].
    width: usize,
    /// Bytes from one row or query to the next: `width` plus one chunk, so
    /// that the same chunk of the rows and queries of a tile does not fall
    /// in one L1 set (4 KiB apart, as for 4096 columns).
    stride: usize,
    /// `q^` per query, `stride` bytes each.
    hat: Vec<i8>,
    quant: Vec<QueryQuant>,
    halves: Halves,
}

impl Prepared {
    /// Quantizes `queries` of `cols` values, stored back to back
    /// (`fits(cols)`).
    pub(super) fn new(queries: &[f32], cols: usize) -> Self {
        assert!(cols > 0 && fits(cols), "columns");
        let width = cols.div_ceil(CHUNK) * CHUNK;
        let stride = width + CHUNK;
        let mut hat = Vec::with_capacity(queries.len() / cols * stride);
        let quant = queries
            .chunks_exact(cols)
            .map(|q| {
                let (h, quant) = quantize_query(q, width);
                hat.extend(h);
                hat.extend([0; CHUNK]);
                quant
            })
            .collect();
        Prepared {
            cols,
            width,
            stride,
            hat,
            quant,
            halves: Halves::new(queries, cols),
        }
    }

    /// The number of queries.
    fn nq(&self) -> usize {
        self.quant.len()
    }

    /// The int8 approximation of every dot product of a block of stored
    /// BF16 rows (`rows` of `m`) with the queries, and the rows' squared
    /// norms, laid out as `Queries::score_block` (which uses this for the
    /// kernel choice and tests).
    pub(super) fn approximate(
        &self,
        m: &Matrix,
        rows: Range<usize>,
        s: &mut Scratch,
        norms: Option<&mut [f32]>,
        dots: &mut [f32],
    ) {
        let nq = self.nq();
        // As the scan does (so the kernel choice times what the scan runs).
        self.first_pass_prefetching(m, rows.clone(), s);
        for (i, row) in s.rows.iter().enumerate() {
            for (q, quant) in self.quant.iter().enumerate() {
                let d = s.dots[i * nq + q].wrapping_sub(quant.offset);
                dots[i * nq + q] = (quant.scale * f64::from(row.scale) * f64::from(d)) as f32;
            }
        }
        if let Some(norms) = norms {
            for (n, row) in norms.iter_mut().zip(&s.rows) {
                *n = row.norm2;
            }
        }
    }

    /// Scans one block (`rows` of `m`): the int8 pass, then each row and
    /// query whose int8 bound reaches the query's threshold is refined and
    /// offered to `lists` through `scorer`. Rows `mask`ed off are skipped.
    /// The threshold is the higher of the list's and the one all workers
    /// share (`floors`), which this raises.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_block(
        &self,
        m: &Matrix,
        rows: Range<usize>,
        s: &mut Scratch,
        scorer: &Scorer,
        mask: Option<&[bool]>,
        lists: &mut [Shortlist],
        floors: &Floors,
    ) {
        assert!(available());
        let bytes = m.block_bytes(rows.clone());
        self.first_pass_prefetching(m, rows.clone(), s);
        let nq = self.nq();
        assert_eq!(lists.len(), nq);
        // Per query, the factors of the checks, as arrays (the loop over
        // queries below vectorizes), and the threshold: the higher of the
        // list's and the shared one; -inf to always refine, +inf to skip.
        let Scratch {
            rows: quantized,
            dots,
            queries: qs,
            ..
        } = s;
        qs.clear();
        for ((c, list), floor) in self.consts(scorer).zip(lists.iter()).zip(&floors.0) {
            let floor = list.tau.max(unkey(floor.load(Relaxed)));
            let always = c.refine;
            let thr = if c.skip {
                f64::INFINITY
            } else if always {
                f64::NEG_INFINITY
            } else {
                floor
            };
            let zero = |x: f64| if always { 0.0 } else { x };
            qs.push(
                c.offset,
                zero(c.score),
                zero(c.hat),
                zero(c.err),
                thr,
                always,
            );
        }
        let row_bytes = 2 * self.cols;
        for (i, row) in quantized.iter().enumerate() {
            let id = rows.start + i;
            if mask.is_some_and(|mask| !mask[id]) {
                continue;
            }
            let bounds = scorer.row(row.norm2);
            let sums = &dots[i * nq..(i + 1) * nq];
            match self.row_factors(row, &bounds, scorer.metric()) {
                // SAFETY: the CPU has AVX-512F (`available` above).
                Some(f) => unsafe { qs.check(&f, sums) },
                None => {
                    for q in 0..nq {
                        qs.hit[q] = qs.thr[q] != f64::INFINITY;
                    }
                }
            }
            let stored = &bytes[i * row_bytes..(i + 1) * row_bytes];
            for (q, list) in lists.iter_mut().enumerate() {
                if !qs.hit[q] {
                    continue;
                }
                // SAFETY: the CPU has AVX-512 BF16 (`available` above).
                let dot = unsafe { refine(stored, self.cols, &self.halves, q) };
                scorer.offer_one(&bounds, id as u32, q, dot, list);
                if !qs.always[q] {
                    qs.thr[q] = qs.thr[q].max(list.tau);
                }
            }
        }
        floors.raise(lists);
    }

    /// Per query, the factors of its int8 scores and bounds under
    /// `scorer`'s metric.
    fn consts(&self, scorer: &Scorer) -> impl Iterator<Item = Consts> {
        let cosine = scorer.metric() == Metric::Cosine;
        self.quant.iter().enumerate().map(move |(q, quant)| {
            let qn = scorer.q_norm(q);
            let skip = cosine && qn == 0.0;
            let f = if cosine && qn > 0.0 { 1.0 / qn } else { 1.0 };
            let up = 1.0 + SLACK;
            Consts {
                refine: !skip && (!quant.sure || !qn.is_finite()),
                skip,
                offset: quant.offset,
                score: quant.scale * f,
                hat: quant.hat_norm * f * up,
                err: quant.err_norm * f * up,
            }
        })
    }

    /// A row's factors of its int8 scores and bounds (`bounds` from its
    /// squared norm), or `None` when the int8 bound does not describe it.
    fn row_factors(&self, row: &RowQuant, bounds: &RowBounds, metric: Metric) -> Option<Row> {
        let cosine = metric == Metric::Cosine;
        let e_up = residual_bound(row.err2, self.cols);
        let sure = row.sure && e_up.is_finite() && bounds.up.is_finite();
        if !sure || (cosine && !bounds.trusted) {
            return None;
        }
        let f = if cosine { bounds.inv } else { 1.0 };
        Some(Row {
            score: f64::from(row.scale) * f,
            hat: e_up * f,
            err: bounds.up * f,
            fixed: if cosine {
                bounds.err_norm * f + SLACK
            } else {
                0.0
            },
        })
    }

    /// Per row and query of `rows` of `m`: the int8 score and its error
    /// bound, `None` where the scan always refines.
    #[cfg(test)]
    fn estimates(
        &self,
        m: &Matrix,
        rows: Range<usize>,
        scorer: &Scorer,
    ) -> Vec<Option<(f64, f64)>> {
        let mut s = Scratch::default();
        self.first_pass(m.block_bytes(rows), &[], &mut s);
        let consts: Vec<Consts> = self.consts(scorer).collect();
        let mut out = Vec::new();
        for (i, row) in s.rows.iter().enumerate() {
            let factors = self.row_factors(row, &scorer.row(row.norm2), scorer.metric());
            for (q, c) in consts.iter().enumerate() {
                let f = factors.as_ref().filter(|_| !c.refine && !c.skip);
                let sum = s.dots[i * self.nq() + q];
                out.push(f.map(|f| estimate(c.score, c.hat, c.err, c.offset, f, sum)));
            }
        }
        out
    }

    /// [`Self::first_pass`] on `rows` of `m`, prefetching the block after
    /// them (the one this worker most likely scans next): its pages are
    /// touched first (see `touch_pages`), its lines prefetched during the
    /// int8 pass.
    fn first_pass_prefetching(&self, m: &Matrix, rows: Range<usize>, s: &mut Scratch) {
        let next = rows.end..(rows.end + rows.len()).min(m.rows());
        let ahead = m.block_bytes(next);
        touch_pages(ahead);
        self.first_pass(m.block_bytes(rows), ahead, s);
    }

    /// Quantizes the stored BF16 rows `bytes` into `s` and fills `s.dots`
    /// with their VNNI sums against every query, prefetching `ahead` into
    /// L2 meanwhile.
    fn first_pass(&self, bytes: &[u8], ahead: &[u8], s: &mut Scratch) {
        assert!(available());
        let (cols, width, stride, nq) = (self.cols, self.width, self.stride, self.nq());
        assert!(bytes.len().is_multiple_of(2 * cols));
        let rows = bytes.len() / 2 / cols;
        s.bytes.resize(rows * stride, 0);
        s.rows.clear();
        s.dots.resize(rows * nq, 0);
        for (row, out) in bytes
            .chunks_exact(2 * cols)
            .zip(s.bytes.chunks_exact_mut(stride))
        {
            // SAFETY: the CPU has AVX-512F, BW, VBMI and VNNI (checked above).
            s.rows
                .push(unsafe { quantize_row(row, cols, &mut out[..width]) });
        }
        let t = Tiles {
            block: &s.bytes,
            width,
            stride,
            hat: &self.hat,
            nq,
            ahead,
        };
        // SAFETY: as above.
        unsafe { walk(&t, rows, &mut s.dots) }
    }
}

/// Reads the first byte of every 4 KiB page of `bytes`: this maps the
/// pages not mapped yet (a fault now rather than in the middle of the next
/// block's int8 pass) and starts their first cache lines, so that the
/// prefetches find the pages' translations. The prefetches alone hide
/// little of the wait on the mapped rows.
fn touch_pages(bytes: &[u8]) {
    for b in bytes.iter().step_by(4096) {
        // SAFETY: `b` is a reference; a volatile read keeps the load.
        unsafe { std::ptr::read_volatile(b) };
    }
}

/// An upper bound on `|e_r|` over `cols` columns from its f32 squared
/// norm `err2` (non-finite when `err2` is).
fn residual_bound(err2: f32, cols: usize) -> f64 {
    // The sums' depth, as `quantize_row` adds: `gamma_D = D u / (1 - D u)`.
    let du = (cols.div_ceil(CHUNK) + 6) as f64 * U;
    let gamma = if du < 0.5 {
        du / (1.0 - du)
    } else {
        f64::INFINITY
    };
    let flush = f64::from(f32::MIN_POSITIVE);
    let n = cols as f64;
    // Each residual was rounded once (relative u, or absolute 2^-150 when
    // subnormal); each square and sum too.
    let sum = (f64::from(err2) + (n + 64.0) * flush) / (1.0 - gamma);
    (sum.sqrt() + n.sqrt() * flush) / (1.0 - U) * (1.0 + SLACK)
}

/// Per-query factors of the int8 scores and bounds (divided by the
/// query's norm under cosine).
struct Consts {
    /// Always refine (the int8 bound does not describe the query).
    refine: bool,
    /// Never offered (a zero query under cosine).
    skip: bool,
    /// `128 * sum q^_i`.
    offset: i32,
    /// `s_q`, the score's factor.
    score: f64,
    /// `|s_q q^|`, the factor of the row's `|e_r|`.
    hat: f64,
    /// `|e_q|`, the factor of the row's `|r|`.
    err: f64,
}

/// Per-row factors of the int8 scores and bounds (divided by the row's
/// norm under cosine).
struct Row {
    /// `s_r`.
    score: f64,
    /// A bound on `|e_r|`.
    hat: f64,
    /// A bound on `|r|`.
    err: f64,
    /// The cosine's error from the row's approximate norm.
    fixed: f64,
}

/// The int8 score of a row with factors `r` and VNNI sum `sum` against a
/// query with factors `score`, `hat`, `err` and `offset` (see [`Consts`]),
/// and a bound on its error (see the module docs).
#[inline]
fn estimate(score: f64, hat: f64, err: f64, offset: i32, r: &Row, sum: i32) -> (f64, f64) {
    let d = f64::from(sum.wrapping_sub(offset));
    let a = score * r.score * d;
    (a, hat * r.hat + err * r.err + r.fixed + SLACK * a.abs())
}

/// One block's per-query factors and thresholds, as arrays.
#[derive(Default)]
struct QueryArrays {
    offset: Vec<i32>,
    score: Vec<f64>,
    hat: Vec<f64>,
    err: Vec<f64>,
    /// The threshold a row's int8 upper bound must reach to be refined.
    thr: Vec<f64>,
    /// Always refined (`thr` stays -inf).
    always: Vec<bool>,
    /// Per query, refine the current row.
    hit: Vec<bool>,
}

impl QueryArrays {
    /// Sets `hit[q]` for each query whose int8 upper bound against a row
    /// with factors `f` and VNNI sums `sums` reaches its threshold.
    #[target_feature(enable = "avx512f")]
    fn check(&mut self, f: &Row, sums: &[i32]) {
        let n = sums.len();
        let (score, hat, err) = (&self.score[..n], &self.hat[..n], &self.err[..n]);
        let (offset, thr, hit) = (&self.offset[..n], &self.thr[..n], &mut self.hit[..n]);
        // Indexed arrays of one length: this loop vectorizes.
        for q in 0..n {
            let (a, e) = estimate(score[q], hat[q], err[q], offset[q], f, sums[q]);
            hit[q] = a + e >= thr[q];
        }
    }

    fn clear(&mut self) {
        self.offset.clear();
        self.score.clear();
        self.hat.clear();
        self.err.clear();
        self.thr.clear();
        self.always.clear();
        self.hit.clear();
    }

    fn push(&mut self, offset: i32, score: f64, hat: f64, err: f64, thr: f64, always: bool) {
        self.offset.push(offset);
        self.score.push(score);
        self.hat.push(hat);
        self.err.push(err);
        self.thr.push(thr);
        self.always.push(always);
        self.hit.push(false);
    }
}

/// One quantized row.
#[derive(Clone, Copy, Debug)]
struct RowQuant {
    /// The int8 bound describes the row (finite, not tiny).
    sure: bool,
    /// `s_r` (0 when not `sure`).
    scale: f32,
    /// The squared norm, f32 sums at depth `cols / 64 + 6`.
    norm2: f32,
    /// The squared norm of the residual, likewise.
    err2: f32,
}

/// A worker's buffers for this kernel.
#[derive(Default)]
pub(super) struct Scratch {
    bytes: Vec<u8>,
    rows: Vec<RowQuant>,
    dots: Vec<i32>,
    queries: QueryArrays,
}

/// Quantizes one query into `width` bytes, in f64.
fn quantize_query(q: &[f32], width: usize) -> (Vec<i8>, QueryQuant) {
    let max = q.iter().fold(0f32, |m, x| m.max(x.abs()));
    let norm = dot64(q, q).sqrt();
    let mut hat = vec![0i8; width];
    if !(q.iter().all(|x| x.is_finite()) && max >= TINY) {
        let quant = QueryQuant {
            sure: false,
            offset: 0,
            scale: 0.0,
            hat_norm: 0.0,
            err_norm: 0.0,
        };
        return (hat, quant);
    }
    let scale = f64::from(max) / 127.0;
    let (mut sum, mut hat2, mut err2) = (0i64, 0f64, 0f64);
    for (c, &x) in hat.iter_mut().zip(q) {
        let h = (f64::from(x) / scale).round().clamp(-127.0, 127.0);
        let e = f64::from(x) - scale * h;
        (sum, hat2, err2) = (sum + h as i64, hat2 + h * h, err2 + e * e);
        *c = h as i8;
    }
    let quant = QueryQuant {
        sure: true,
        offset: (128 * sum) as i32,
        scale,
        hat_norm: scale * hat2.sqrt() * (1.0 + SLACK),
        // The f64 residuals err by a few 2^-53 |q_i|.
        err_norm: err2.sqrt() * (1.0 + SLACK) + norm * SLACK,
    };
    (hat, quant)
}

#[cfg(test)]
mod tests;
