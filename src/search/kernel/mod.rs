//! The search's kernels: the arithmetic of one block, row norms and every
//! query's dot product with every row, on one of the instruction sets the
//! CPU offers. `choose` picks the kernel once per search; [`Queries`]
//! holds the queries in the form that kernel reads (f32, or hi + lo BF16
//! halves) and dispatches each block to it.
//!
//! | file | kernel (`EMBSCOPE_KERNEL`) |
//! |---|---|
//! | `portable.rs` | `portable`: plain Rust, every CPU; the reference |
//! | `avx2.rs` | `avx2`: AVX2 + FMA tiles on stored BF16, F16, F32, `Q8_0` rows |
//! | `avx512.rs` | `avx512`: AVX-512F tiles on stored rows, panels for many queries |
//! | `avx512bf16.rs` | `avx512bf16`: BF16 dot products on stored BF16 rows |
//! | `avx512vnni.rs`, `avx512vnni/` | `avx512vnni`: an int8 first pass, refined with BF16 |
//! | `amx.rs` | `amx`: AMX BF16 tile products (Linux) |
//! | `stored.rs` | how the `avx2` and `avx512` tiles read stored rows in place |
//!
//! Which CPU runs which is asked of `crate::cpu`, the one place that
//! detects features.

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod amx;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod avx512bf16;
#[cfg(target_arch = "x86_64")]
mod avx512vnni;
mod portable;
#[cfg(target_arch = "x86_64")]
mod stored;

use std::ops::Range;

use super::shortlist::KernelBounds;
#[cfg(target_arch = "x86_64")]
use super::shortlist::{Scorer, Shortlist};
#[cfg(target_arch = "x86_64")]
use crate::cpu;
#[cfg(target_arch = "x86_64")]
pub(super) use avx512vnni::Floors;

use crate::dtype::Dtype;
use crate::matrix::Matrix;

/// An implementation of the block arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Plain Rust, auto-vectorised for the compile target.
    Portable,
    /// AVX2 + FMA tiles on the stored bytes of BF16, F16, F32 and `Q8_0`
    /// rows (with F16C, see `avx2`); other dtypes are converted to f32
    /// first.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512F FMA: tiles of up to 4 queries on the stored bytes of BF16,
    /// F16 and F32 rows (widened in registers), or, from
    /// [`PANEL_QUERIES`] queries on, 16 queries per vector on blocks
    /// converted to f32.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX-512 BF16 dot products on the stored bytes (BF16 matrices only).
    #[cfg(target_arch = "x86_64")]
    Avx512Bf16,
    /// AMX BF16 tile products on the stored bytes (BF16 matrices whose
    /// columns are a multiple of 32; other rows use AVX-512 BF16).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    Amx,
    /// An AVX512-VNNI int8 first pass on each block, quantized once for
    /// all queries, refined with AVX-512 BF16 where its bound reaches the
    /// top k (BF16 matrices only; see `avx512vnni`).
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
}

impl Kernel {
    /// Every kernel's name, as `EMBSCOPE_KERNEL` spells it, on any CPU.
    pub(super) const NAMES: [&'static str; 6] = [
        "portable",
        "avx2",
        "avx512",
        "avx512bf16",
        "amx",
        "avx512vnni",
    ];

    /// The kernel's name, as `EMBSCOPE_KERNEL` spells it.
    pub(super) fn name(self) -> &'static str {
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
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => "avx512vnni",
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

    /// True for the kernels that read BF16 bytes with queries split into
    /// BF16 halves (see `Halves`; the VNNI kernel's refinement does).
    pub(super) fn reads_bf16(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return self == Kernel::Avx512Bf16 || self == Kernel::Avx512Vnni || self.is_amx();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// True for the kernel whose cost falls as the shortlists' thresholds
    /// rise: the VNNI kernel's int8 pass only filters, and it re-scores
    /// every row and query that reach the threshold (many on a scan's
    /// first blocks).
    pub(super) fn filters(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return self == Kernel::Avx512Vnni;
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// The terms of the kernel's error bound on `cols` columns (see
    /// `shortlist`).
    pub(super) fn bounds(self, cols: usize) -> KernelBounds {
        KernelBounds {
            depth: self.depth(cols),
            halves: self.reads_bf16(),
        }
    }

    /// An upper bound on the number of successive f32 roundings any one
    /// product goes through on its way into a dot product or squared norm
    /// of `cols` columns (see [`KernelBounds::depth`]).
    pub(super) fn depth(self, cols: usize) -> usize {
        // Lanes of 16 summed in column order, then a 4-level tree; the
        // portable code rounds each product too (+1) and adds the tail into
        // the lanes (+1).
        let lanes = cols.div_ceil(16) + 6;
        match self {
            Kernel::Portable => lanes,
            // BF16, F16 and F32 rows read in place (see `avx2`), other dtypes
            // converted first and summed as the portable code does.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => lanes.max(avx2::Layout::depth(cols)),
            // Dot-style tiles (as `lanes`), or panels: KC columns in order
            // per slice, then the slices' sums in order.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => lanes.max(avx512::KC + cols.div_ceil(avx512::KC) + 1),
            // Per 32-column chunk a lane adds 2 products of `hi` and 2 of
            // `lo`; then the 4-level tree.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Bf16 => 4 * cols.div_ceil(32) + 4,
            // Its refinement: the same per chunk, in 4 accumulators summed
            // in 2 levels (`4 ceil(n / 4) + 6` over n chunks); its row norms
            // are summed at depth `cols / 64 + 6`, less.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => 4 * cols.div_ceil(32) + 8,
            // A tile product adds its 32 columns' products in turn, for `hi`
            // then `lo`; the rows past the last tile pair take AVX-512 BF16.
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            Kernel::Amx => 2 * cols + 4 * cols.div_ceil(32) + 8,
        }
    }

    /// [`Kernel::available`], for a test that runs every kernel it gets:
    /// each kernel that reads `dtype` is recorded as covered or skipped
    /// (see `cpu::coverage`); one this build lacks (another architecture)
    /// as skipped.
    #[cfg(test)]
    pub(super) fn tested(dtype: Dtype) -> Vec<Kernel> {
        let available = Kernel::available(dtype);
        let mut built = Kernel::available_to_build();
        built.retain(|k| dtype == Dtype::BF16 || !k.reads_bf16());
        for name in crate::cpu::coverage::KERNELS {
            let kernel = built.iter().find(|k| k.name() == name);
            let bf16_only = matches!(name, "avx512bf16" | "avx512vnni" | "amx");
            if kernel.is_some() || dtype == Dtype::BF16 || !bf16_only {
                crate::cpu::coverage::runs(name, kernel.is_some_and(|k| available.contains(k)));
            }
        }
        available
    }

    /// Every kernel of this build, whatever the CPU.
    #[cfg(test)]
    fn available_to_build() -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        all.extend([
            Kernel::Avx2,
            Kernel::Avx512,
            Kernel::Avx512Vnni,
            Kernel::Avx512Bf16,
        ]);
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        all.push(Kernel::Amx);
        all
    }

    /// Every kernel this CPU runs for `dtype`, in the order
    /// `EMBSCOPE_KERNEL`'s errors list them.
    pub(super) fn available(dtype: Dtype) -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if cpu::has_avx2() && cpu::has_f16c() {
                all.push(Kernel::Avx2);
            }
            if cpu::has_avx512() {
                all.push(Kernel::Avx512);
            }
            // Before AVX-512 BF16: with one query it is slower (it quantizes
            // every row), and a matrix too small to measure takes the last.
            if dtype == Dtype::BF16 && cpu::has_avx512vnni() {
                all.push(Kernel::Avx512Vnni);
            }
            if dtype == Dtype::BF16 && cpu::has_avx512bf16() {
                all.push(Kernel::Avx512Bf16);
            }
            #[cfg(target_os = "linux")]
            if dtype == Dtype::BF16 && amx::available() {
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
    halves: Option<avx512bf16::Halves>,
    /// The queries transposed for the many-query AVX-512 kernel.
    #[cfg(target_arch = "x86_64")]
    panels: Option<avx512::Transposed>,
    /// The queries packed as AMX tiles.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    tiles: Option<amx::Packed>,
    /// The queries quantized for the VNNI kernel.
    #[cfg(target_arch = "x86_64")]
    vnni: Option<avx512vnni::Prepared>,
    /// The queries laid out for the AVX2 kernel.
    #[cfg(target_arch = "x86_64")]
    avx2: Option<Avx2Rows>,
    /// The number of queries.
    nq: usize,
}

/// How the AVX2 kernel reads a block's rows, with the queries laid out
/// for it.
#[cfg(target_arch = "x86_64")]
enum Avx2Rows {
    /// In place: BF16, F16, F32 and `Q8_0` rows.
    InPlace(avx2::Layout),
    /// Converted to f32 first (the K-quants ...), then read as F32 rows.
    Converted(avx2::Layout),
}

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
                Kernel::Amx if !cols.is_multiple_of(amx::STEP) => Kernel::Avx512Bf16,
                k => k,
            };
            let kernel = match kernel {
                Kernel::Avx512Vnni if cols == 0 || !avx512vnni::fits(cols) => Kernel::Avx512Bf16,
                k => k,
            };
            let bf16_bytes = kernel.reads_bf16();
            assert!(
                !bf16_bytes || dtype == Dtype::BF16,
                "the BF16 kernels read BF16 bytes"
            );
            let vnni =
                (kernel == Kernel::Avx512Vnni).then(|| avx512vnni::Prepared::new(&flat, cols));
            let halves =
                (bf16_bytes && vnni.is_none()).then(|| avx512bf16::Halves::new(&flat, cols));
            let panels = (kernel == Kernel::Avx512 && nq >= PANEL_QUERIES)
                .then(|| avx512::Transposed::new(&flat, cols));
            let avx2 =
                (kernel == Kernel::Avx2).then(|| match avx2::Layout::new(&flat, cols, dtype) {
                    Some(layout) => Avx2Rows::InPlace(layout),
                    None => Avx2Rows::Converted(
                        avx2::Layout::new(&flat, cols, Dtype::F32).expect("F32 rows read in place"),
                    ),
                });
            Queries {
                kernel,
                #[cfg(target_os = "linux")]
                tiles: halves
                    .as_ref()
                    .filter(|_| kernel.is_amx())
                    .map(|h| amx::Packed::new(h, cols)),
                f32: if bf16_bytes { Vec::new() } else { flat },
                halves,
                panels,
                vnni,
                avx2,
                nq,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = dtype;
            Queries {
                kernel,
                f32: flat,
                nq: queries.len(),
            }
        }
    }

    /// The kernel these queries are laid out for.
    pub(super) fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Scans rows `rows` of `m` with the VNNI kernel's int8 filter and
    /// refinement, which offers the rows to `lists` itself (see
    /// `avx512vnni`); false, doing nothing, when these queries are laid out
    /// for another kernel (whose scores the caller offers).
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_filtered(
        &self,
        m: &Matrix,
        rows: Range<usize>,
        scratch: &mut Scratch,
        scorer: &Scorer,
        mask: Option<&[bool]>,
        lists: &mut [Shortlist],
        floors: &Floors,
    ) -> bool {
        let Some(v) = &self.vnni else {
            return false;
        };
        v.scan_block(m, rows, &mut scratch.vnni, scorer, mask, lists, floors);
        true
    }

    /// The number of queries.
    pub(super) fn len(&self) -> usize {
        self.nq
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
    /// `norms[i]` (when given) with the row's squared norm. `scratch` holds
    /// reusable buffers. (The VNNI kernel gives its int8 approximations
    /// here; its scan refines them, see `avx512vnni`.)
    pub(super) fn score_block(
        &self,
        m: &Matrix,
        rows: Range<usize>,
        scratch: &mut Scratch,
        norms: Option<&mut [f32]>,
        dots: &mut [f32],
    ) {
        let cols = m.cols();
        #[cfg(target_arch = "x86_64")]
        if let Some(v) = &self.vnni {
            return v.approximate(m, rows, &mut scratch.vnni, norms, dots);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(Avx2Rows::InPlace(layout)) = &self.avx2 {
            return avx2::block(m.block_bytes(rows), layout, norms, dots);
        }
        #[cfg(target_arch = "x86_64")]
        if self.kernel == Kernel::Avx512 && self.panels.is_none() {
            // The dot-style tiles read BF16, F16 and F32 rows in place, and
            // decode `Q8_0` blocks in registers (see `stored::quant_kind`).
            let dtype = m.dtype();
            if let Some(kind) = stored::kind(dtype).or_else(|| stored::quant_kind(dtype)) {
                let bytes = m.block_bytes(rows);
                return avx512::block_avx512(bytes, kind, cols, &self.f32, norms, dots);
            }
        }
        let scratch = &mut scratch.f32;
        #[cfg(target_arch = "x86_64")]
        if let Some(halves) = &self.halves {
            let bytes = m.block_bytes(rows);
            #[cfg(target_os = "linux")]
            if let Some(tiles) = &self.tiles {
                let mut norms = norms;
                let done = amx::block(bytes, cols, tiles, norms.as_deref_mut(), dots);
                let rest = &bytes[done * cols * 2..];
                let rest_norms = norms.map(|n| &mut n[done..]);
                let rest_dots = &mut dots[done * self.nq..];
                return avx512bf16::block_bf16(rest, cols, halves, rest_norms, rest_dots);
            }
            return avx512bf16::block_bf16(bytes, cols, halves, norms, dots);
        }
        scratch.resize(rows.len() * cols, 0.0);
        #[cfg(target_arch = "x86_64")]
        match (self.kernel, m.dtype()) {
            // The same values as `block_into`, converted 16 at a time.
            (Kernel::Avx512, Dtype::BF16) => avx512::bf16_to_f32(m.block_bytes(rows), scratch),
            (Kernel::Avx512, Dtype::F16) => avx512::f16_to_f32(m.block_bytes(rows), scratch),
            _ => m.block_into(rows, scratch),
        }
        #[cfg(not(target_arch = "x86_64"))]
        m.block_into(rows, scratch);
        match self.kernel {
            Kernel::Portable => portable::block(scratch, cols, &self.f32, norms, dots),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => match &self.avx2 {
                Some(Avx2Rows::Converted(layout)) => {
                    avx2::block(stored::f32_bytes(scratch), layout, norms, dots)
                }
                _ => unreachable!("the AVX2 kernel reads converted rows as F32"),
            },
            #[cfg(target_arch = "x86_64")]
            _ => match &self.panels {
                Some(p) => avx512::block_f32_panels(scratch, cols, p, self.nq, norms, dots),
                None => avx512::block_f32_avx512(scratch, cols, &self.f32, norms, dots),
            },
        }
    }
}

/// A worker's reusable buffers for [`Queries::score_block`].
#[derive(Default)]
pub(super) struct Scratch {
    /// Rows converted to f32.
    f32: Vec<f32>,
    /// The VNNI kernel's buffers.
    #[cfg(target_arch = "x86_64")]
    vnni: avx512vnni::Scratch,
}

#[cfg(test)]
mod tests;
