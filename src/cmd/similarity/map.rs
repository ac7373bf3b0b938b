//! The queries in the plane of their first two principal components, as
//! unit vectors (the geometry the cosines describe), found from the
//! cosines alone: the cosine matrix is the Gram matrix of the unit vectors,
//! centring it (`J C J`, `J = I - 11ᵀ/n`) gives the Gram matrix of the
//! centred ones, and its top two eigenvectors scaled by the square roots
//! of their eigenvalues are the coordinates (classical scaling, which for
//! a Gram matrix is PCA). So the map costs `O(n²)` per iteration whatever
//! the rows' width. The eigenvectors come from subspace iteration on two
//! vectors with a Rayleigh–Ritz step, which settles the plane even when
//! the two variances are close.

use serde::Serialize;

/// Most sweeps of subspace iteration: the plane converges by the ratio of
/// the third variance to the second per sweep, and a map needs it to a
/// fraction of a pixel only.
const MAX_SWEEPS: usize = 300;
/// The residual `|G V − V H|` at which the plane is taken as found,
/// relative to the total variance.
const TOLERANCE: f64 = 1e-10;

/// The queries in the plane of their two principal components.
#[derive(Debug, Clone, Serialize)]
pub struct Map {
    /// Each query's place `[pc1, pc2]`, in the order given; null (NaN)
    /// for a vector that is not finite.
    pub points: Vec<[f64; 2]>,
    /// The share of the variance along each component.
    pub variance: [f64; 2],
}

/// The map of the vectors whose cosines are `cosine` (`n × n`). A vector
/// with a NaN cosine to itself (not finite) is left out; a zero one sits
/// where the zero vector does.
pub fn of(cosine: &[Vec<f64>]) -> Map {
    let n = cosine.len();
    let kept: Vec<usize> = (0..n).filter(|&i| !cosine[i][i].is_nan()).collect();
    let m = kept.len();
    let mut points = vec![[f64::NAN; 2]; n];
    if m == 0 {
        return Map {
            points,
            variance: [0.0; 2],
        };
    }
    let c = |i: usize, j: usize| {
        let v = cosine[kept[i]][kept[j]];
        if v.is_nan() { 0.0 } else { v }
    };
    let row_mean: Vec<f64> = (0..m)
        .map(|i| (0..m).map(|j| c(i, j)).sum::<f64>() / m as f64)
        .collect();
    let mean = row_mean.iter().sum::<f64>() / m as f64;
    let g: Vec<Vec<f64>> = (0..m)
        .map(|i| {
            (0..m)
                .map(|j| c(i, j) - row_mean[i] - row_mean[j] + mean)
                .collect()
        })
        .collect();
    let total: f64 = (0..m).map(|i| g[i][i]).sum();
    let (vectors, values) = top_two(&g, total);
    for (k, &i) in kept.iter().enumerate() {
        points[i] = [
            vectors[0][k] * values[0].max(0.0).sqrt(),
            vectors[1][k] * values[1].max(0.0).sqrt(),
        ];
    }
    let share = |v: f64| {
        if total > 0.0 {
            (v / total).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    Map {
        points,
        variance: [share(values[0]), share(values[1])],
    }
}

/// The top two eigenvectors of the symmetric positive semi-definite `g`
/// and their eigenvalues, largest first; each vector signed so that its
/// largest entry is positive. `total` is `g`'s trace.
fn top_two(g: &[Vec<f64>], total: f64) -> ([Vec<f64>; 2], [f64; 2]) {
    let m = g.len();
    let times = |v: &[f64]| -> Vec<f64> {
        g.iter()
            .map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum())
            .collect()
    };
    // A start with no special relation to the data's directions.
    let mut v: [Vec<f64>; 2] = std::array::from_fn(|k| {
        (0..m)
            .map(|i| ((i as f64 + 1.0) * (k as f64 * 1.618 + 0.75)).sin())
            .collect()
    });
    orthonormalise(&mut v);
    let mut h = [[0.0; 2]; 2];
    for _ in 0..MAX_SWEEPS {
        let w = [times(&v[0]), times(&v[1])];
        for (a, row) in h.iter_mut().enumerate() {
            for (b, x) in row.iter_mut().enumerate() {
                *x = dot(&v[a], &w[b]);
            }
        }
        // The residual of `G V = V H`.
        let residual: f64 = (0..2)
            .map(|b| {
                (0..m)
                    .map(|i| {
                        let r = w[b][i] - v[0][i] * h[0][b] - v[1][i] * h[1][b];
                        r * r
                    })
                    .sum::<f64>()
            })
            .sum::<f64>()
            .sqrt();
        let mut next = w;
        orthonormalise(&mut next);
        v = next;
        if residual <= TOLERANCE * total.max(f64::MIN_POSITIVE) {
            break;
        }
    }
    // Rayleigh–Ritz: the eigenvectors of `H` turn the plane's basis into
    // the principal axes.
    let w = [times(&v[0]), times(&v[1])];
    let (a, b, d) = (dot(&v[0], &w[0]), dot(&v[0], &w[1]), dot(&v[1], &w[1]));
    let mid = (a + d) / 2.0;
    let spread = (((a - d) / 2.0).powi(2) + b * b).sqrt();
    let values = [mid + spread, mid - spread];
    let (c, s) = if b.abs() < 1e-300 {
        if a >= d { (1.0, 0.0) } else { (0.0, 1.0) }
    } else {
        let (x, y) = (b, values[0] - a);
        let r = x.hypot(y);
        (x / r, y / r)
    };
    let mut out = [
        (0..m)
            .map(|i| c * v[0][i] + s * v[1][i])
            .collect::<Vec<f64>>(),
        (0..m)
            .map(|i| -s * v[0][i] + c * v[1][i])
            .collect::<Vec<f64>>(),
    ];
    for e in &mut out {
        let top = e
            .iter()
            .copied()
            .fold(0.0, |t: f64, x| if x.abs() > t.abs() { x } else { t });
        if top < 0.0 {
            e.iter_mut().for_each(|x| *x = -*x);
        }
    }
    (out, values)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Gram–Schmidt on the pair. What is left of the second vector after its
/// part along the first is taken off is zero when it is rounding noise
/// (below a billionth of the vector): normalised, noise would point
/// anywhere, along the first vector too.
fn orthonormalise(v: &mut [Vec<f64>; 2]) {
    let scale = |x: &mut Vec<f64>, by: f64| x.iter_mut().for_each(|y| *y *= by);
    let n0 = dot(&v[0], &v[0]).sqrt();
    scale(&mut v[0], if n0 > 0.0 { 1.0 / n0 } else { 0.0 });
    let before = dot(&v[1], &v[1]).sqrt();
    let [a, b] = v;
    // Twice: the second pass takes off what rounding left of the first.
    for _ in 0..2 {
        let p = dot(a, b);
        b.iter_mut().zip(a.iter()).for_each(|(y, x)| *y -= p * x);
    }
    let after = dot(b, b).sqrt();
    scale(
        b,
        if after > 1e-9 * before {
            1.0 / after
        } else {
            0.0
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosines(vectors: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let unit: Vec<Vec<f64>> = vectors
            .iter()
            .map(|v| {
                let n = dot(v, v).sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect();
        unit.iter()
            .map(|a| unit.iter().map(|b| dot(a, b)).collect())
            .collect()
    }

    fn distance(p: [f64; 2], q: [f64; 2]) -> f64 {
        (p[0] - q[0]).hypot(p[1] - q[1])
    }

    #[test]
    fn unit_vectors_in_a_plane_keep_their_distances() {
        // Unit vectors in the plane of the first two axes of 4-d space: the
        // map is that plane, turned, and holds all the variance.
        let angles = [0.0f64, 0.4, 1.1, 2.0, 2.2, 3.5];
        let v: Vec<Vec<f64>> = angles
            .iter()
            .map(|a| vec![a.cos(), a.sin(), 0.0, 0.0])
            .collect();
        let map = of(&cosines(&v));
        assert!(
            (map.variance[0] + map.variance[1] - 1.0).abs() < 1e-9,
            "{map:?}"
        );
        assert!(map.variance[0] >= map.variance[1]);
        for i in 0..v.len() {
            for j in 0..v.len() {
                let want = dot(&v[i], &v[i]) + dot(&v[j], &v[j]) - 2.0 * dot(&v[i], &v[j]);
                let got = distance(map.points[i], map.points[j]);
                assert!((got - want.sqrt()).abs() < 1e-7, "{i} {j}: {got}");
            }
        }
    }

    #[test]
    fn the_first_component_is_the_long_axis() {
        // Points along x, spread little along y, nothing along z.
        let v: Vec<Vec<f64>> = [-3.0, -1.0, 1.0, 3.0]
            .iter()
            .zip([0.2, -0.2, 0.2, -0.2])
            .map(|(&x, y)| vec![x, y, 10.0])
            .collect();
        let map = of(&cosines(&v));
        assert!(map.variance[0] > 0.9, "{map:?}");
        let xs: Vec<f64> = map.points.iter().map(|p| p[0]).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]) || xs.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn degenerate_inputs() {
        let one = of(&[vec![1.0]]);
        assert_eq!(one.points, [[0.0, 0.0]]);
        assert_eq!(one.variance, [0.0, 0.0]);
        let nan = of(&[vec![1.0, f64::NAN], vec![f64::NAN, f64::NAN]]);
        assert_eq!(nan.points[0], [0.0, 0.0]);
        assert!(nan.points[1][0].is_nan());
        assert!(of(&[]).points.is_empty());
        // Two vectors: all the variance along one axis.
        let two = of(&[vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!((two.variance[0] - 1.0).abs() < 1e-12, "{two:?}");
        assert!(
            (distance(two.points[0], two.points[1]) - 2f64.sqrt()).abs() < 1e-9,
            "{two:?}"
        );
    }
}
