//! What `undertrained` runs alongside what, and how long each stage took
//! (shown with `-v`).
//!
//! At the start the vocabulary load, followed by the reference set, runs
//! on one worker of the pool while the others take the head's principal
//! component from its row sample (it needs nothing else; see `rows::component`),
//! and the loading worker joins them when done. (On a thread of its own,
//! the load would share the cores with every worker, which on few cores
//! slows the command by more than the load itself.)
//! Then comes the embedding's streaming pass: the reference mean reaches it
//! when the set is known, or guessed: the loading worker guesses the set
//! from the model vocab as soon as the scan of tokenizer.json has read it
//! (see [`Vocab::load_previewing`]), a fifth of the way into Llama 3's file
//! and before the pass starts, and checks the guess once the load is done
//! (a wrong one, from added tokens written after the model, say, has every
//! row's `r·m` made again). Ids given with `--reference` need no guess.
//! The blocks the pass read before the mean are read again for `r·m`
//! alone (see `pass::catch_up`): with the guess, none in a default run,
//! and a fifth of the matrix instead of a third with `--matrix embed`.
//! The pass starts after the sample, not together with it: started at
//! once, it would meet the mean later, and re-reading its first half
//! costs more than the overlap gains. When the reachability test cannot cut
//! the tokenizer down (see [`Vocab::reach_cuts_down`]), the full tokenizer is built on a
//! thread of its own meanwhile. The head's pass, which needs both the
//! component and the reference mean (taken by the loading worker after
//! the embedding's, while that pass runs), comes last. Each matrix is
//! streamed once (`passes` counts these); the sample and the catch-up add
//! a fraction of a read each.

use std::sync::{Mutex, OnceLock};
use std::thread::Scope;
use std::time::{Duration, Instant};

use super::reference::{self, ReferenceSpec};
use super::{Request, pass};
use crate::aligned::Aligned;
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::rows::component::{self, Component};
use crate::rows::dpbf16;
use crate::rows::mean::mean_of;
use crate::score::indicators::{Indicators, cosines, distances, norms};
use crate::score::reference::{Reference, previewed};
use crate::vocab::{Preview, Vocab};

/// One timed stage of a run.
#[derive(Debug, Clone)]
pub struct Stage {
    /// What ran.
    pub name: &'static str,
    /// When it started, from the start of the run.
    pub start: Duration,
    /// How long it took.
    pub took: Duration,
}

/// The stages of a run, as they finish (from any thread).
pub(super) struct Clock {
    start: Instant,
    stages: Mutex<Vec<Stage>>,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            start: Instant::now(),
            stages: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` as the stage `name`.
    pub fn time<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        let stage = Stage {
            name,
            start: start - self.start,
            took: start.elapsed(),
        };
        self.stages.lock().expect("no panic holding it").push(stage);
        out
    }

    /// The stages by start time.
    pub fn stages(self) -> Vec<Stage> {
        let mut stages = self.stages.into_inner().expect("no panic holding it");
        stages.sort_by_key(|s| s.start);
        stages
    }
}

/// The vocabulary, loaded during the run (`None`: there is none).
pub(super) type Held = Option<Box<Vocab>>;

/// The matrices of a run.
pub(super) struct Matrices<'m, 'c> {
    pub head: Option<&'m Matrix<'c>>,
    pub embed: Option<&'m Matrix<'c>>,
    /// The head is the embedding.
    pub tied: bool,
    /// Rows of the first matrix (both, when there are two).
    pub rows: usize,
    /// Name of the first matrix, for errors.
    pub name: &'m str,
}

/// What the measuring found.
pub(super) struct Measured {
    pub ind: Indicators,
    pub reference: Reference,
    pub passes: usize,
    pub component_rows: usize,
    pub component_iterations: usize,
    /// The component's variance is within the sample's noise level.
    pub component_within_noise: bool,
}

/// Loads the vocabulary (into `held`) and measures the matrices, each
/// streamed once, as laid out in the module docs.
pub(super) fn measure<E: From<crate::Error> + Send>(
    m: &Matrices,
    req: &Request,
    load: impl FnOnce(&mut dyn FnMut(&Preview)) -> Result<Held, E> + Send,
    held: &OnceLock<Held>,
    clock: &Clock,
) -> Result<Measured, E> {
    let bar = |m: &Matrix| {
        Progress::new(
            req.progress,
            m.rows() as u64,
            &format!("undertrained: `{}`", m.name()),
        )
    };
    let embed = m.embed.filter(|_| !m.tied);
    let embed_bar = embed.map(bar);
    // The embedding's reference mean, set as early as it can be (see
    // `load_guessing`).
    let embed_mean = pass::Mean::new();
    std::thread::scope(|s| {
        // The load as a task of the pool: the worker that takes it leaves
        // the sample to the next one free, and helps with the sample or
        // the pass when done.
        let (loaded, (pc, embed_sums)) = rayon::join(
            || -> Result<_, E> {
                let (reference, guess) =
                    load_guessing(m, req, load, held, embed, &embed_mean, clock).inspect_err(
                        |_| {
                            // Nothing will be scored: stop the pass.
                            embed_bar.as_ref().inspect(|b| b.cancel());
                        },
                    )?;
                let vocab = held.get().and_then(|v| v.as_deref());
                build_tokenizer(vocab, req, s, clock);
                // The head's mean too, while the embedding's pass runs.
                let head_mean = m.head.and_then(|h| mean_of(h, &reference.ids));
                Ok((reference, head_mean, guess))
            },
            || {
                // The sample first, while the vocabulary loads: the
                // embedding's pass that follows then meets the reference
                // mean sooner, and fewer of its rows are read again to
                // catch up.
                let pc = m.head.map(|h| {
                    clock.time("component sample", || {
                        component::sampled(h, component::SAMPLE_ROWS)
                    })
                });
                let embed_sums = embed.zip(embed_bar.as_ref()).map(|(e, bar)| {
                    clock.time("embedding pass", || pass::sums(e, &embed_mean, None, bar))
                });
                (pc, embed_sums)
            },
        );
        let (reference, head_mean, guess) = loaded?;
        let mut out = Measured {
            ind: Indicators::default(),
            reference,
            passes: 0,
            component_rows: 0,
            component_iterations: 0,
            component_within_noise: false,
        };
        if let (Some(e), Some(mut sums)) = (embed, embed_sums) {
            let mean = match &guess {
                Guess::Wrong(exact) => {
                    // Every row was dotted with the wrong mean, or is
                    // pending: all are done again.
                    sums.pending = pass::all_rows(e);
                    exact.as_ref()
                }
                Guess::Right => embed_mean.get().and_then(Option::as_ref),
            };
            if let Some(mean) = mean.filter(|_| !sums.pending.is_empty()) {
                clock.time("embedding catch-up", || pass::catch_up(e, &mut sums, mean));
            }
            out.passes += 1;
            out.ind.embed_norm = Some(norms(&sums.sq));
            out.ind.embed_distance = mean.map(|mean| distances(&sums.sq, &sums.dot_ref, mean));
        }
        if let Some(h) = m.head {
            let mean = pass::Mean::from(head_mean);
            head(h, pc, &mean, m.tied, &mut out, &bar(h), clock);
        }
        Ok(out)
    })
}

/// Whether the embedding's pass met the right reference mean.
enum Guess {
    /// No guess, or a right one: the pass's own mean is the right one.
    Right,
    /// A wrong guess: the pass's rows are to be dotted again with this
    /// mean (`None`: there is none).
    Wrong(Option<Aligned<f32>>),
}

/// Loads the vocabulary into `held` and resolves the reference set,
/// setting the `embed`ding's reference `mean` for its pass as early as it
/// can: before the load for ids given, from a guess at the `auto` set
/// when the load shows the model vocab (see
/// [`crate::vocab::Vocab::load_previewing`]), else after the load. Returns
/// the set, and whether the pass met the right mean.
fn load_guessing<E: From<crate::Error>>(
    m: &Matrices,
    req: &Request,
    load: impl FnOnce(&mut dyn FnMut(&Preview)) -> Result<Held, E>,
    held: &OnceLock<Held>,
    embed: Option<&Matrix>,
    mean: &pass::Mean,
    clock: &Clock,
) -> Result<(Reference, Guess), E> {
    if let (Some(e), ReferenceSpec::Ids(_)) = (embed, &req.reference) {
        let ids = reference::resolve(&req.reference, None, m.rows, m.name)?.ids;
        let _ = mean.set(mean_of(e, &ids));
    }
    let mut guessed = None;
    let mut guess = |p: &Preview| {
        let auto = req.reference == ReferenceSpec::Auto;
        let Some(e) = embed.filter(|_| auto && guessed.is_none()) else {
            return;
        };
        let ids = clock.time("reference guess", || previewed(p, m.rows));
        let _ = mean.set(mean_of(e, &ids));
        guessed = Some(ids);
    };
    let _ = held.set(clock.time("vocabulary", || load(&mut guess))?);
    let vocab = held.get().and_then(|v| v.as_deref());
    let reference = clock.time("reference set", || {
        reference::resolve(&req.reference, vocab, m.rows, m.name)
    })?;
    // The exact mean is made only when no right one is set: ids given and
    // a right guess set it already.
    let exact = || embed.and_then(|e| mean_of(e, &reference.ids));
    let guess = match guessed {
        Some(ids) if ids != reference.ids => Guess::Wrong(exact()),
        _ => {
            mean.get_or_init(exact);
            Guess::Right
        }
    };
    Ok((reference, guess))
}

/// Builds the full tokenizer for the reachability test on a thread of
/// `s`, when the test cannot cut one down (see
/// [`Vocab::reach_cuts_down`]).
fn build_tokenizer<'scope, 'v: 'scope>(
    vocab: Option<&'v Vocab>,
    req: &Request,
    s: &'scope Scope<'scope, '_>,
    clock: &'scope Clock,
) {
    if let Some(v) = vocab.filter(|v| req.tests_reachability() && !v.reach_cuts_down()) {
        s.spawn(move || clock.time("tokenizer build", || v.encode("", false)));
    }
}

/// The head's pass, against its component when there is a reference mean
/// (`known`, the mean of the head's reference rows).
fn head(
    h: &Matrix,
    pc: Option<Component>,
    known: &pass::Mean,
    tied: bool,
    out: &mut Measured,
    bar: &Progress,
    clock: &Clock,
) {
    let mean = known.get().and_then(Option::as_ref);
    let pc = pc.filter(|_| mean.is_some());
    if let Some(c) = &pc {
        (out.component_rows, out.component_iterations) = (c.rows, c.iterations);
        out.component_within_noise = c.within_noise;
    }
    // An untied head is dotted with both vectors rounded to BF16, on every
    // CPU, so that those with AVX512_BF16 read it at the speed of the
    // embedding's pass (see `rows::dpbf16`): the cosines are then to the rounded
    // mean, the rounded component removed, a difference in about their
    // fifth digit. A tied head keeps them as they are, for the distances
    // to the mean taken from the same sums.
    let rounded = mean.zip(pc.as_ref()).filter(|_| !tied).map(|(m, c)| {
        (
            pass::Mean::from(Some(dpbf16::rounded(m))),
            dpbf16::rounded(&c.v),
        )
    });
    let (known, pcv) = match &rounded {
        Some((m, c)) => (m, Some(&c[..])),
        None => (known, pc.as_ref().map(|c| &c.v[..])),
    };
    let mean = known.get().and_then(Option::as_ref);
    let sums = clock.time("head pass", || pass::sums(h, known, pcv, bar));
    out.passes += 1;
    let ind = &mut out.ind;
    ind.head_cosine = mean
        .zip(pcv)
        .and_then(|(mean, pc)| cosines(&sums.sq, &sums.dot_ref, &sums.dot_pc, pc, mean));
    if tied {
        ind.embed_norm = Some(norms(&sums.sq));
        ind.embed_distance = mean.map(|mean| distances(&sums.sq, &sums.dot_ref, mean));
    } else {
        ind.head_norm = Some(norms(&sums.sq));
    }
}
