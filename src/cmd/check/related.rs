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
//! do: Llama 2's tokenizer on Gemma 3 puts its pairs 0.05 above random
//! pairs, and exactly as far above its rows paired across).
//!
//! The signs of training come from the sample alone: a common direction
//! (the mean row's length against the median row norm, in units of what
//! the mean of that many random rows would have, `1/√n`), and the spread
//! of row norms (robust, in units of what independent Gaussian values
//! give, `1/√(2d)`). Random rows give about 1 on both; real checkpoints
//! gave 6 to 44 on the first (all-MiniLM-L6-v2, SmolLM2, Gemma 3), and
//! 4.6 to 6.1 on the second but for Gemma 3, whose rows are normalised.
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
pub(crate) const SAMPLE: usize = 4096;

/// Random pairs of sampled rows: the baseline of unrelated tokens.
const RANDOM_PAIRS: usize = 1000;

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
    /// related in the matrix: a model's own tokenizer gave 0.48 to 0.63
    /// (all-MiniLM-L6-v2, SmolLM2, Gemma 3), foreign ones 0.00 to 0.02.
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
    let centred = |pairs: &[(u32, u32)]| -> Vec<f64> {
        (pairs.iter())
            .filter_map(|&(a, b)| centred_cosine(&m.row(a as usize), &m.row(b as usize), &centre))
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

/// The mean of the sampled rows of `m` (finite ones), and the signs of
/// training they show.
fn sample(m: &Matrix) -> (Vec<f64>, Training) {
    let mut sum = vec![0f64; m.cols()];
    let mut norms = Vec::new();
    for id in sample_ids(m.rows()) {
        let row = m.row(id as usize);
        if !row.iter().all(|x| x.is_finite()) {
            continue;
        }
        let mut sq = 0f64;
        for (s, &x) in sum.iter_mut().zip(&row) {
            *s += f64::from(x);
            sq += f64::from(x) * f64::from(x);
        }
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
    (centre, training)
}

/// The cosine of `a` and `b` after subtracting `centre` from both; `None`
/// when either is not finite or is the centre itself.
fn centred_cosine(a: &[f32], b: &[f32], centre: &[f64]) -> Option<f64> {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for ((&x, &y), &c) in a.iter().zip(b).zip(centre) {
        let (x, y) = (f64::from(x) - c, f64::from(y) - c);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    let cos = ab / (aa * bb).sqrt();
    cos.is_finite().then_some(cos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosines_are_taken_about_the_centre() {
        let centre = [1.0, 1.0];
        let cos = centred_cosine(&[2.0, 1.0], &[1.0, 2.0], &centre).unwrap();
        assert!(cos.abs() < 1e-12, "{cos}");
        let cos = centred_cosine(&[3.0, 1.0], &[2.0, 1.0], &centre).unwrap();
        assert!((cos - 1.0).abs() < 1e-12, "{cos}");
        assert_eq!(centred_cosine(&[1.0, 1.0], &[2.0, 1.0], &centre), None);
        assert_eq!(centred_cosine(&[f32::NAN, 1.0], &[2.0, 1.0], &centre), None);
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
        let common = signs(&matrix_bytes(5000, 64, |_, row| row[0] += 0.5));
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
