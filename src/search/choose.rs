//! Which kernel a search runs, and why: forced by `EMBSCOPE_KERNEL`, or
//! measured on the matrix itself.
//!
//! Without `EMBSCOPE_KERNEL`, the contenders are the BF16 kernels the CPU
//! has (for a BF16 matrix: AMX, AVX-512 BF16 and the AVX512-VNNI int8
//! kernel), its widest f32 kernel, and the AVX2 one where it reads the
//! rows in place (BF16, F16, F32). On a matrix of at least
//! [`TRIAL_MIN_BYTES`], the scan begins with a trial ([`Trial`]): each
//! thread, where its share of the scan starts, lets the contenders take
//! turns on the scan's own blocks, and the one with the lowest median
//! time per byte scans the rest. So each is timed on what the scan pays,
//! on rows streamed from memory with all cores busy: page faults, TLB
//! misses, the shortlist offers, the int8 kernel's refinement. The
//! trial's blocks are part of the scan (any kernel's shortlist is exact
//! after re-scoring), so it costs only what the slower contenders take
//! over the winner on a few blocks, and no thread waits for another.
//!
//! (Until 2026-11-26 a separate probe timed each kernel's arithmetic on
//! 2% of the rows before the scan and kept its fastest run. On a Zen 4 at
//! 16 queries it put `avx512vnni` and `avx512bf16` 1% apart where their
//! scans are 10–17% apart, and picked the slower one a third of the
//! time.) Results do not depend on the choice: the search re-scores its
//! shortlist exactly.
//!
//! `EMBSCOPE_CPU_MASK=amx,avx512bf16,avx512vnni,...` hides CPU features from
//! detection (hiding `avx512` hides the BF16, AMX and VNNI kernels too, as
//! they need it, and hiding `avx512bf16` the VNNI kernel, which refines with
//! it), so a benchmark can time a machine without them.

use serde::Serialize;

use super::kernel::{Kernel, Queries};
use crate::matrix::Matrix;
use crate::{Error, Result};

/// Matrices smaller than this are not worth measuring: the widest
/// contender runs.
const TRIAL_MIN_BYTES: usize = 32 << 20;

/// The kernel a search ran, and why it was chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelChoice {
    /// As `EMBSCOPE_KERNEL` spells it: `portable`, `avx2`, `avx512`,
    /// `avx512bf16`, `amx` or `avx512vnni`.
    pub name: &'static str,
    /// Why: forced, the only contender, or the measured speeds.
    pub reason: String,
}

/// The kernel `EMBSCOPE_KERNEL` names, if set and not empty; an error if it
/// names no kernel, or one not in `available`.
fn forced(available: &[Kernel], what: &str) -> Result<Option<Kernel>> {
    let Some(name) = std::env::var_os("EMBSCOPE_KERNEL") else {
        return Ok(None);
    };
    let name = name.to_string_lossy();
    if name.is_empty() {
        return Ok(None);
    }
    if let Some(k) = available.iter().find(|k| k.name() == name) {
        return Ok(Some(*k));
    }
    let list: Vec<&str> = available.iter().map(|k| k.name()).collect();
    let list = list.join(", ");
    Err(Error::BadInput(if Kernel::NAMES.contains(&&*name) {
        format!(
            "EMBSCOPE_KERNEL={name} is not available on this CPU for {what} (available: {list})"
        )
    } else {
        format!("EMBSCOPE_KERNEL={name} is not a kernel (available on this CPU for {what}: {list})")
    }))
}

/// Every kernel this CPU runs for `m`, after `EMBSCOPE_CPU_MASK`; an error
/// if the mask names an unknown feature.
pub(super) fn available(m: &Matrix) -> Result<Vec<Kernel>> {
    crate::cpu::mask_ok()?;
    Ok(Kernel::available(m.dtype()))
}

/// How the scan runs: one kernel throughout, or a trial of several.
pub(super) struct Plan {
    /// The queries laid out for each contender.
    pub(super) contenders: Vec<Queries>,
    /// The kernel and why, when one was settled on (the only contender);
    /// otherwise the scan's first blocks time each contender, and the
    /// fastest scans the rest (see [`Trial`]).
    pub(super) settled: Option<KernelChoice>,
}

impl Plan {
    /// `queries` scan the whole matrix, for `reason`.
    pub(super) fn settled(queries: Queries, reason: String) -> Self {
        let name = queries.kernel().name();
        Plan {
            contenders: vec![queries],
            settled: Some(KernelChoice { name, reason }),
        }
    }
}

/// How the scan for the top `k` of `queries` on `m` picks its kernel (see
/// the module docs), with the queries laid out for each contender.
pub(super) fn plan(m: &Matrix, queries: &[Vec<f32>], k: usize) -> Result<Plan> {
    let dtype = m.dtype();
    let available = available(m)?;
    let prepare = |k: Kernel| Queries::new(k, dtype, queries);
    let cols = m.cols();
    // Names the kernel that will run: a kernel whose layout does not fit
    // the columns lays the queries out for AVX-512 BF16 instead.
    let settle = |asked: Kernel, mut reason: String| {
        let q = prepare(asked);
        let ran = q.kernel();
        if ran != asked {
            reason.push_str(&format!(
                "; {} does not fit {cols} columns, so {} runs",
                asked.name(),
                ran.name()
            ));
        }
        Plan::settled(q, reason)
    };
    if let Some(k) = forced(&available, &dtype.to_string())? {
        return Ok(settle(k, "forced by EMBSCOPE_KERNEL".into()));
    }
    // Slowest first: the BF16 kernels come last, the widest f32 one before,
    // and the AVX2 one before that when it reads the rows in place (with
    // one query it can beat them all: it does the least work per byte).
    let widest_f32 = available.iter().rev().find(|k| !k.reads_bf16()).copied();
    let mut contenders: Vec<Kernel> = available
        .iter()
        .copied()
        .filter(|k| k.reads_bf16() || Some(*k) == widest_f32 || k.reads_in_place(dtype))
        .rev()
        .collect();
    if contenders.is_empty() {
        contenders.push(Kernel::Portable);
    }
    let first = contenders[0];
    let widest = |why: &str| format!("the widest path this CPU has for {dtype}{why}");
    if contenders.len() == 1 {
        return Ok(settle(first, widest("")));
    }
    if queries.is_empty() || k == 0 {
        return Ok(settle(first, widest(" (nothing to scan)")));
    }
    let bytes = m.bytes().len();
    if bytes < TRIAL_MIN_BYTES {
        let why = format!(
            " (the matrix, {} MiB, is too small to measure)",
            bytes >> 20
        );
        return Ok(settle(first, widest(&why)));
    }
    // A kernel whose layout does not fit the columns runs another one's:
    // each kernel that runs is tried once.
    let mut prepared: Vec<Queries> = Vec::new();
    for k in contenders {
        let q = prepare(k);
        if prepared.iter().all(|p| p.kernel() != q.kernel()) {
            prepared.push(q);
        }
    }
    if prepared.len() == 1 {
        let q = prepared.pop().expect("one contender");
        return Ok(Plan::settled(q, widest("")));
    }
    Ok(Plan {
        contenders: prepared,
        settled: None,
    })
}
