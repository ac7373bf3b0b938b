//! The arithmetic of one block: row norms and every query's dot product
//! with every row, on the widest path the CPU offers.
//!
//! [`Kernel::best_for`] picks the path once per search; [`Queries`] holds
//! the queries in the form that path reads (f32, or hi + lo BF16 halves).
//! The portable path is plain Rust and is the reference the SIMD paths are
//! tested against.

use std::ops::Range;

use crate::dtype::Dtype;
use crate::matrix::Matrix;

/// An implementation of the block arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Plain Rust, auto-vectorised for the compile target.
    Portable,
    /// The portable code compiled for AVX2 (256-bit vectors; the adds stay
    /// separate multiplies and adds, as Rust does not fuse `a + x * y`).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512F FMA on blocks converted to f32.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX-512 BF16 dot products on the stored bytes (BF16 matrices only).
    #[cfg(target_arch = "x86_64")]
    Avx512Bf16,
    /// AMX BF16 tile products on the stored bytes (BF16 matrices whose
    /// columns are a multiple of 32; other rows use AVX-512 BF16).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    Amx,
}

impl Kernel {
    /// The fastest kernel this CPU runs for `nq` queries on a matrix of
    /// `dtype`. For BF16: from [`AMX_QUERIES`] on, AMX (which always
    /// computes 32 queries at once); else below [`MANY_QUERIES`], BF16 dot
    /// products (two per query, hi and lo, or one for a query exact in
    /// BF16; the pass is memory-bound); from there on, f32 FMA on converted
    /// blocks, which does more work per cycle than the BF16 dot products on
    /// the machines measured. Other dtypes: the widest f32 path.
    ///
    /// The environment variable `EMBSCOPE_KERNEL` (`portable`, `avx2`,
    /// `avx512`, `avx512bf16`, `amx`) forces a kernel when the CPU has it,
    /// for benchmarks and to rule out a kernel when chasing a bug.
    pub(super) fn best_for(dtype: Dtype, nq: usize) -> Kernel {
        let available = Kernel::available(dtype);
        if let Ok(name) = std::env::var("EMBSCOPE_KERNEL")
            && let Some(k) = available.iter().find(|k| k.name() == name)
        {
            return *k;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let has = |k| available.contains(&k);
            #[cfg(target_os = "linux")]
            if has(Kernel::Amx) && nq >= AMX_QUERIES {
                return Kernel::Amx;
            }
            if has(Kernel::Avx512Bf16) && nq < MANY_QUERIES {
                return Kernel::Avx512Bf16;
            }
            for k in [Kernel::Avx512, Kernel::Avx2] {
                if has(k) {
                    return k;
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (nq, available);
        Kernel::Portable
    }

    /// The kernel's name, as `EMBSCOPE_KERNEL` spells it.
    fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => "avx512",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Bf16 => "avx512bf16",
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            Kernel::Amx => "amx",
        }
    }

    /// True for the AMX kernel.
    #[cfg(target_arch = "x86_64")]
    fn is_amx(self) -> bool {
        #[cfg(target_os = "linux")]
        return self == Kernel::Amx;
        #[cfg(not(target_os = "linux"))]
        false
    }

    /// Every kernel this CPU runs for `dtype`, slowest first.
    pub(super) fn available(dtype: Dtype) -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if super::x86::has_avx2() {
                all.push(Kernel::Avx2);
            }
            if super::x86::has_avx512() {
                all.push(Kernel::Avx512);
            }
            if dtype == Dtype::BF16 && super::x86::has_avx512bf16() {
                all.push(Kernel::Avx512Bf16);
            }
            #[cfg(target_os = "linux")]
            if dtype == Dtype::BF16 && super::amx::available() {
                all.push(Kernel::Amx);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = dtype;
        all
    }
}

/// The queries of one search, laid out for one kernel.
pub(super) struct Queries {
    kernel: Kernel,
    /// All queries back to back, `nq * cols` values (f32 kernels).
    f32: Vec<f32>,
    /// The queries' BF16 halves (the BF16 and AMX kernels).
    #[cfg(target_arch = "x86_64")]
    halves: Option<super::x86::Halves>,
    /// The queries transposed for the many-query AVX-512 kernel.
    #[cfg(target_arch = "x86_64")]
    panels: Option<super::x86::Transposed>,
    /// The queries packed as AMX tiles.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    tiles: Option<super::amx::Packed>,
    /// The number of queries.
    #[cfg(target_arch = "x86_64")]
    nq: usize,
}

/// From this many queries on, a BF16 matrix leaves the BF16 dot products
/// for AMX tiles. Measured on a 128256 × 4096 matrix on a 2-core machine
/// (medians, ms, BF16 / AMX), queries taken from rows (exact in BF16) and
/// expressions of three rows (not): 4 queries 124 / 133 and 131 / 138; 5
/// queries 136 / 132 and 151 / 137; 6 queries 138 / 132 and 160 / 138; 8
/// queries 148 / 131 and 184 / 138.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const AMX_QUERIES: usize = 5;

/// Without AMX, from this many queries on, a BF16 matrix leaves the BF16
/// dot products for the f32 panels. Measured on a 128256 × 4096 matrix on a
/// busy 2-core machine (medians, ms): 8 queries BF16 215, f32 300; 16
/// queries BF16 400-620, f32 310 (queries not exact in BF16).
#[cfg(target_arch = "x86_64")]
const MANY_QUERIES: usize = 12;

/// From this many queries on, the AVX-512 path multiplies 16 queries per
/// vector instead of summing each dot product across a vector.
#[cfg(target_arch = "x86_64")]
const PANEL_QUERIES: usize = 8;

impl Queries {
    /// Lays `queries` out for `kernel` on a matrix of `dtype`.
    pub(super) fn new(kernel: Kernel, dtype: Dtype, queries: &[Vec<f32>]) -> Self {
        let flat: Vec<f32> = queries.iter().flatten().copied().collect();
        #[cfg(target_arch = "x86_64")]
        {
            let nq = queries.len();
            let cols = queries.first().map_or(0, Vec::len);
            #[cfg(target_os = "linux")]
            let kernel = match kernel {
                Kernel::Amx if !cols.is_multiple_of(super::amx::STEP) => Kernel::Avx512Bf16,
                k => k,
            };
            let bf16_bytes = kernel == Kernel::Avx512Bf16 || kernel.is_amx();
            assert!(
                !bf16_bytes || dtype == Dtype::BF16,
                "the BF16 kernels read BF16 bytes"
            );
            let halves = bf16_bytes.then(|| super::x86::Halves::new(&flat, cols));
            let panels = (kernel == Kernel::Avx512 && nq >= PANEL_QUERIES)
                .then(|| super::x86::Transposed::new(&flat, cols));
            Queries {
                kernel,
                #[cfg(target_os = "linux")]
                tiles: halves
                    .as_ref()
                    .filter(|_| kernel.is_amx())
                    .map(|h| super::amx::Packed::new(h, cols)),
                f32: if bf16_bytes { Vec::new() } else { flat },
                halves,
                panels,
                nq,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = dtype;
            Queries { kernel, f32: flat }
        }
    }

    /// Raw bytes per block of rows: 256 KiB of stored rows, sized for a
    /// core's L2 cache (converted to f32 a block takes 2–4× that, and many
    /// queries add their own size); 1 MiB for AMX, which
    /// works on 32 rows at a time whatever the block (256 KiB to 4 MiB
    /// measured the same, 1 MiB a hair faster).
    pub(super) fn block_bytes(&self) -> usize {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if self.tiles.is_some() {
            return 1 << 20;
        }
        256 * 1024
    }

    /// Fills `dots[i * nq + q]` with query `q` · row `rows.start + i`, and
    /// `norms[i]` (when given) with the row's squared norm. `scratch` is a
    /// reusable buffer for the f32 kernels.
    pub(super) fn score_block(
        &self,
        m: &Matrix,
        rows: Range<usize>,
        scratch: &mut Vec<f32>,
        norms: Option<&mut [f32]>,
        dots: &mut [f32],
    ) {
        let cols = m.cols();
        #[cfg(target_arch = "x86_64")]
        if let Some(halves) = &self.halves {
            let bytes = m.block_bytes(rows);
            #[cfg(target_os = "linux")]
            if let Some(tiles) = &self.tiles {
                let mut norms = norms;
                let done = super::amx::block(bytes, cols, tiles, norms.as_deref_mut(), dots);
                let rest = &bytes[done * cols * 2..];
                let rest_norms = norms.map(|n| &mut n[done..]);
                let rest_dots = &mut dots[done * self.nq..];
                return super::x86::block_bf16(rest, cols, halves, rest_norms, rest_dots);
            }
            return super::x86::block_bf16(bytes, cols, halves, norms, dots);
        }
        scratch.resize(rows.len() * cols, 0.0);
        m.block_into(rows, scratch);
        match self.kernel {
            Kernel::Portable => block_f32(scratch, cols, &self.f32, norms, dots),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => super::x86::block_f32_avx2(scratch, cols, &self.f32, norms, dots),
            #[cfg(target_arch = "x86_64")]
            _ => match &self.panels {
                Some(p) => super::x86::block_f32_panels(scratch, cols, p, self.nq, norms, dots),
                None => super::x86::block_f32_avx512(scratch, cols, &self.f32, norms, dots),
            },
        }
    }
}

/// The portable block arithmetic on f32 rows (`cols > 0`); inlined into
/// the AVX2 wrapper so that it is compiled once more for that target.
#[inline(always)]
pub(super) fn block_f32(
    block: &[f32],
    cols: usize,
    queries: &[f32],
    mut norms: Option<&mut [f32]>,
    dots: &mut [f32],
) {
    let nq = queries.len() / cols;
    for (i, row) in block.chunks_exact(cols).enumerate() {
        if let Some(norms) = norms.as_deref_mut() {
            norms[i] = dot(row, row);
        }
        for (q, query) in queries.chunks_exact(cols).enumerate() {
            dots[i * nq + q] = dot(row, query);
        }
    }
}

/// A dot product in 16 independent f32 lanes, summed pairwise.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (a_chunks, a_tail) = a.as_chunks::<16>();
    let (b_chunks, b_tail) = b.as_chunks::<16>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for j in 0..16 {
            acc[j] += x[j] * y[j];
        }
    }
    for (j, (x, y)) in a_tail.iter().zip(b_tail).enumerate() {
        acc[j] += x * y;
    }
    let mut width = 8;
    while width > 0 {
        for j in 0..width {
            acc[j] += acc[j + width];
        }
        width /= 2;
    }
    acc[0]
}
