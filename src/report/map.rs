//! The report's map of the embedding: a sample of its rows on their first
//! two principal components, and the rows of note (special, reserved,
//! padding, untrained-looking) placed on the same plane, so that where
//! they lie among the others shows.
//!
//! The plane comes from the sample alone (rows of note would pull the
//! axes towards themselves), the sample that `undertrained` takes its
//! first component from: 4,096 rows in evenly spaced runs, read in place
//! (see `rows::component`). Each point is then one more read of its row
//! for its two dot products (see `rows::sums`).

use rayon::prelude::*;
use serde::Serialize;

use super::Group;
use crate::cpu::RowBuild;
use crate::matrix::Matrix;
use crate::rows::component::{self, Plane};
use crate::rows::sums::block_sums;

/// The map.
#[derive(Debug, Serialize)]
pub struct MapReport {
    /// The matrix mapped.
    pub matrix: String,
    /// Rows of the sample the plane comes from (its finite ones).
    pub sample_rows: usize,
    /// Power iterations made for the plane.
    pub iterations: usize,
    /// The second component's variance is within what evenly spread rows
    /// reach by chance: it is one direction among many of about equal
    /// variance.
    pub within_noise: bool,
    /// Share of the sample's variance along each component.
    pub variance: [f64; 2],
    /// Every point: the sample's rows, then the rows of note.
    pub points: Vec<Point>,
}

/// One row on the map.
#[derive(Debug, Serialize)]
pub struct Point {
    /// Row id.
    pub id: u32,
    /// Its readable token; null without one.
    pub token: Option<String>,
    /// What the row is.
    pub group: Group,
    /// Its combined under-trained score; null when not scored.
    pub score: Option<f32>,
    /// Along the first component.
    pub x: f32,
    /// Along the second.
    pub y: f32,
}

/// The plane of `m`'s sample.
pub fn sample(m: &Matrix) -> Plane {
    component::plane(m, component::SAMPLE_ROWS)
}

/// Whether row `id` is in the sample of `plane`.
pub fn sampled(plane: &Plane, id: u32) -> bool {
    plane.rows.binary_search(&(id as usize)).is_ok()
}

/// The map of `m` on `plane`: the sample's rows and the rows `extra`
/// (those of them that are finite), each named, grouped and scored by
/// `describe`.
pub fn map(
    plane: &Plane,
    m: &Matrix,
    extra: &[u32],
    describe: impl Fn(u32) -> (Option<String>, Group, Option<f32>) + Sync,
) -> MapReport {
    let build = RowBuild::detect();
    let [a, b] = &plane.axes;
    // The centre's coordinates, taken off each row's.
    let along = |axis: &[f32]| -> f64 {
        (plane.mean.iter().zip(axis))
            .map(|(&m, &x)| f64::from(m) * f64::from(x))
            .sum()
    };
    let (ca, cb) = (along(a), along(b));
    let ids: Vec<u32> = (plane.rows.iter().map(|&i| i as u32))
        .chain(extra.iter().copied().filter(|&i| (i as usize) < m.rows()))
        .collect();
    let points: Vec<Point> = ids
        .par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(buf, sums), &id| {
                sums.clear();
                let i = id as usize;
                block_sums(build, m, buf, i..i + 1, Some(a), Some(b), sums);
                let [sq, x, y] = sums[0];
                sq.is_finite().then(|| {
                    let (token, group, score) = describe(id);
                    Point {
                        id,
                        token,
                        group,
                        score,
                        x: (f64::from(x) - ca) as f32,
                        y: (f64::from(y) - cb) as f32,
                    }
                })
            },
        )
        .flatten()
        .collect();
    MapReport {
        matrix: m.name().to_string(),
        sample_rows: plane.rows.len(),
        iterations: plane.iterations,
        within_noise: plane.within_noise,
        variance: plane.share,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;

    #[test]
    fn points_are_rows_on_the_plane() {
        // 600 rows of 5 values: a spread of 4 along axis 2, of 2 along
        // axis 0, a little noise elsewhere, around an offset.
        let (rows, cols) = (600, 5);
        let mut values = Vec::new();
        for i in 0..rows {
            let a = ((i * 37) % 101) as f32 / 50.0 - 1.0;
            let b = ((i * 53) % 97) as f32 / 48.0 - 1.0;
            values.extend([3.0 + 2.0 * b, 0.01 * a, 1.0 + 4.0 * a, -0.01 * b, 0.02]);
        }
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
        let plane = sample(&m);
        assert!(sampled(&plane, 3));
        let r = map(&plane, &m, &[3], |_| (None, Group::Row, None));
        assert_eq!(r.points.len(), rows + 1);
        assert!(r.variance[0] > r.variance[1] && r.variance[1] > 0.1);
        assert!(r.variance[0] + r.variance[1] > 0.99, "{:?}", r.variance);
        // Row 3 again, as a row of note: the same place.
        let (p, q) = (&r.points[3], &r.points[rows]);
        assert_eq!((p.x, p.y), (q.x, q.y));
        // The first axis is axis 2, up to the small correlation of the two
        // spreads' sequences: x is the third value off its mean.
        let mean = values.iter().skip(2).step_by(cols).sum::<f32>() / rows as f32;
        let want = values[3 * cols + 2] - mean;
        assert!((p.x.abs() - want.abs()).abs() < 1e-2, "{} vs {want}", p.x);
    }
}
