//! The component against known spreads, the full matrix, noise, and the
//! sweep's sums against each other.

use super::plane::MAX_PLANE_ITERATIONS;
use super::sweep::{Sum, sweep};
use super::*;
use crate::dtype::Dtype;

fn f32_matrix(values: &[f32], rows: usize, cols: usize) -> Vec<u8> {
    assert_eq!(values.len(), rows * cols);
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A small deterministic pseudo-random value in [-0.5, 0.5).
fn noise(i: usize) -> f32 {
    // The splitmix64 finaliser.
    let mut x = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
}

#[test]
fn component_of_a_known_spread() {
    // Rows spread along (3, 4, 0)/5 around an offset, with a little
    // noise across: the component is that axis (up to sign).
    let (rows, cols) = (300, 3);
    let mut values = Vec::new();
    for i in 0..rows {
        let t = (i as f32 - 150.0) / 10.0;
        values.extend([5.0 + 0.6 * t, -2.0 + 0.8 * t, 1.0 + noise(i) / 10.0]);
    }
    let bytes = f32_matrix(&values, rows, cols);
    let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
    let c = sampled(&m, SAMPLE_ROWS);
    let along = (c.v[0] * 0.6 + c.v[1] * 0.8).abs();
    assert!(along > 0.9999, "{:?}", c.v);
    assert_eq!(c.rows, rows);
    // Converged, not stopped at the cap.
    assert!(c.iterations < MAX_ITERATIONS, "{} iterations", c.iterations);
}

#[test]
fn sampled_component_agrees_with_the_full_one() {
    // 40,000 BF16 rows of 64 values: noise of spread 1 in every axis
    // plus a spread of 3 along a fixed direction (a spectral gap of
    // 9 : 1 in variance), around an offset, and a few NaN rows. The
    // component from 4,096 of them agrees with the one from all.
    let (rows, cols) = (40_000, 64);
    let dir: Vec<f32> = (0..cols).map(|j| 1.0 + (j % 5) as f32).collect();
    let len = dir.iter().map(|x| x * x).sum::<f32>().sqrt();
    let mut values = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        let t = 3.0 * 3.4 * noise(i * 7919 + 1);
        for (j, d) in dir.iter().enumerate() {
            let e = 3.4 * noise(i * cols + j);
            values.push(if i % 997 == 5 {
                f32::NAN
            } else {
                0.5 + e + t * d / len
            });
        }
    }
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
        .collect();
    let m = Matrix::new("t", &bytes, Dtype::BF16, &[rows, cols]).unwrap();
    let full = sampled(&m, rows);
    let part = sampled(&m, SAMPLE_ROWS);
    assert_eq!(full.rows, rows - rows.div_ceil(997));
    // Runs of 32 rows every 320 (10 × 32: ⌈40,000 / 4,096⌉ = 10), the
    // NaN ones left out.
    let ids = sample_ids(rows, SAMPLE_ROWS);
    assert_eq!((ids.len(), ids[31], ids[32]), (4000, 31, 320));
    let finite = ids.iter().filter(|&i| i % 997 != 5).count();
    assert_eq!(part.rows, finite);
    let cos: f32 = full.v.iter().zip(&part.v).map(|(a, b)| a * b).sum();
    assert!(cos.abs() > 0.99, "cosine {cos}");
    let truth: f32 = full.v.iter().zip(&dir).map(|(a, b)| a * b / len).sum();
    assert!(
        truth.abs() > 0.99,
        "cosine to the planted direction {truth}"
    );
}

#[test]
fn noise_stops_at_the_noise_test_and_a_gap_does_not() {
    // 2,000 rows of 64 values of even spread: no direction stands out.
    let (rows, cols) = (2000, 64);
    let values: Vec<f32> = (0..rows * cols).map(noise).collect();
    let bytes = f32_matrix(&values, rows, cols);
    let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
    let c = sampled(&m, SAMPLE_ROWS);
    assert!(c.within_noise);
    assert_eq!(c.iterations, NOISE_TEST_FROM);
    // The same rows plus a spread of 3 along one axis stand out.
    let tilted: Vec<f32> = values
        .iter()
        .enumerate()
        .map(|(k, &x)| if k % cols == 5 { 3.0 * x } else { x })
        .collect();
    let bytes = f32_matrix(&tilted, rows, cols);
    let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
    let c = sampled(&m, SAMPLE_ROWS);
    assert!(!c.within_noise);
    assert!(c.v[5].abs() > 0.99, "{:?}", c.v);
}

#[test]
fn small_matrices_are_sampled_whole() {
    assert_eq!(sample_ids(100, SAMPLE_ROWS), (0..100).collect::<Vec<_>>());
    assert_eq!(sample_ids(4096, SAMPLE_ROWS).len(), 4096);
    // Llama 3's 128,256 rows: runs of 32 every 1,024 rows.
    let ids = sample_ids(128_256, SAMPLE_ROWS);
    assert_eq!(
        (ids.len(), ids[32], ids[ids.len() - 1]),
        (4032, 1024, 128_031)
    );
}

#[test]
fn the_first_sweep_makes_the_first_iteration_bit_for_bit() {
    // 300 rows of 40 values over several chunks, BF16 and F32, every
    // row finite: the first sweep's `Σ r (r·v)` is the one a sweep of
    // its own makes, to the bit (so the component is unchanged).
    let (rows, cols) = (300, 40);
    let values: Vec<f32> = (0..rows * cols).map(|i| noise(i) * 3.0).collect();
    let v: Vec<f32> = (0..cols).map(|j| noise(j + 7919)).collect();
    let ids: Vec<usize> = (0..rows).collect();
    let bf16 = Dtype::BF16.encode(&values);
    let f32s = f32_matrix(&values, rows, cols);
    for (dtype, bytes) in [(Dtype::BF16, &bf16), (Dtype::F32, &f32s)] {
        let m = Matrix::new("t", bytes, dtype, &[rows, cols]).unwrap();
        for build in RowBuild::tested() {
            let first = sweep(build, &m, &ids, Sum::Finite(Some(&v)));
            let own = sweep(build, &m, &ids, Sum::Along(&v));
            let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
            assert_eq!(first.finite.len(), rows, "{dtype}");
            assert_eq!(bits(&first.along.unwrap()), bits(&own.sum), "{dtype}");
            let plain = sweep(build, &m, &ids, Sum::Finite(None));
            assert_eq!(bits(&first.sum), bits(&plain.sum), "{dtype}");
            assert_eq!(first.squares.to_bits(), plain.squares.to_bits());
        }
    }
}

#[test]
fn no_finite_rows_give_an_axis() {
    let values = [f32::NAN; 6];
    let bytes = f32_matrix(&values, 3, 2);
    let m = Matrix::new("t", &bytes, Dtype::F32, &[3, 2]).unwrap();
    let c = sampled(&m, SAMPLE_ROWS);
    assert_eq!((&c.v[..], c.rows, c.iterations), (&[1.0, 0.0][..], 0, 0));
    assert!(!c.within_noise);
}

#[test]
fn the_plane_of_two_known_spreads() {
    // 3,000 rows of 48 values: noise of spread 1 in every axis, plus
    // spreads of 4 along one direction and 2.5 along another orthogonal
    // to it, around an offset, and a NaN row every 500.
    let (rows, cols) = (3000, 48);
    let a: Vec<f32> = (0..cols)
        .map(|j| if j % 2 == 0 { 1.0 } else { 0.0 })
        .collect();
    let b: Vec<f32> = (0..cols)
        .map(|j| if j % 4 == 1 { 1.0 } else { 0.0 })
        .collect();
    let unit = |v: &[f32]| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let (a, b) = (unit(&a), unit(&b));
    let mut values = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        let (s, t) = (4.0 * 3.4 * noise(i * 7 + 1), 2.5 * 3.4 * noise(i * 7 + 2));
        for j in 0..cols {
            let x = 0.3 + 3.4 * noise(10_000 + i * cols + j) + s * a[j] + t * b[j];
            values.push(if i % 500 == 9 { f32::NAN } else { x });
        }
    }
    let bytes = f32_matrix(&values, rows, cols);
    let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
    let p = plane(&m, SAMPLE_ROWS);
    assert_eq!(p.rows.len(), rows - 6);
    let cos = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
    assert!(cos(&p.axes[0], &a).abs() > 0.98, "{:?}", p.axes[0]);
    assert!(cos(&p.axes[1], &b).abs() > 0.95, "{:?}", p.axes[1]);
    assert!(cos(&p.axes[0], &p.axes[1]).abs() < 1e-5);
    assert!(
        p.share[0] > p.share[1] && p.share[1] > 0.05,
        "{:?}",
        p.share
    );
    assert!(!p.within_noise);
    assert!(p.iterations < MAX_PLANE_ITERATIONS, "{}", p.iterations);
    // Signed by the largest entry, so the same every time.
    for axis in &p.axes {
        let big = axis
            .iter()
            .fold(0f32, |m, &x| if x.abs() > m.abs() { x } else { m });
        assert!(big > 0.0);
    }
    assert!((p.mean[0] - 0.3).abs() < 0.2, "{}", p.mean[0]);
}

#[test]
fn a_plane_of_noise_stops_at_the_noise_test() {
    let (rows, cols) = (2000, 64);
    let values: Vec<f32> = (0..rows * cols).map(noise).collect();
    let bytes = f32_matrix(&values, rows, cols);
    let m = Matrix::new("t", &bytes, Dtype::F32, &[rows, cols]).unwrap();
    let p = plane(&m, SAMPLE_ROWS);
    assert!(p.within_noise);
    assert_eq!(p.iterations, NOISE_TEST_FROM);
}
