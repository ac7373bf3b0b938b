//! How close a tokenizer's related tokens sit in a matrix, and whether the
//! matrix shows signs of training at all: the measurements behind the
//! `tokenizer-mismatch` and `untrained-matrix` findings (see `mismatch`).
//!
//! Every cosine is taken after subtracting the mean row (estimated from
//! [`SAMPLE`] evenly spaced rows): trained matrices share a common
//! direction, which alone puts any two rows at a cosine of 0.2 to 0.5. Of
//! the related pairs (see `pairs`) the median centred cosine is compared
//! with two baselines: random pairs of the sampled rows, and the same
//! rows paired across pairs (each pair's first row with the next pair's
//! second), which share whatever the ids alone bring (the frequent tokens
//! of a foreign tokenizer sit at low ids, as the matrix's frequent tokens
//! do: Llama 2's tokenizer on Gemma 3 puts its pairs 0.04 above random
//! pairs, and no higher than its rows paired across).
//!
//! The signs of training come from the sample alone: a common direction
//! (the mean row's length against the median row norm, in units of what
//! the mean of that many random rows would have, `1/√n`), and the spread
//! of row norms (robust, in units of what independent Gaussian values
//! give, `1/√(2d)`). Random rows give about 1 on both (0.6 for uniform
//! values on the second); real checkpoints gave 4.7 to 31 on the first
//! (all-MiniLM-L6-v2, Gemma 3, SmolLM2), and 4.6 and 6.0 on the second
//! but for Gemma 3, whose rows are normalised (0.01).
//!
//! The reads: [`SAMPLE`] rows, [`RANDOM_PAIRS`] pairs of them again, and
//! the related pairs' rows (at most `3 × pairs::CAP` pairs and the
//! digits'), each by id: a few thousand rows, whatever the vocabulary.

use serde::Serialize;

use super::pairs::{self, Class};
use crate::matrix::Matrix;
use crate::median::median_of;
use crate::vocab::Vocab;

/// Rows sampled for the mean row and the signs of training.
pub(crate) const SAMPLE: usize = 2048;

/// Random pairs of sampled rows: the baseline of unrelated tokens.
const RANDOM_PAIRS: usize = 500;

/// Word pairs (all classes but the digits) needed to tell anything: a
/// tiny vocabulary has too few, and no finding is made.
pub(crate) const MIN_PAIRS: usize = 100;

/// What one class of related pairs gave.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ClassFigure {
    /// The class.
    pub class: Class,
    /// Pairs measured (both rows finite and not zero).
    pub pairs: usize,
    /// Their median centred cosine (`None` without pairs).
    pub median: Option<f64>,
}

/// The signs of training of a matrix, from a sample of its rows.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Training {
    /// Rows sampled (finite ones).
    pub rows_sampled: usize,
    /// `|mean row| / median norm × √n`: about 1 for random rows.
    pub common_direction: f64,
    /// The robust spread of row norms over their median, `× √(2d)`: about
    /// 1 for random Gaussian rows, less for uniform ones.
    pub norm_spread: f64,
}

impl Training {
    /// A common direction this far above chance is a sign of training.
    pub(crate) const COMMON_DIRECTION: f64 = 3.0;
    /// Row norms spread this far beyond chance are a sign of training.
    pub(crate) const NORM_SPREAD: f64 = 2.0;

    /// Whether the matrix shows either sign of training.
    pub(crate) fn trained(&self) -> bool {
        self.common_direction >= Self::COMMON_DIRECTION || self.norm_spread >= Self::NORM_SPREAD
    }
}

/// How close the related tokens of a vocabulary sit in a matrix.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Relatedness {
    /// Each class, the digits last.
    pub classes: Vec<ClassFigure>,
    /// Word pairs measured, all word classes together.
    pub word_pairs: usize,
    /// Their median centred cosine.
    pub related: f64,
    /// The median centred cosine of random pairs of sampled rows.
    pub random: f64,
    /// The median centred cosine of the word pairs' rows paired across.
    pub across: f64,
    /// The matrix's signs of training.
    pub training: Training,
}

impl Relatedness {
    /// Related pairs closer than the nearer baseline by this much are
    /// related in the matrix: a model's own tokenizer gave 0.45 to 0.62
    /// (all-MiniLM-L6-v2, Gemma 3, SmolLM2), another model's -0.01 to
    /// 0.01 (StarCoder's on SmolLM2, Llama 2's on Gemma 3, each model's
    /// own entries at shuffled ids).
    pub(crate) const GAP: f64 = 0.1;

    /// How much closer the related pairs sit than unrelated ones: the
    /// related median over the higher of the two baselines.
    pub(crate) fn gap(&self) -> f64 {
        self.related - self.random.max(self.across)
    }

    /// Whether the tokenizer's related tokens are related in the matrix.
    pub(crate) fn related(&self) -> bool {
        self.gap() >= Self::GAP
    }

    /// `space 0.01, case 0.00, plural 0.01`: the word classes measured.
    pub(crate) fn by_class(&self) -> String {
        (self.classes.iter())
            .filter(|c| c.class != Class::Digits)
            .filter_map(|c| Some(format!("{} {:.2}", c.class.name(), c.median?)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Measures `vocab`'s related pairs in `m`; `None` when the vocabulary
/// has fewer than [`MIN_PAIRS`] word pairs within the matrix (then no row
/// is read).
pub(crate) fn measure(m: &Matrix, vocab: &Vocab) -> Option<Relatedness> {
    let found = pairs::pairs(vocab, m.rows());
    let words: usize = (found.iter())
        .filter(|(c, _)| *c != Class::Digits)
        .map(|(_, p)| p.len())
        .sum();
    if words < MIN_PAIRS {
        return None;
    }
    let (centre, training) = sample(m);
    let mut rows = Centred::new(m, centre);
    let mut centred = |pairs: &[(u32, u32)]| -> Vec<f64> {
        (pairs.iter())
            .filter_map(|&(a, b)| rows.cosine(a as usize, b as usize))
            .collect()
    };
    let mut classes = Vec::new();
    let (mut related, mut across) = (Vec::new(), Vec::new());
    for (class, pairs) in &found {
        let cosines = centred(pairs);
        if *class != Class::Digits {
            related.extend(&cosines);
            // Each pair's first row with the next pair's second.
            let shifted: Vec<(u32, u32)> = (0..pairs.len())
                .map(|i| (pairs[i].0, pairs[(i + 1) % pairs.len()].1))
                .collect();
            across.extend(centred(&shifted));
        }
        classes.push(ClassFigure {
            class: *class,
            pairs: cosines.len(),
            median: median_of(cosines.into_iter()),
        });
    }
    let random = centred(&random_pairs(m.rows()));
    Some(Relatedness {
        classes,
        word_pairs: related.len(),
        related: median_of(related.into_iter())?,
        random: median_of(random.into_iter()).unwrap_or(0.0),
        across: median_of(across.into_iter()).unwrap_or(0.0),
        training,
    })
}

/// The ids of [`SAMPLE`] rows evenly spaced over `rows` (all of them when
/// there are fewer).
fn sample_ids(rows: usize) -> impl Iterator<Item = u32> {
    let n = rows.min(SAMPLE);
    (0..n).map(move |k| (k * rows / n) as u32)
}

/// [`RANDOM_PAIRS`] pairs of sampled rows, far apart in the sample and
/// spread over it.
fn random_pairs(rows: usize) -> Vec<(u32, u32)> {
    let ids: Vec<u32> = sample_ids(rows).collect();
    let n = ids.len();
    if n < 2 {
        return Vec::new();
    }
    let pairs = RANDOM_PAIRS.min(n / 2);
    // Knuth's multiplicative hash spreads the first members over the
    // sample; the second lies half the sample further on.
    (0..pairs)
        .map(|k| {
            let i = (k as u64 * 2_654_435_761 % n as u64) as usize;
            (ids[i], ids[(i + n / 2) % n])
        })
        .collect()
}

/// Independent f32 sums per loop, which the compiler keeps in vector
/// registers: a sum of products over a row is a chain of additions
/// otherwise, which it must keep in order.
const LANES: usize = 16;

/// `Σ f(x, y)` over the values of `a` and `b`, in [`LANES`] f32 lanes
/// added up in f64 at the end.
#[inline(always)]
fn lane_sum(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f64 {
    let mut lanes = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f64 = (ca.remainder().iter().zip(cb.remainder()))
        .map(|(&x, &y)| f64::from(f(x, y)))
        .sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            lanes[l] += f(x[l], y[l]);
        }
    }
    lanes.iter().map(|&l| f64::from(l)).sum::<f64>() + tail
}

/// Rows of a matrix read by id with the mean row subtracted, into buffers
/// kept from read to read.
struct Centred<'a> {
    m: &'a Matrix<'a>,
    centre: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl<'a> Centred<'a> {
    fn new(m: &'a Matrix<'a>, centre: Vec<f32>) -> Self {
        let cols = m.cols();
        Centred {
            m,
            centre,
            a: vec![0.0; cols],
            b: vec![0.0; cols],
        }
    }

    /// The cosine of rows `i` and `j` about the centre; `None` when
    /// either is not finite or is the centre itself.
    fn cosine(&mut self, i: usize, j: usize) -> Option<f64> {
        for (id, row) in [(i, &mut self.a), (j, &mut self.b)] {
            self.m.block_into(id..id + 1, row);
            row.iter_mut().zip(&self.centre).for_each(|(x, c)| *x -= c);
        }
        centred_cosine(&self.a, &self.b)
    }
}

/// The cosine of two centred rows; `None` when either is not finite or
/// all zero.
fn centred_cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    let ab = lane_sum(a, b, |x, y| x * y);
    let aa = lane_sum(a, a, |x, _| x * x);
    let bb = lane_sum(b, b, |x, _| x * x);
    let cos = ab / (aa * bb).sqrt();
    cos.is_finite().then_some(cos)
}

/// The mean of the sampled rows of `m` (finite ones), and the signs of
/// training they show.
fn sample(m: &Matrix) -> (Vec<f32>, Training) {
    let mut sum = vec![0f64; m.cols()];
    let mut row = vec![0f32; m.cols()];
    let mut norms = Vec::new();
    for id in sample_ids(m.rows()) {
        let id = id as usize;
        m.block_into(id..id + 1, &mut row);
        let sq = lane_sum(&row, &row, |x, _| x * x);
        if !sq.is_finite() {
            continue;
        }
        sum.iter_mut()
            .zip(&row)
            .for_each(|(s, &x)| *s += f64::from(x));
        norms.push(sq.sqrt());
    }
    let n = norms.len();
    let centre: Vec<f64> = sum.iter().map(|s| s / n.max(1) as f64).collect();
    let median = median_of(norms.iter().copied()).unwrap_or(0.0);
    let mad = median_of(norms.iter().map(|x| (x - median).abs())).unwrap_or(0.0);
    let length = centre.iter().map(|x| x * x).sum::<f64>().sqrt();
    let relative = |x: f64| if median > 0.0 { x / median } else { 0.0 };
    let training = Training {
        rows_sampled: n,
        common_direction: relative(length) * (n as f64).sqrt(),
        norm_spread: relative(1.4826 * mad) * (2.0 * m.cols() as f64).sqrt(),
    };
    (centre.iter().map(|&c| c as f32).collect(), training)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosines_are_taken_about_the_centre() {
        use crate::dtype::Dtype;
        // Rows 0 and 1 lie at right angles about the centre (1, 1), rows
        // 2 and 3 along one line; row 4 is the centre, row 5 not finite.
        let rows: [[f32; 2]; 6] = [
            [2.0, 1.0],
            [1.0, 2.0],
            [3.0, 1.0],
            [2.0, 1.0],
            [1.0, 1.0],
            [f32::NAN, 1.0],
        ];
        let bytes: Vec<u8> = rows
            .iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let m = Matrix::new("t", &bytes, Dtype::F32, &[6, 2]).unwrap();
        let mut c = Centred::new(&m, vec![1.0, 1.0]);
        assert!(c.cosine(0, 1).unwrap().abs() < 1e-12);
        assert!((c.cosine(2, 3).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(c.cosine(4, 3), None);
        assert_eq!(c.cosine(5, 3), None);
    }

    #[test]
    fn lane_sums_add_every_value() {
        for n in [0, 1, 15, 16, 17, 100] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let want: f64 = (0..n).map(|i| f64::from(i * i)).sum();
            assert_eq!(lane_sum(&a, &a, |x, y| x * y), want, "{n}");
        }
    }

    /// A `rows × cols` F32 matrix's bytes: uniform values in [-1, 1)
    /// (from SplitMix64, seeded), then `shape` applied to each row.
    fn matrix_bytes(rows: usize, cols: usize, shape: impl Fn(usize, &mut [f32])) -> Vec<u8> {
        let mut state = 42u64;
        let mut uniform = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        let mut bytes = Vec::with_capacity(rows * cols * 4);
        for r in 0..rows {
            let mut row: Vec<f32> = (0..cols).map(|_| uniform()).collect();
            shape(r, &mut row);
            bytes.extend(row.iter().flat_map(|x| x.to_le_bytes()));
        }
        bytes
    }

    #[test]
    fn random_rows_show_no_sign_of_training_and_trained_ones_do() {
        use crate::dtype::Dtype;
        let signs = |bytes: &[u8]| {
            let m = Matrix::new("t", bytes, Dtype::F32, &[5000, 64]).unwrap();
            sample(&m).1
        };
        let random = signs(&matrix_bytes(5000, 64, |_, _| {}));
        assert_eq!(random.rows_sampled, SAMPLE);
        assert!(
            (0.5..1.5).contains(&random.common_direction) && random.norm_spread < 1.0,
            "{random:?}"
        );
        assert!(!random.trained());
        // Every row pulled a little along one direction.
        let common = signs(&matrix_bytes(5000, 64, |_, row| row[0] += 1.0));
        assert!(common.common_direction >= 5.0, "{common:?}");
        assert!(common.trained());
        // Row norms spread far more than independent values spread them.
        let spread = signs(&matrix_bytes(5000, 64, |r, row| {
            let scale = 0.5 + (r % 7) as f32 / 4.0;
            row.iter_mut().for_each(|x| *x *= scale);
        }));
        assert!(spread.norm_spread >= 4.0, "{spread:?}");
        assert!(spread.trained());
    }

    #[test]
    fn samples_and_random_pairs_stay_within_the_rows() {
        for rows in [1, 2, 7, 4096, 4097, 128_256] {
            let ids: Vec<u32> = sample_ids(rows).collect();
            assert_eq!(ids.len(), rows.min(SAMPLE));
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{rows}");
            assert!(ids.last().is_some_and(|&l| (l as usize) < rows));
            let pairs = random_pairs(rows);
            assert!(pairs.iter().all(|&(a, b)| a != b && (b as usize) < rows));
        }
        assert_eq!(random_pairs(128_256).len(), RANDOM_PAIRS);
    }
}
