//! The timed trial of several kernels on the scan's first blocks, shared
//! by the scan's threads: each contender is timed on what the scan pays,
//! on rows streamed from memory with all cores busy (page faults, TLB
//! misses, the shortlist offers, the int8 kernel's refinement), and the
//! fastest scans the rest. The trial's blocks are part of the scan (any
//! kernel's shortlist is exact after re-scoring), so it costs only what
//! the slower contenders take over the winner on a few blocks, and no
//! thread waits for another. `choose` decides when a trial runs at all.

use std::ops::Range;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use super::choose::KernelChoice;
use super::kernel::Kernel;
use crate::matrix::Matrix;

/// Rows the threads scan together in the trial before the kernels that
/// filter by the shortlists' thresholds (see `Kernel::filters`) take
/// turns: by then the thresholds, which the threads share, are near what
/// most of the scan meets. (Before, the int8 kernel refines many more rows:
/// at 16 queries on 2 threads its blocks take about twice their final time
/// over the first few hundred rows, and come within 10% of it around row
/// 4000.)
const TRIAL_WARM_ROWS: usize = 4096;

/// Consecutive blocks a contender scans per turn; the first is not timed,
/// as the contender before it may have prefetched its rows.
const TRIAL_RUN: usize = 3;

/// Timed blocks every contender still in needs before the slow ones drop
/// out.
const TRIAL_RACE: usize = 6;

/// A contender whose median is this many times the best one's drops out.
const TRIAL_DROP: f64 = 1.5;

/// Timed blocks after the warm-up each contender still in needs before
/// the trial decides.
const TRIAL_SAMPLES: usize = 16;

/// The trial takes at most 1 / `TRIAL_SHARE` of the matrix's rows.
const TRIAL_SHARE: usize = 8;

/// The trial of several contenders on the scan's first blocks, shared by
/// the scan's threads (see [`Trial::step`]).
///
/// Each thread times the contenders on the first blocks it scans (where
/// its share of the scan starts), in rounds: every contender still in
/// takes a turn of [`TRIAL_RUN`] blocks, all but the first of them timed.
/// Until the threads have scanned [`TRIAL_WARM_ROWS`] rows together, only
/// the kernels that do not filter take turns (their shortlists raise the
/// thresholds all threads share meanwhile). Times are pooled over the
/// threads: once every contender taking turns has [`TRIAL_RACE`] of them,
/// one whose median is [`TRIAL_DROP`] times the best one's drops out; once
/// each has [`TRIAL_SAMPLES`] after the warm-up (or the trial has taken
/// 1 / [`TRIAL_SHARE`] of the matrix), the one with the lowest median
/// (over its blocks after the warm-up, or over all of them if it dropped
/// out before) scans the rest. No thread waits for another: a thread
/// that finds the trial decided goes on with the winner.
pub(super) struct Trial<'a> {
    kernels: &'a [Kernel],
    nq: usize,
    /// Stored bytes per row.
    row_bytes: f64,
    /// Rows the threads scan together before filtering kernels take turns.
    warm: usize,
    /// Rows the trial may take in all.
    budget: usize,
    state: Mutex<Pool>,
    /// The winner and why, once decided.
    decided: OnceLock<(usize, KernelChoice)>,
}

/// What the threads of a [`Trial`] share.
#[derive(Debug)]
struct Pool {
    /// Rows scanned so far, by all threads.
    rows: usize,
    /// The warm-up is over.
    warm: bool,
    /// Contenders still in.
    live: Vec<bool>,
    /// Each contender's times.
    times: Vec<Times>,
    /// Per thread of the pool: whose turn it is, and blocks scanned in it.
    turns: Vec<(usize, usize)>,
    /// Threads that timed blocks.
    timing: Vec<bool>,
}

impl<'a> Trial<'a> {
    /// A trial of `kernels` on `m` for `nq` queries, on the threads of
    /// the current pool.
    pub(super) fn new(m: &Matrix, kernels: &'a [Kernel], nq: usize) -> Self {
        let budget = m.rows() / TRIAL_SHARE;
        let warm = TRIAL_WARM_ROWS.min(budget / 2);
        let threads = rayon::current_num_threads().max(1);
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
        let n = kernels.len();
        Trial {
            kernels,
            nq,
            row_bytes: row_bytes as f64,
            warm,
            budget,
            state: Mutex::new(Pool {
                rows: 0,
                warm: false,
                live: vec![true; n],
                times: vec![Times::default(); n],
                turns: vec![(0, 0); threads],
                timing: vec![false; threads],
            }),
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
        let thread = rayon::current_thread_index().unwrap_or(0);
        let (i, timed, warm) = self.lock().next(self, thread);
        let n = rows.len();
        let clock = Instant::now();
        visit(i, rows);
        let per_byte = clock.elapsed().as_secs_f64() / (n as f64 * self.row_bytes);
        let mut pool = self.lock();
        pool.record(self, thread, i, n, timed.then_some((per_byte, warm)));
        // (Another thread may have decided meanwhile: the first decision
        // stands.)
        if self.decided.get().is_none() && pool.done(self) {
            let choice = pool.decide(self);
            drop(pool);
            let _ = self.decided.set(choice);
        }
    }

    /// The winner's index and why it won, deciding now if no thread has.
    pub(super) fn finish(self) -> (usize, KernelChoice) {
        if let Some(decided) = self.decided.get() {
            return decided.clone();
        }
        self.lock().decide(&self)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        // A panic in another thread poisons nothing that matters here:
        // the pool holds counters and times.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Pool {
    /// True when contender `i` takes turns now.
    fn takes_turns(&self, trial: &Trial, i: usize) -> bool {
        self.live[i] && (self.warm || !trial.kernels[i].filters())
    }

    /// The contender to scan `thread`'s next block, whether that block is
    /// timed (not the first of a turn), and whether the warm-up is over.
    fn next(&mut self, trial: &Trial, thread: usize) -> (usize, bool, bool) {
        let n = trial.kernels.len();
        if !(0..n).any(|i| self.takes_turns(trial, i)) {
            // Only filtering kernels are left: they need no warm-up.
            self.warm = true;
        }
        let slot = thread % self.turns.len();
        let (mut turn, mut in_turn) = self.turns[slot];
        while in_turn == TRIAL_RUN || !self.takes_turns(trial, turn) {
            (turn, in_turn) = ((turn + 1) % n, 0);
        }
        self.turns[slot] = (turn, in_turn + 1);
        (turn, in_turn > 0, self.warm)
    }

    /// Records a block of `rows` rows scanned by contender `i` on
    /// `thread`, with its time per byte if timed (and whether after the
    /// warm-up); drops the slow contenders.
    fn record(
        &mut self,
        trial: &Trial,
        thread: usize,
        i: usize,
        rows: usize,
        time: Option<(f64, bool)>,
    ) {
        self.rows += rows;
        self.warm |= self.rows >= trial.warm;
        let Some((t, late)) = time else {
            return;
        };
        let slot = thread % self.timing.len();
        self.timing[slot] = true;
        let times = &mut self.times[i];
        if late {
            &mut times.late
        } else {
            &mut times.early
        }
        .push(t);
        // Among the contenders taking turns; one not timed enough yet (as
        // a filtering kernel during the warm-up) is left in.
        let raced = |i: usize| self.times[i].len() >= TRIAL_RACE;
        let ready = (0..self.live.len()).all(|i| !self.takes_turns(trial, i) || raced(i));
        if ready {
            let medians: Vec<f64> = self.times.iter().map(Times::median).collect();
            let best = (0..self.live.len())
                .filter(|&i| self.live[i] && raced(i))
                .map(|i| medians[i])
                .fold(f64::INFINITY, f64::min);
            for (i, median) in medians.into_iter().enumerate() {
                self.live[i] &= !raced(i) || median <= TRIAL_DROP * best;
            }
        }
    }

    /// True when every contender still in has its timed blocks after the
    /// warm-up, or the trial has taken its rows.
    fn done(&self, trial: &Trial) -> bool {
        let enough = (0..self.live.len())
            .all(|i| !self.live[i] || self.times[i].late.len() >= TRIAL_SAMPLES);
        enough || self.rows >= trial.budget
    }

    /// The winner and why.
    fn decide(&self, trial: &Trial) -> (usize, KernelChoice) {
        let figures: Vec<(f64, usize)> = self
            .times
            .iter()
            .map(|t| {
                let v = if t.late.is_empty() { &t.early } else { &t.late };
                (median(v.iter()), v.len())
            })
            .collect();
        let best = (0..figures.len())
            .filter(|&i| self.live[i])
            .min_by(|&a, &b| figures[a].0.total_cmp(&figures[b].0))
            .unwrap_or(0);
        let speeds: Vec<String> = trial
            .kernels
            .iter()
            .zip(&figures)
            .map(|(k, (t, n))| format!("{} {:.0} ms ({n})", k.name(), t * 1e12))
            .collect();
        let timing = self.timing.iter().filter(|&&t| t).count();
        let reason = format!(
            "measured fastest in a trial on the scan's first blocks ({timing} thread{}, \
             {} quer{}), median time per GB (blocks timed): {}",
            if timing == 1 { "" } else { "s" },
            trial.nq,
            if trial.nq == 1 { "y" } else { "ies" },
            speeds.join(", ")
        );
        let name = trial.kernels[best].name();
        (best, KernelChoice { name, reason })
    }
}

/// One contender's times per byte of its trial blocks.
#[derive(Clone, Debug, Default)]
struct Times {
    /// Before the threads had scanned the trial's `warm` rows.
    early: Vec<f64>,
    /// After.
    late: Vec<f64>,
}

impl Times {
    fn len(&self) -> usize {
        self.early.len() + self.late.len()
    }

    /// The median of all its blocks (infinite when there are none).
    fn median(&self) -> f64 {
        median(self.early.iter().chain(&self.late))
    }
}

/// The median of `times` (infinite when there are none).
fn median<'t>(times: impl Iterator<Item = &'t f64> + Clone) -> f64 {
    crate::median::median_of(times.copied()).unwrap_or(f64::INFINITY)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Runs a trial of `kernels` on `threads` threads taking blocks of one
    /// row in turn (`warm` and `budget` in rows), with the time per byte
    /// `cost(i)` for contender `i`, until it decides; returns the
    /// contenders in the order they scanned, and the winner.
    fn run(
        kernels: &[Kernel],
        warm: usize,
        budget: usize,
        threads: usize,
        cost: impl Fn(usize) -> f64,
    ) -> (Vec<usize>, (usize, KernelChoice)) {
        let trial = Trial::with(kernels, 16, 1, warm, budget, threads);
        let mut order = Vec::new();
        for thread in (0..threads).cycle() {
            let (i, timed, late) = trial.lock().next(&trial, thread);
            order.push(i);
            let mut pool = trial.lock();
            pool.record(&trial, thread, i, 1, timed.then_some((cost(i), late)));
            if pool.done(&trial) {
                return (order, pool.decide(&trial));
            }
        }
        unreachable!("the cycle ends by returning")
    }

    #[test]
    fn filtering_kernels_take_turns_after_the_warm_up() {
        let kernels = [Kernel::Avx512Bf16, Kernel::Avx512Vnni];
        // Equal costs: nobody drops out. Six rows with `avx512bf16` alone;
        // then turns of three blocks (two timed) until each has 16 timed
        // blocks after the warm-up.
        let (order, (best, choice)) = run(&kernels, 6, 1000, 1, |_| 1e-12);
        let mut want = vec![0; 6];
        for _ in 0..8 {
            want.extend([1, 1, 1, 0, 0, 0]);
        }
        assert_eq!(order, want);
        assert_eq!(best, 0, "ties go to the first contender");
        assert!(
            choice
                .reason
                .ends_with("(1 thread, 16 queries), median time per GB (blocks timed): avx512bf16 1 ms (16), avx512vnni 1 ms (16)"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn a_slow_contender_drops_out_and_the_fastest_median_wins() {
        let kernels = [Kernel::Avx2, Kernel::Avx512, Kernel::Avx512Bf16];
        let cost = |i: usize| [2e-12, 1e-12, 1.2e-12][i];
        let (order, (best, choice)) = run(&kernels, 0, 1000, 1, cost);
        // Once each has 6 timed blocks (three turns), `avx2` (2× the best)
        // drops out; the others go on to 16.
        let mut want = [0, 0, 0, 1, 1, 1, 2, 2, 2].repeat(3);
        want.extend([1, 1, 1, 2, 2, 2].repeat(5));
        assert_eq!(order, want);
        assert_eq!((best, choice.name), (1, "avx512"));
        assert!(
            choice
                .reason
                .ends_with("avx2 2 ms (6), avx512 1 ms (16), avx512bf16 1 ms (16)"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn threads_pool_their_times() {
        let kernels = [Kernel::Avx2, Kernel::Avx512Bf16];
        // 1.5× the best: still in (only more drops out).
        let cost = |i: usize| [3e-12, 2e-12][i];
        let (order, (best, choice)) = run(&kernels, 0, 1000, 2, cost);
        // Two threads in step: each gives each contender 2 timed blocks a
        // round, so 16 after 4 rounds of 6 blocks per thread.
        assert_eq!(order.len(), 2 * 4 * 6);
        assert_eq!((best, choice.name), (1, "avx512bf16"));
        assert!(
            choice
                .reason
                .ends_with("(2 threads, 16 queries), median time per GB (blocks timed): avx2 3 ms (16), avx512bf16 2 ms (16)"),
            "{}",
            choice.reason
        );
    }

    #[test]
    fn the_trial_stops_at_its_budget() {
        let kernels = [Kernel::Avx512Bf16, Kernel::Avx512Vnni];
        // The warm-up would need 100 rows; the budget is 10.
        let (order, (best, choice)) = run(&kernels, 100, 10, 1, |_| 1e-12);
        assert_eq!(order, vec![0; 10]);
        assert_eq!(best, 0);
        assert!(
            choice
                .reason
                .ends_with("avx512bf16 1 ms (6), avx512vnni inf ms (0)"),
            "{}",
            choice.reason
        );
    }
}
