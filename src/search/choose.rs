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

use std::ops::Range;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use serde::Serialize;

use super::kernels::{Kernel, Queries};
use crate::matrix::Matrix;
use crate::{Error, Result};

/// Matrices smaller than this are not worth measuring: the widest
/// contender runs.
const TRIAL_MIN_BYTES: usize = 32 << 20;

/// Rows a thread scans in the trial before the kernels that filter by the
/// shortlists' thresholds (see `Kernel::filters`) take turns: by then the
/// thresholds are near what most of the scan meets. (On a Zen 4 at 16
/// queries, the int8 kernel's blocks took 2× their final time on a
/// thread's first 256 rows, 1.2× around row 1000, 1.1× at 2048.)
const TRIAL_WARM_ROWS: usize = 2048;

/// Consecutive blocks a contender scans per turn; the first is not timed,
/// as the contender before it may have prefetched its rows.
const TRIAL_RUN: usize = 3;

/// Turns of every contender after the warm-up.
const TRIAL_ROUNDS: usize = 4;

/// A contender whose median so far is this many times the best one's is
/// dropped from the trial (after its second turn).
const TRIAL_DROP: f64 = 1.5;

/// A thread spends at most 1 / `TRIAL_SHARE` of its part of the matrix
/// on the trial.
const TRIAL_SHARE: usize = 4;

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

/// The trial of several contenders on the scan's first blocks, shared by
/// the scan's threads (see [`Trial::step`]).
///
/// Each thread times the contenders on the first blocks it scans (where
/// its share of the scan starts), taking turns of [`TRIAL_RUN`] blocks
/// each and timing all but the first of a turn. Until the thread has
/// scanned `warm` rows (at most [`TRIAL_WARM_ROWS`]) only the kernels
/// that do not filter take turns (their offers raise the thresholds
/// meanwhile); then all do, [`TRIAL_ROUNDS`] rounds. From the second round
/// on, a contender whose median on the thread is [`TRIAL_DROP`] times the
/// best one's drops out. The first thread to finish its rounds (or to
/// have spent 1 / [`TRIAL_SHARE`] of its part of the matrix) decides for
/// all: the contender with the lowest median over all threads' blocks
/// after the warm-up (over all its blocks, if it dropped out before)
/// scans the rest. No thread waits for another.
pub(super) struct Trial<'a> {
    kernels: &'a [Kernel],
    nq: usize,
    /// Stored bytes per row.
    row_bytes: f64,
    /// Rows a thread scans before filtering kernels take turns.
    warm: usize,
    /// Rows a thread may spend on the trial.
    budget: usize,
    /// Per thread of the pool, its turns and times.
    threads: Vec<Mutex<Turns>>,
    /// The winner and why, once decided.
    decided: OnceLock<(usize, KernelChoice)>,
}

impl<'a> Trial<'a> {
    /// A trial of `kernels` on `m` for `nq` queries, on the threads of
    /// the current pool.
    pub(super) fn new(m: &Matrix, kernels: &'a [Kernel], nq: usize) -> Self {
        let threads = rayon::current_num_threads().max(1);
        let budget = m.rows() / threads / TRIAL_SHARE;
        let warm = TRIAL_WARM_ROWS.min(budget / 2);
        Self::with(kernels, nq, m.row_len_bytes(), warm, budget, threads)
    }

    fn with(
        kernels: &'a [Kernel],
        nq: usize,
        row_bytes: usize,
        warm: usize,
        budget: usize,
        threads: usize,
    ) -> Self {
        Trial {
            kernels,
            nq,
            row_bytes: row_bytes as f64,
            warm,
            budget,
            threads: (0..threads)
                .map(|_| Mutex::new(Turns::new(kernels.len())))
                .collect(),
            decided: OnceLock::new(),
        }
    }

    /// Scans `rows` with the winner once decided, else with the contender
    /// whose turn it is on this thread, timed: `visit(i, rows)` scans them
    /// with contender `i`.
    pub(super) fn step(&self, rows: Range<usize>, mut visit: impl FnMut(usize, Range<usize>)) {
        if let Some((best, _)) = self.decided.get() {
            return visit(*best, rows);
        }
        let me = rayon::current_thread_index().unwrap_or(0) % self.threads.len();
        let i = self.lock(me).next(self);
        let n = rows.len();
        let clock = Instant::now();
        visit(i, rows);
        let per_byte = clock.elapsed().as_secs_f64() / (n as f64 * self.row_bytes);
        let done = self.lock(me).record(self, i, n, per_byte);
        if done {
            self.decide();
        }
    }

    /// The winner's index and why it won, deciding now if no thread has.
    pub(super) fn finish(self) -> (usize, KernelChoice) {
        self.decide();
        self.decided.into_inner().expect("decided above")
    }

    fn lock(&self, thread: usize) -> std::sync::MutexGuard<'_, Turns> {
        // A panic in another thread's visit poisons nothing of ours: the
        // turns are only counters and times.
        self.threads[thread]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Picks the winner from every thread's times so far, unless decided.
    fn decide(&self) {
        self.decided.get_or_init(|| {
            let n = self.kernels.len();
            let mut pooled = vec![Times::default(); n];
            let mut timing = 0;
            for t in 0..self.threads.len() {
                let turns = self.lock(t);
                timing += usize::from(turns.times.iter().any(|t| !t.is_empty()));
                for (all, mine) in pooled.iter_mut().zip(&turns.times) {
                    all.early.extend(&mine.early);
                    all.late.extend(&mine.late);
                }
            }
            let figures: Vec<(f64, usize)> = pooled
                .iter()
                .map(|t| {
                    let v = if t.late.is_empty() { &t.early } else { &t.late };
                    (median(v), v.len())
                })
                .collect();
            let best = (0..n)
                .min_by(|&a, &b| figures[a].0.total_cmp(&figures[b].0))
                .expect("two contenders or more");
            let speeds: Vec<String> = self
                .kernels
                .iter()
                .zip(&figures)
                .map(|(k, (t, n))| format!("{} {:.0} ms ({n})", k.name(), t * 1e12))
                .collect();
            let reason = format!(
                "measured fastest in a trial on the scan's first blocks ({timing} thread{}, \
                 {} quer{}), median time per GB (blocks timed): {}",
                if timing == 1 { "" } else { "s" },
                self.nq,
                if self.nq == 1 { "y" } else { "ies" },
                speeds.join(", ")
            );
            let name = self.kernels[best].name();
            (best, KernelChoice { name, reason })
        });
    }
}

/// One thread's side of a [`Trial`].
#[derive(Debug)]
struct Turns {
    /// Rows scanned so far.
    rows: usize,
    /// Whose turn it is, and blocks scanned in this turn.
    turn: usize,
    in_turn: usize,
    /// Rounds begun; rounds finished after the warm-up.
    round: usize,
    timed_rounds: usize,
    /// The current round began after the warm-up.
    warm: bool,
    /// Contenders still in.
    live: Vec<bool>,
    times: Vec<Times>,
}

impl Turns {
    fn new(n: usize) -> Self {
        Turns {
            rows: 0,
            turn: 0,
            in_turn: 0,
            round: 0,
            timed_rounds: 0,
            warm: false,
            live: vec![true; n],
            times: vec![Times::default(); n],
        }
    }

    /// True when contender `i` takes turns in the current round.
    fn takes_turns(&self, trial: &Trial, i: usize) -> bool {
        self.live[i] && (self.warm || !trial.kernels[i].filters())
    }

    /// The contender to scan the next block.
    fn next(&mut self, trial: &Trial) -> usize {
        let n = trial.kernels.len();
        while self.in_turn == TRIAL_RUN || !self.takes_turns(trial, self.turn) {
            self.in_turn = 0;
            self.turn += 1;
            if self.turn == n {
                self.end_round(trial);
            }
        }
        self.turn
    }

    /// Ends a round: counts it, drops the slow, and begins the next.
    fn end_round(&mut self, trial: &Trial) {
        self.turn = 0;
        self.timed_rounds += usize::from(self.warm);
        if self.round >= 1 {
            let medians: Vec<f64> = self.times.iter().map(Times::median).collect();
            let best = (0..self.live.len())
                .filter(|&i| self.live[i])
                .map(|i| medians[i])
                .fold(f64::INFINITY, f64::min);
            // (A contender not timed yet has an infinite median.)
            for (live, t) in self.live.iter_mut().zip(&self.times) {
                *live &= t.is_empty() || t.median() <= TRIAL_DROP * best;
            }
        }
        self.round += 1;
        self.warm = self.rows >= trial.warm;
        // Should only filtering kernels be left, they need no warm-up.
        if !(0..self.live.len()).any(|i| self.takes_turns(trial, i)) {
            self.warm = true;
        }
    }

    /// Records contender `i`'s block of `rows` rows, `per_byte` seconds
    /// per stored byte; true when this thread's trial is over.
    fn record(&mut self, trial: &Trial, i: usize, rows: usize, per_byte: f64) -> bool {
        if self.in_turn > 0 {
            let t = &mut self.times[i];
            if self.warm { &mut t.late } else { &mut t.early }.push(per_byte);
        }
        self.in_turn += 1;
        self.rows += rows;
        // The rounds end in `next`, so the last one counts once the
        // thread would begin another.
        let last_turn = (self.turn + 1..trial.kernels.len()).all(|j| !self.takes_turns(trial, j));
        let rounds_done =
            self.timed_rounds + usize::from(self.warm && last_turn && self.in_turn == TRIAL_RUN);
        rounds_done >= TRIAL_ROUNDS || self.rows >= trial.budget
    }
}

/// One contender's times per byte of its trial blocks.
#[derive(Clone, Debug, Default)]
struct Times {
    /// Before the thread had scanned the trial's `warm` rows.
    early: Vec<f64>,
    /// After.
    late: Vec<f64>,
}

impl Times {
    fn is_empty(&self) -> bool {
        self.early.is_empty() && self.late.is_empty()
    }

    /// The median of all its blocks (infinite when there are none).
    fn median(&self) -> f64 {
        let all: Vec<f64> = self.early.iter().chain(&self.late).copied().collect();
        median(&all)
    }
}

/// The median of `v` (the upper one of an even count; infinite when
/// empty).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::INFINITY)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Runs one thread's trial of `kernels` (blocks of one row, `warm` and
    /// `budget` in rows) with the time per byte `cost(i)` for contender
    /// `i`; returns the contenders in the order they scanned, and the
    /// trial.
    fn run<'a>(
        kernels: &'a [Kernel],
        warm: usize,
        budget: usize,
        cost: impl Fn(usize) -> f64,
    ) -> (Vec<usize>, Trial<'a>) {
        let trial = Trial::with(kernels, 16, 1, warm, budget, 1);
        let mut order = Vec::new();
        loop {
            let i = trial.lock(0).next(&trial);
            order.push(i);
            if trial.lock(0).record(&trial, i, 1, cost(i)) {
                break;
            }
        }
        (order, trial)
    }

    #[test]
    fn filtering_kernels_take_turns_after_the_warm_up() {
        let kernels = [Kernel::Avx512Bf16, Kernel::Avx512Vnni];
        // Equal costs: nobody drops out. Rounds 0 and 1 scan 6 rows with
        // `avx512bf16` alone; then both take 4 timed rounds of 3 blocks.
        let (order, trial) = run(&kernels, 6, 1000, |_| 1e-12);
        let mut want = vec![0; 6];
        for _ in 0..TRIAL_ROUNDS {
            want.extend([0, 0, 0, 1, 1, 1]);
        }
        assert_eq!(order, want);
        let (best, choice) = trial.finish();
        assert_eq!(best, 0, "ties go to the first contender");
        // Two timed blocks per turn: 2 early + 8 late for avx512bf16 (the
        // late ones count), 8 late for avx512vnni.
        assert!(
            choice
                .reason
                .ends_with("(blocks timed): avx512bf16 1 ms (8), avx512vnni 1 ms (8)"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn a_slow_contender_drops_out_and_the_fastest_median_wins() {
        let kernels = [Kernel::Avx2, Kernel::Avx512, Kernel::Avx512Bf16];
        let cost = |i: usize| [2e-12, 1e-12, 1.2e-12][i];
        let (order, trial) = run(&kernels, 0, 1000, cost);
        // `avx2` (2× the best) is out after round 1 (its 2 timed blocks of
        // round 0 count as early, round 1's as late); the others go on.
        assert_eq!(&order[..18], &[0, 0, 0, 1, 1, 1, 2, 2, 2].repeat(2)[..]);
        assert!(order[18..].iter().all(|&i| i != 0), "{order:?}");
        let (best, choice) = trial.finish();
        assert_eq!((best, choice.name), (1, "avx512"));
        assert!(
            choice
                .reason
                .ends_with("avx2 2 ms (2), avx512 1 ms (8), avx512bf16 1 ms (8)"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn the_trial_stops_at_its_budget() {
        let kernels = [Kernel::Avx512Bf16, Kernel::Avx512Vnni];
        // The warm-up would need 100 rows; the budget is 10.
        let (order, trial) = run(&kernels, 100, 10, |_| 1.0);
        assert_eq!(order, vec![0; 10]);
        let (best, choice) = trial.finish();
        assert_eq!(best, 0);
        assert!(
            choice.reason.contains("avx512vnni inf ms (0)"),
            "{}",
            choice.reason
        );
    }
}
