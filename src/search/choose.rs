//! Which kernel a search runs, and why: forced by `EMBSCOPE_KERNEL`, or
//! measured on the matrix itself.
//!
//! Without `EMBSCOPE_KERNEL`, the contenders are the BF16 kernels the CPU
//! has (for a BF16 matrix: AMX, AVX-512 BF16 and the AVX512-VNNI int8
//! kernel, whose probe times its quantization and int8 pass, not its
//! refinement of the few rows near the top), its widest f32 kernel, and
//! the AVX2 one where it reads the rows in place (BF16, F16, F32). On a
//! matrix of at least [`PROBE_MIN_BYTES`], each contender scores
//! [`PROBE_BYTES`] of rows against the real queries, on two cores at once,
//! interleaved over [`PROBE_ROUNDS`] rounds (the first a warm-up); the
//! fastest run of each counts, and the fastest contender takes the whole
//! scan. Each run reads rows that no run has read before, from memory with
//! both cores busy, as the scan will: kernels that tie on rows in cache can
//! stream 15–35% apart (on a Zen 4, 4 queries: `avx512bf16` was fastest in
//! cache and 15% slower than `avx2` over the matrix), and the scan is what
//! counts. The probe reads about 2% of a Llama-3 embedding (16 MiB), less
//! than 1 ms. (From 16 queries on it takes fewer rows, down to 32.) Results
//! do not depend on the choice: the search re-scores its shortlist exactly.
//!
//! `EMBSCOPE_CPU_MASK=amx,avx512bf16,avx512vnni,...` hides CPU features from
//! detection (hiding `avx512` hides the BF16, AMX and VNNI kernels too, as
//! they need it, and hiding `avx512bf16` the VNNI kernel, which refines with
//! it), so a benchmark can time a machine without them.

use std::time::{Duration, Instant};

use rayon::prelude::*;

use serde::Serialize;

use super::kernels::{Kernel, Queries, Scratch};
use crate::matrix::Matrix;
use crate::{Error, Result};

/// Matrices smaller than this are not worth measuring: the widest
/// contender runs.
const PROBE_MIN_BYTES: usize = 32 << 20;

/// Stored bytes of rows each contender scores per probe run.
const PROBE_BYTES: usize = 512 << 10;

/// Runs per contender and worker: a warm-up, then timed runs (the fastest
/// counts).
const PROBE_ROUNDS: usize = 4;

/// Workers probing at once, each on rows of its own.
const PROBE_WORKERS: usize = 2;

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
    crate::cpu::mask()
        .as_ref()
        .map_err(|e| Error::BadInput(e.clone()))?;
    Ok(Kernel::available(m.dtype()))
}

/// Picks the kernel for `queries` on `m` (see the module docs) and lays the
/// queries out for it.
pub(super) fn choose(m: &Matrix, queries: &[Vec<f32>]) -> Result<(Queries, KernelChoice)> {
    let dtype = m.dtype();
    let available = available(m)?;
    let prepare = |k: Kernel| Queries::new(k, dtype, queries);
    let cols = m.cols();
    // Names the kernel that will run: a kernel whose layout does not fit
    // the columns lays the queries out for AVX-512 BF16 instead.
    let choice = |q: &Queries, asked: Kernel, mut reason: String| {
        let ran = q.kernel();
        if ran != asked {
            reason.push_str(&format!(
                "; {} does not fit {cols} columns, so {} runs",
                asked.name(),
                ran.name()
            ));
        }
        KernelChoice {
            name: ran.name(),
            reason,
        }
    };
    let settle = |k: Kernel, reason: String| {
        let q = prepare(k);
        let c = choice(&q, k, reason);
        (q, c)
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
    if contenders.len() == 1 {
        let why = format!("the widest path this CPU has for {dtype}");
        return Ok(settle(first, why));
    }
    let bytes = m.bytes().len();
    // Fewer rows for many queries (at least 32): the same work, so the probe
    // stays about as cheap at 64 queries as at 16.
    let nq = queries.len().max(1);
    let rows = PROBE_BYTES / m.row_len_bytes().max(1);
    let rows = (rows * 16 / nq).max(32).min(rows).clamp(1, m.rows());
    if bytes < PROBE_MIN_BYTES || queries.is_empty() {
        let why = format!(
            "the widest path this CPU has for {dtype} (the matrix, {} MiB, is too small to measure)",
            bytes >> 20
        );
        return Ok(settle(first, why));
    }
    let mut prepared: Vec<Queries> = contenders.iter().map(|&k| prepare(k)).collect();
    let (times, workers) = measure(m, rows, &prepared);
    let best = (0..contenders.len())
        .min_by_key(|&i| times[i])
        .expect("two contenders or more");
    // Time per GB on one core: the workers' times over all they read.
    let gb = (workers * rows * m.row_len_bytes()) as f64 / 1e9;
    let speeds: Vec<String> = contenders
        .iter()
        .zip(&times)
        .map(|(k, t)| format!("{} {:.0} ms/GB", k.name(), t.as_secs_f64() * 1e3 / gb))
        .collect();
    let nq = queries.len();
    let why = format!(
        "measured fastest on {rows} rows from memory per run on {workers} core{}, {nq} quer{}: {}",
        if workers == 1 { "" } else { "s" },
        if nq == 1 { "y" } else { "ies" },
        speeds.join(", ")
    );
    let winner = prepared.swap_remove(best);
    let c = choice(&winner, contenders[best], why);
    Ok((winner, c))
}

/// Each contender's time on `rows` rows: the fastest of its timed runs
/// (every round but the first, a warm-up), summed over the workers
/// probing at once ([`PROBE_WORKERS`] at most); and the number of workers.
/// Every run reads rows no run has read before (worker `w`, contender `i`,
/// round `r` reads the `((w * n + i) * PROBE_ROUNDS + r)`-th `rows` rows
/// of `m`, so each contender's rounds are adjacent and what it asks ahead
/// for is its own next run), as the scan reads them: from memory, with
/// the other cores busy.
fn measure(m: &Matrix, rows: usize, prepared: &[Queries]) -> (Vec<Duration>, usize) {
    let (n, nq) = (prepared.len(), prepared[0].len());
    let workers = PROBE_WORKERS.min(rayon::current_num_threads()).max(1);
    let last_start = m.rows().saturating_sub(rows);
    let per_worker: Vec<Vec<Duration>> = (0..workers)
        .into_par_iter()
        .map(|w| {
            let (mut scratch, mut norms, mut dots) =
                (Scratch::default(), vec![0.0; rows], vec![0.0; rows * nq]);
            // Map the worker's rows first: a page fault (which may map
            // 2 MiB at once) inside one timed run would swamp it. Only one
            // line per page is read, so the rows stay cold.
            let mine = (w * n * PROBE_ROUNDS * rows).min(last_start);
            let end = ((w + 1) * n * PROBE_ROUNDS * rows).min(m.rows());
            super::touch_pages(m.block_bytes(mine..end));
            let mut best = vec![Duration::MAX; n];
            for round in 0..PROBE_ROUNDS {
                for (i, q) in prepared.iter().enumerate() {
                    let first = (((w * n + i) * PROBE_ROUNDS + round) * rows).min(last_start);
                    // In the kernel's own blocks, as the scan runs it.
                    let step = super::block_rows(m, q.block_bytes());
                    let start = Instant::now();
                    for r0 in (first..first + rows).step_by(step) {
                        let r = r0..(r0 + step).min(first + rows);
                        let at = r.start - first..r.end - first;
                        let d = &mut dots[at.start * nq..at.end * nq];
                        q.score_block(m, r, &mut scratch, Some(&mut norms[at]), d);
                    }
                    if round > 0 {
                        best[i] = best[i].min(start.elapsed());
                    }
                }
            }
            best
        })
        .collect();
    let times = (0..n)
        .map(|i| per_worker.iter().map(|b| b[i]).sum())
        .collect();
    (times, workers)
}
