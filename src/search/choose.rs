//! Which kernel a search runs, and why: forced by `EMBSCOPE_KERNEL`,
//! settled by the CPU, the matrix's dtype and the number of queries, or
//! timed on the matrix itself where those leave two kernels that can win.
//!
//! Every kernel stays because a measured class of CPU, dtype and query
//! count has it ahead of the best of the others by 10% or more (the table
//! and its method: `docs/kernels.md`). The same table settles most
//! searches without a trial ([`contenders`]):
//!
//! | matrix | queries | kernel (the first this CPU has) |
//! |---|---|---|
//! | BF16 | any | `amx` |
//! | BF16 | fewer than [`SOME`] | `avx512bf16`, `avx2`, `avx512` |
//! | BF16 | [`SOME`] to [`MANY`] | a trial of `avx512vnni` and `avx512bf16`; else `avx512bf16`, `avx2`, `avx512` |
//! | BF16 | more than [`MANY`] | `avx512vnni`, `avx512bf16`, `avx512`, `avx2` |
//! | F16 | [`SOME`] to [`MANY`] | `avx2`, `avx512` |
//! | any other | any | `avx512`, `avx2` |
//!
//! and `portable` where none of these runs. The one trial left is where
//! the winner changes with the CPU: between `avx512vnni` and `avx512bf16`
//! from [`SOME`] to [`MANY`] queries (on a Zen 4 they are within 10% of each
//! other at 16 queries; on a Xeon with AMX, the int8 kernel is twice as fast
//! at 64). There the scan begins with a trial (see `trial`) on a matrix of at
//! least [`TRIAL_MIN_BYTES`]; a smaller one takes the first contender.
//! Results do not depend on the choice: the search re-scores its shortlist
//! exactly.
//!
//! `EMBSCOPE_CPU_MASK=amx,avx512bf16,avx512vnni,...` hides CPU features from
//! detection (hiding `avx512` hides the BF16, AMX and VNNI kernels too, as
//! they need it, and hiding `avx512bf16` the VNNI and AMX kernels, which
//! use it), so a benchmark can time a machine without them.

use serde::Serialize;

use super::kernel::{Kernel, Queries};
use crate::dtype::Dtype;
use crate::matrix::Matrix;
use crate::{Error, Result};

/// Matrices smaller than this are not worth measuring: the first
/// contender runs.
const TRIAL_MIN_BYTES: usize = 32 << 20;

/// From this many queries on, the kernel that wins depends on the CPU
/// (see the module docs).
const SOME: usize = 8;

/// Beyond this many queries, the kernel that wins is the same on every
/// CPU measured.
const MANY: usize = 32;

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
    Err(if Kernel::NAMES.contains(&&*name) {
        Error::UnavailableKernel {
            name: name.into_owned(),
            what: what.to_string(),
            available: list,
        }
    } else {
        Error::BadInput(format!(
            "EMBSCOPE_KERNEL={name} is not a kernel (available on this CPU for {what}: {list})"
        ))
    })
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
    let nq = queries.len();
    let contenders = contenders(&available, dtype, nq);
    let first = contenders[0];
    if contenders.len() == 1 {
        let why = if available.len() == 1 {
            format!("the widest path this CPU has for {dtype}")
        } else {
            format!("the fastest path this CPU has for {dtype} at {}", count(nq))
        };
        return Ok(settle(first, why));
    }
    let names: Vec<&str> = contenders.iter().map(|k| k.name()).collect();
    let first_of = |why: &str| {
        format!(
            "the first of the contenders for {dtype} at {} ({}){why}",
            count(nq),
            names.join(", ")
        )
    };
    if nq == 0 || k == 0 {
        return Ok(settle(first, first_of(" (nothing to scan)")));
    }
    let bytes = m.bytes().len();
    if bytes < TRIAL_MIN_BYTES {
        let why = format!(
            " (the matrix, {} MiB, is too small to measure)",
            bytes >> 20
        );
        return Ok(settle(first, first_of(&why)));
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
        return Ok(Plan::settled(q, first_of("")));
    }
    Ok(Plan {
        contenders: prepared,
        settled: None,
    })
}

/// The kernels that can win a scan of `nq` queries over a matrix of
/// `dtype` on this CPU (`available`), in the order of the module docs'
/// table: one settles the choice, two are timed in a trial.
fn contenders(available: &[Kernel], dtype: Dtype, nq: usize) -> Vec<Kernel> {
    let has = |k: &Kernel| available.contains(k);
    let first = |order: &[Kernel]| -> Vec<Kernel> {
        let k = order.iter().find(|k| has(k)).copied();
        vec![k.unwrap_or(Kernel::Portable)]
    };
    #[cfg(target_arch = "x86_64")]
    {
        use Kernel::*;
        let both = |a: Kernel, b: Kernel| (has(&a) && has(&b)).then(|| vec![a, b]);
        let some = (SOME..=MANY).contains(&nq);
        match dtype {
            Dtype::BF16 => {
                #[cfg(target_os = "linux")]
                if has(&Amx) {
                    return vec![Amx];
                }
                if nq < SOME {
                    first(&[Avx512Bf16, Avx2, Avx512])
                } else if some {
                    both(Avx512Vnni, Avx512Bf16)
                        .unwrap_or_else(|| first(&[Avx512Bf16, Avx2, Avx512]))
                } else {
                    first(&[Avx512Vnni, Avx512Bf16, Avx512, Avx2])
                }
            }
            Dtype::F16 if some => first(&[Avx2, Avx512]),
            _ => first(&[Avx512, Avx2]),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (dtype, nq);
        first(&[Kernel::Portable])
    }
}

/// `1 query`, `n queries`.
fn count(nq: usize) -> String {
    format!("{nq} quer{}", if nq == 1 { "y" } else { "ies" })
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn the_table_settles_all_but_the_middle_query_counts() {
        use Dtype::{BF16, F16, F32, Q8_0};
        use Kernel::*;
        let zen4 = [Portable, Avx2, Avx512, Avx512Vnni, Avx512Bf16];
        let no_vbmi = [Portable, Avx2, Avx512, Avx512Bf16];
        let no_bf16 = [Portable, Avx2, Avx512];
        let avx2 = [Portable, Avx2];
        let cases: [(&[Kernel], Dtype, usize, &[Kernel]); 14] = [
            (&zen4, BF16, 1, &[Avx512Bf16]),
            (&zen4, BF16, 7, &[Avx512Bf16]),
            (&zen4, BF16, 8, &[Avx512Vnni, Avx512Bf16]),
            (&zen4, BF16, 32, &[Avx512Vnni, Avx512Bf16]),
            (&zen4, BF16, 64, &[Avx512Vnni]),
            (&zen4, F32, 16, &[Avx512]),
            (&no_vbmi, BF16, 16, &[Avx512Bf16]),
            (&no_bf16, BF16, 4, &[Avx2]),
            (&no_bf16, BF16, 16, &[Avx2]),
            (&no_bf16, F16, 16, &[Avx2]),
            (&no_bf16, F16, 64, &[Avx512]),
            (&avx2, F16, 16, &[Avx2]),
            (&avx2, Q8_0, 64, &[Avx2]),
            (&[Portable], BF16, 16, &[Portable]),
        ];
        for (cpu, dtype, nq, want) in cases {
            assert_eq!(contenders(cpu, dtype, nq), want, "{cpu:?} {dtype} {nq}");
        }
        #[cfg(target_os = "linux")]
        for nq in [1, 16, 64] {
            let amx = [Portable, Avx2, Avx512, Avx512Vnni, Avx512Bf16, Amx];
            assert_eq!(contenders(&amx, BF16, nq), [Amx], "{nq}");
            assert_eq!(contenders(&amx, F32, nq), [Avx512], "{nq}");
        }
    }
}
