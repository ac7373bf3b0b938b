//! Which CPU features the fast paths may use: detected at run time, less
//! those `EMBSCOPE_CPU_MASK=amx,avx512vnni,...` hides, so that a benchmark
//! (or a test) can run a machine as one without them. The search kernels,
//! `check`'s row pass and `undertrained`'s passes all ask here.

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
