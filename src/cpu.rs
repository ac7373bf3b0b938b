//! Which CPU features the fast paths may use: detected once per process,
//! here and nowhere else, less those `EMBSCOPE_CPU_MASK=amx,avx512vnni,...`
//! hides, so that a benchmark (or a test) can run a machine as one without
//! them. The search kernels, `check`'s row pass and `undertrained`'s passes
//! all ask here, and take their prefetch from here ([`prefetch_ahead`]).
//! Under test, [`coverage`] records which kernels the tests ran and which
//! this CPU could not.

use std::sync::OnceLock;

/// The CPU features `EMBSCOPE_CPU_MASK` can hide.
const FEATURES: [&str; 5] = ["avx2", "avx512", "avx512bf16", "amx", "avx512vnni"];

/// True when `EMBSCOPE_CPU_MASK` hides `feature` (one of [`FEATURES`]).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn masked(feature: &str) -> bool {
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
fn mask() -> &'static Result<Vec<String>, String> {
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

/// What the fast paths may use on this CPU, after the mask. Each flag
/// holds the whole set of instructions its paths need, so hiding a
/// feature hides every path built on it: `avx512` hides the BF16, VNNI
/// and AMX paths, `avx512bf16` the VNNI and AMX ones (both use BF16 dot
/// products for their rows' tails or refinement).
#[derive(Clone, Copy, Debug, Default)]
struct Features {
    /// AVX2 with FMA.
    avx2: bool,
    /// F16C (the AVX2 kernel's F16 loads).
    f16c: bool,
    /// AVX-512F.
    avx512: bool,
    /// AVX-512F and BW.
    avx512bw: bool,
    /// AVX-512F, BW and BF16.
    avx512bf16: bool,
    /// AVX512-VNNI and VBMI, with AVX-512 BF16.
    avx512vnni: bool,
    /// AMX-TILE and AMX-BF16, with AVX-512 BF16.
    amx: bool,
}

/// The features, detected on first use.
fn features() -> Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    *FEATURES.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Features {
    use std::arch::is_x86_feature_detected as has;
    let on = |feature: &str, detected: bool| detected && !masked(feature);
    let avx512 = on("avx512", has!("avx512f"));
    let avx512bw = avx512 && has!("avx512bw");
    let avx512bf16 = on("avx512bf16", avx512bw && has!("avx512bf16"));
    // AMX-BF16 and AMX-TILE: CPUID leaf 7, EDX bits 22 and 24.
    let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
    let amx_cpu = leaf7.edx & (1 << 22) != 0 && leaf7.edx & (1 << 24) != 0;
    Features {
        avx2: on("avx2", has!("avx2") && has!("fma")),
        f16c: has!("f16c"),
        avx512,
        avx512bw,
        avx512bf16,
        avx512vnni: on(
            "avx512vnni",
            avx512bf16 && has!("avx512vnni") && has!("avx512vbmi"),
        ),
        amx: on("amx", avx512bf16 && amx_cpu),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Features {
    Features::default()
}

/// True when the AVX2 + FMA code paths may run.
pub(crate) fn has_avx2() -> bool {
    features().avx2
}

/// True when the CPU has F16C (no mask hides it: the AVX2 paths need it
/// only to read F16).
pub(crate) fn has_f16c() -> bool {
    features().f16c
}

/// True when the AVX-512F code paths may run.
pub(crate) fn has_avx512() -> bool {
    features().avx512
}

/// True when the AVX-512 BF16 code paths may run (AVX-512F, BW and
/// BF16).
pub(crate) fn has_avx512bf16() -> bool {
    features().avx512bf16
}

/// True when the AVX512-VNNI search kernel may run (VNNI for its int8
/// pass, VBMI for its byte shuffles, AVX-512 BF16 for its refinement).
pub(crate) fn has_avx512vnni() -> bool {
    features().avx512vnni
}

/// True when the CPU has AMX-TILE and AMX-BF16 and the mask leaves them
/// (the operating system must still grant the tile state: see the AMX
/// kernel).
pub(crate) fn has_amx() -> bool {
    features().amx
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
        if features().avx512bw {
            builds.push(RowBuild(Isa::Avx512));
        }
        if has_avx2() {
            builds.push(RowBuild(Isa::Avx2));
        }
        builds.push(RowBuild(Isa::Portable));
        builds
    }

    /// Its instructions.
    pub(crate) fn isa(self) -> Isa {
        self.0
    }

    /// [`RowBuild::all`], for a test that runs every build: each build of
    /// the three is recorded as covered or skipped (see [`coverage`]).
    #[cfg(test)]
    pub(crate) fn tested() -> Vec<RowBuild> {
        let all = RowBuild::all();
        for (name, isa) in [
            ("avx512", Isa::Avx512),
            ("avx2", Isa::Avx2),
            ("portable", Isa::Portable),
        ] {
            coverage::runs(name, all.iter().any(|b| b.isa() == isa));
        }
        all
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
/// With this hint one query on one Zen 4 core streams a BF16 matrix about
/// 1.5× as fast, the same at any distance from 32 to 512 KiB (64 KiB is
/// well inside every L2). Prefetching into L1 (`T0`) or only one tile
/// ahead gains nothing, and a burst of a whole row's lines at once (the
/// rows two ahead) is slower than no prefetch at all.
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

/// Which kernels the tests ran and which this CPU could not run, so that a
/// test needing a CPU feature cannot pass silently without it.
///
/// Every test that needs an instruction set asks [`coverage::runs`]
/// before it runs a kernel or a row-loop build of it. The answer is
/// recorded; a skip prints a line, and fails the test when
/// `EMBSCOPE_REQUIRE_KERNELS=amx,avx512bf16,...` names that kernel (a CI
/// machine that must run them says so). The search's coverage test prints
/// the one line of the run (`kernels covered: ...; not on this CPU: ...`).
#[cfg(test)]
pub(crate) mod coverage {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// The names a test records, by instruction set, as `EMBSCOPE_KERNEL`
    /// and `EMBSCOPE_REQUIRE_KERNELS` spell them.
    pub(crate) const KERNELS: [&str; 6] = [
        "portable",
        "avx2",
        "avx512",
        "avx512bf16",
        "avx512vnni",
        "amx",
    ];

    /// Per kernel: whether some test ran it (else every test skipped it).
    static RAN: Mutex<BTreeMap<&'static str, bool>> = Mutex::new(BTreeMap::new());

    /// Records whether this CPU `runs` `kernel` (one of [`KERNELS`]) for the
    /// calling test, and returns it. A skip fails the test when
    /// `EMBSCOPE_REQUIRE_KERNELS` names the kernel.
    pub(crate) fn runs(kernel: &'static str, runs: bool) -> bool {
        assert!(KERNELS.contains(&kernel), "`{kernel}` is not a kernel");
        *RAN.lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kernel)
            .or_default() |= runs;
        if !runs {
            assert!(
                !required().contains(&kernel),
                "EMBSCOPE_REQUIRE_KERNELS names {kernel}, which this CPU does not run \
                 (or EMBSCOPE_CPU_MASK hides): a test of it would be skipped"
            );
            eprintln!("skipped: {kernel} is not on this CPU");
        }
        runs
    }

    /// The kernels `EMBSCOPE_REQUIRE_KERNELS` names (comma-separated);
    /// panics on a name that is not a kernel.
    pub(crate) fn required() -> Vec<&'static str> {
        let value = std::env::var("EMBSCOPE_REQUIRE_KERNELS").unwrap_or_default();
        value
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(|name| {
                KERNELS.into_iter().find(|k| *k == name).unwrap_or_else(|| {
                    panic!(
                        "EMBSCOPE_REQUIRE_KERNELS={value}: `{name}` is not a kernel \
                             (kernels: {})",
                        KERNELS.join(", ")
                    )
                })
            })
            .collect()
    }

    /// What the tests of this process recorded so far:
    /// `kernels covered: ...; not on this CPU: ...` (`none` for an empty
    /// side), in the order of [`KERNELS`].
    pub(crate) fn line() -> String {
        let ran = RAN.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let side = |want: bool| {
            let names: Vec<&str> = KERNELS
                .into_iter()
                .filter(|k| ran.get(k) == Some(&want))
                .collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        format!(
            "kernels covered: {}; not on this CPU: {}",
            side(true),
            side(false)
        )
    }
}
