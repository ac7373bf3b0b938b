//! Which CPU features the fast paths may use: detected at run time, less
//! those `EMBSCOPE_CPU_MASK=amx,avx512vnni,...` hides, so that a benchmark
//! (or a test) can run a machine as one without them. The search kernels,
//! `check`'s row pass and `undertrained`'s passes all ask here, and take
//! their prefetch from here ([`prefetch_ahead`]).

use std::sync::OnceLock;

/// The CPU features `EMBSCOPE_CPU_MASK` can hide.
const FEATURES: [&str; 5] = ["avx2", "avx512", "avx512bf16", "amx", "avx512vnni"];

/// True when `EMBSCOPE_CPU_MASK` hides `feature` (one of [`FEATURES`]).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn masked(feature: &str) -> bool {
    mask()
        .as_ref()
        .is_ok_and(|m| m.iter().any(|f| f == feature))
}

/// `Ok` unless `EMBSCOPE_CPU_MASK` names a feature it cannot hide: then
/// the error for the user (the commands whose arithmetic it changes,
/// `neighbors`, `check` and `undertrained`, stop on it rather than run
/// unmasked).
pub(crate) fn mask_ok() -> crate::Result<()> {
    match mask() {
        Ok(_) => Ok(()),
        Err(e) => Err(crate::Error::BadInput(e.clone())),
    }
}

/// `EMBSCOPE_CPU_MASK`, parsed once per process.
pub(crate) fn mask() -> &'static Result<Vec<String>, String> {
    static MASK: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    MASK.get_or_init(|| {
        let Some(value) = std::env::var_os("EMBSCOPE_CPU_MASK") else {
            return Ok(Vec::new());
        };
        let value = value.to_string_lossy();
        let mut hidden = Vec::new();
        for f in value.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            if !FEATURES.contains(&f) {
                return Err(format!(
                    "EMBSCOPE_CPU_MASK={value}: `{f}` is not a feature it can hide (features: {})",
                    FEATURES.join(", ")
                ));
            }
            hidden.push(f.to_string());
        }
        Ok(hidden)
    })
}

/// True when the AVX-512F code paths may run (the CPU has AVX-512F and the
/// mask does not hide `avx512`).
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    return !masked("avx512") && is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// True when the AVX-512 BF16 code paths may run (the CPU has AVX-512F,
/// BW and BF16, and the mask hides neither `avx512` nor `avx512bf16`).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512bf16() -> bool {
    !masked("avx512bf16")
        && has_avx512()
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512bf16")
}

/// The build of `check`'s and `undertrained`'s row loops (see
/// `cmd::undertrained::kernel`) that runs on this CPU: AVX-512, AVX2 or
/// portable. The AVX-512 and AVX2 builds both fuse multiply-adds, and the
/// loops fix the order of every addition, so these two give the same sums
/// bit for bit; the portable build fuses them only where the target always
/// can ([`PORTABLE_FUSES`]), and its sums may otherwise differ in the last
/// bits. Made only by [`RowBuild::detect`] and
/// [`RowBuild::all`], so a build runs only where its instructions are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowBuild(Isa);

/// Whether the portable build of the row loops fuses multiply-adds: where
/// the target always has the instruction (AArch64's base floating point
/// does; an x86-64 build for CPUs with FMA does), so `mul_add` is one
/// instruction, not a slow library call. Its sums are then those of the
/// AVX-512 and AVX2 builds, bit for bit.
pub(crate) const PORTABLE_FUSES: bool = cfg!(any(target_arch = "aarch64", target_feature = "fma"));

/// The instructions of a [`RowBuild`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Isa {
    /// AVX-512F and BW, with FMA.
    Avx512,
    /// AVX2 with FMA.
    Avx2,
    /// What the target has without run-time detection (SSE2 on x86-64).
    Portable,
}

impl RowBuild {
    /// The widest build this CPU runs (less what `EMBSCOPE_CPU_MASK`
    /// hides), found once per process.
    pub(crate) fn detect() -> RowBuild {
        static WIDEST: OnceLock<RowBuild> = OnceLock::new();
        *WIDEST.get_or_init(|| RowBuild::all()[0])
    }

    /// Every build this CPU runs, widest first (the portable one last).
    pub(crate) fn all() -> Vec<RowBuild> {
        let mut builds = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx512() && is_x86_feature_detected!("avx512bw") {
                builds.push(RowBuild(Isa::Avx512));
            }
            if !masked("avx2")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
            {
                builds.push(RowBuild(Isa::Avx2));
            }
        }
        builds.push(RowBuild(Isa::Portable));
        builds
    }

    /// Its instructions.
    pub(crate) fn isa(self) -> Isa {
        self.0
    }

    /// Whether it fuses multiply-adds.
    #[cfg(test)]
    pub(crate) fn fused(self) -> bool {
        self.0 != Isa::Portable || PORTABLE_FUSES
    }
}

/// How far past the bytes a row loop is reading it asks for them to be
/// brought into L2 (see [`prefetch_ahead`]).
const PREFETCH_AHEAD: usize = 64 << 10;

/// Asks for the cache line [`PREFETCH_AHEAD`] bytes past `p` to be brought
/// into L2 (a no-op off x86-64). The loops that stream a matrix's rows (the
/// search tiles; `check`'s and `undertrained`'s row loops when they take
/// dot products, see `undertrained::kernel::dots`) call it once per 64
/// bytes of each row they read, so that the lines a worker reads next
/// stream in ahead of it, spread over its steps.
///
/// The hardware prefetchers alone do not keep up with a tile's rows:
/// several streams 8 KiB apart, each crossing a 4 KiB page every few steps.
/// Measured on an AMD EPYC (Zen 4, 2 cores), one query on one core over a
/// 128 MiB BF16 matrix: 8.2 ms without, 5.4–5.8 ms with, at any distance
/// from 32 to 512 KiB (64 KiB is well inside every L2), against 4.1 ms for
/// a plain read. Prefetching into L1 instead (`T0`), or only one tile
/// ahead, gained nothing; a burst of a whole row's lines at once (the rows
/// two ahead) made `check` 20% slower than no prefetch at all.
#[inline(always)]
pub(crate) fn prefetch_ahead(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        // SAFETY: every x86-64 CPU has SSE; prefetching is a hint, any
        // address is allowed (the pointer is never read through).
        unsafe { _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(PREFETCH_AHEAD).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
