//! What `undertrained` runs alongside what, and how long each stage took
//! (shown with `-v`).
//!
//! Two things start at once: the head's principal component from its row
//! sample (it needs nothing else; see `component`), and the vocabulary
//! load followed by the reference set and the embedding's streaming pass.
//! The sample's reads are scattered and wait on memory latency, the pass
//! streams at memory bandwidth, so the two share the cores well. The
//! reachability test's tokenizer file is parsed on a thread of its own
//! meanwhile. The head's pass, which needs both the component and the
//! reference mean, comes last. Each matrix is streamed once: the passes
//! are one per matrix, the sample adds a fraction of one.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::component::{self, Component};
use super::indicators::{Indicators, cosines, distances, mean_of, norms};
use super::reach::{self, Parsed};
use super::reference::{self, Reference};
use super::{Request, pass};
use crate::matrix::Matrix;
use crate::progress::Progress;
use crate::vocab::Vocab;

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

/// The vocabulary: given by the caller, or loaded during the run.
pub(super) enum Held<'v> {
    Given(Option<&'v Vocab>),
    Loaded(Option<Vocab>),
}

impl Held<'_> {
    pub fn get(&self) -> Option<&Vocab> {
        match self {
            Held::Given(v) => *v,
            Held::Loaded(v) => v.as_ref(),
        }
    }
}

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
pub(super) struct Measured<'s> {
    pub ind: Indicators,
    pub reference: Reference,
    /// The parsed tokenizer file for the reachability test, when it cuts
    /// down (see `reach`).
    pub parsed: Option<Parsed<'s>>,
    pub passes: usize,
    pub component_rows: usize,
    pub component_iterations: usize,
}

/// Loads the vocabulary (into `held`) and measures the matrices, each
/// streamed once, as laid out in the module docs. `source` keeps the
/// tokenizer file's bytes that the parsed file borrows.
pub(super) fn measure<'s, 'v: 's, E: From<crate::Error> + Send>(
    m: &Matrices,
    req: &Request,
    load: impl FnOnce() -> Result<Held<'v>, E> + Send,
    held: &'s OnceLock<Held<'v>>,
    source: &'s OnceLock<Vec<u8>>,
    clock: &Clock,
) -> Result<Measured<'s>, E> {
    let bar = |m: &Matrix| {
        Progress::new(
            req.progress,
            m.rows() as u64,
            &format!("undertrained: `{}`", m.name()),
        )
    };
    std::thread::scope(|s| {
        let (pc, loaded) = rayon::join(
            || {
                let h = m.head?;
                Some(clock.time("component sample", || {
                    component::sampled(h, component::SAMPLE_ROWS)
                }))
            },
            || -> Result<_, E> {
                let _ = held.set(clock.time("vocabulary", load)?);
                let vocab = held.get().and_then(Held::get);
                let reference = clock.time("reference set", || {
                    reference::resolve(&req.reference, vocab, m.rows, m.name)
                })?;
                // The reachability test's tokenizer: the file parsed (to cut
                // it down, see `reach`), or else the full one built.
                let parsing = match vocab.filter(|_| req.reachability && req.top > 0) {
                    Some(v) if reach::cuts_down(v) => Some(s.spawn(move || {
                        clock.time("tokenizer parse", || {
                            let bytes = std::fs::read(v.file()).ok()?;
                            reach::parse(source.get_or_init(|| bytes))
                        })
                    })),
                    Some(v) => {
                        s.spawn(move || clock.time("tokenizer build", || v.encode("", false)));
                        None
                    }
                    None => None,
                };
                let embed = m.embed.filter(|_| !m.tied).map(|e| {
                    clock.time("embedding pass", || {
                        let mean = mean_of(e, &reference.ids);
                        let sums = pass::sums(e, mean.as_deref(), None, &bar(e));
                        (mean, sums)
                    })
                });
                Ok((reference, parsing, embed))
            },
        );
        let (reference, parsing, embed) = loaded?;
        let mut out = Measured {
            ind: Indicators::default(),
            reference,
            parsed: None,
            passes: 0,
            component_rows: 0,
            component_iterations: 0,
        };
        if let Some((mean, sums)) = embed {
            out.passes += 1;
            out.ind.embed_norm = Some(norms(&sums));
            out.ind.embed_distance = mean.as_ref().map(|mean| distances(&sums, mean));
        }
        if let Some(h) = m.head {
            head(h, pc, m.tied, &mut out, &bar(h), clock);
        }
        out.parsed = parsing.and_then(|p| p.join().ok().flatten());
        Ok(out)
    })
}

/// The head's pass, against its component when there is a reference mean.
fn head(
    h: &Matrix,
    pc: Option<Component>,
    tied: bool,
    out: &mut Measured,
    bar: &Progress,
    clock: &Clock,
) {
    let mean = mean_of(h, &out.reference.ids);
    let pc = pc.filter(|_| mean.is_some());
    if let Some(c) = &pc {
        (out.component_rows, out.component_iterations) = (c.rows, c.iterations);
    }
    let pcv = pc.as_ref().map(|c| c.v.as_slice());
    let sums = clock.time("head pass", || pass::sums(h, mean.as_deref(), pcv, bar));
    out.passes += 1;
    let ind = &mut out.ind;
    ind.head_cosine = mean
        .as_ref()
        .zip(pcv)
        .and_then(|(mean, pc)| cosines(&sums, pc, mean));
    if tied {
        ind.embed_norm = Some(norms(&sums));
        ind.embed_distance = mean.as_ref().map(|mean| distances(&sums, mean));
    } else {
        ind.head_norm = Some(norms(&sums));
    }
}
