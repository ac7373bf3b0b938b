//! Unit tests of the row summaries: sums, dot products and their order,
//! classes of rows on every compiled path and dtype, and duplicate keys.

use super::*;
use half::{bf16, f16};

use crate::cmd::undertrained::kernel::madd;

fn bytes_of(dtype: Dtype, v: &[f32]) -> Vec<u8> {
    match dtype {
        Dtype::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Dtype::BF16 => v
            .iter()
            .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::F16 => v
            .iter()
            .flat_map(|&x| f16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::F64 => v.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect(),
        other => panic!("no writer for {other}"),
    }
}

/// Every compiled path on one row.
fn all_paths(dtype: Dtype, v: &[f32]) -> Vec<RowSummary> {
    let raw = bytes_of(dtype, v);
    let mut scratch = Vec::new();
    let mut results = Vec::new();
    let mut run = |f: &dyn Fn(&mut Vec<f32>, &mut Vec<RowSummary>)| {
        let mut out = Vec::new();
        f(&mut scratch, &mut out);
        assert_eq!(out.len(), 1);
        results.push(out[0]);
    };
    run(&|s, o| summarize_with::<false>(dtype, v.len(), &raw, None, s, o));
    run(&|s, o| summarize(dtype, v.len(), &raw, None, s, o));
    results
}

#[test]
fn sums_and_classes_on_every_path_and_dtype() {
    let v: Vec<f32> = (0..77).map(|i| (i as f32 - 30.0) * 0.25).collect();
    let exact: f64 = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::F64] {
        for s in all_paths(dtype, &v) {
            assert!((f64::from(s.norm) - exact).abs() < 1e-5 * exact, "{dtype}");
            assert!(!s.nan && !s.inf && !s.zero, "{dtype}");
        }
        let zeros = [0.0, -0.0, 0.0];
        for s in all_paths(dtype, &zeros) {
            assert!(s.zero && s.norm == 0.0 && !s.nan, "{dtype}");
        }
    }
}

#[test]
fn dots_and_sums_add_in_value_order() {
    // Three steps of 32 values and a tail of 4, rounded to BF16 so that
    // every dtype stores the same values.
    let round = |x: f32| bf16::from_f32(x).to_f32();
    let v: Vec<f32> = (0..100)
        .map(|i| round(((i * 7919 % 1000) as f32 - 500.0) / 333.0))
        .collect();
    let m: Vec<f32> = (0..100).map(|i| (i as f32 - 50.0) / 61.0).collect();
    let dotted = m.clone();
    // As `undertrained` sums: value j in lane j % 32 over the whole
    // steps (fused on the wide builds), the lanes in order, the tail.
    let expect = |fma: bool, y: &[f32]| {
        let mut lanes = [0f32; LANES];
        for j in 0..96 {
            lanes[j % LANES] = madd_any(fma, lanes[j % LANES], v[j], y[j]);
        }
        let mut total: f32 = lanes.iter().sum();
        for j in 96..100 {
            total += v[j] * y[j];
        }
        total
    };
    for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16] {
        let raw = bytes_of(dtype, &v);
        let mut scratch = Vec::new();
        for fma in [false, true] {
            let mut out = Vec::new();
            if fma {
                summarize_with::<true>(dtype, 100, &raw, Some(&dotted), &mut scratch, &mut out);
            } else {
                summarize_with::<false>(dtype, 100, &raw, Some(&dotted), &mut scratch, &mut out);
            }
            let r = out[0];
            assert_eq!(r.sq.to_bits(), expect(fma, &v).to_bits(), "{dtype} {fma}");
            assert_eq!(r.dot.to_bits(), expect(fma, &m).to_bits(), "{dtype} {fma}");
            assert_eq!(r.norm, r.sq.sqrt());
        }
        // The dispatched build agrees with one of the two, and without
        // a vector the sums are the same and the dot is 0.
        let (mut with, mut without) = (Vec::new(), Vec::new());
        summarize(dtype, 100, &raw, Some(&dotted), &mut scratch, &mut with);
        summarize(dtype, 100, &raw, None, &mut scratch, &mut without);
        assert!([expect(false, &m), expect(true, &m)].contains(&with[0].dot));
        assert_eq!((without[0].sq, without[0].dot), (with[0].sq, 0.0));
        let exact: f64 = v
            .iter()
            .zip(&m)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        assert!((f64::from(with[0].dot) - exact).abs() < 1e-5 * exact.abs().max(1.0));
    }
}

fn madd_any(fma: bool, acc: f32, x: f32, y: f32) -> f32 {
    if fma {
        madd::<true>(x, y, acc)
    } else {
        madd::<false>(x, y, acc)
    }
}

#[test]
fn nan_inf_and_out_of_range_squares() {
    for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16] {
        let mut v = vec![1.0f32; 40];
        v[33] = f32::NAN;
        for s in all_paths(dtype, &v) {
            assert!(s.nan && !s.inf && s.norm.is_nan(), "{dtype}");
        }
        v[3] = f32::NEG_INFINITY;
        for s in all_paths(dtype, &v) {
            assert!(s.nan && s.inf, "{dtype}");
        }
        v[33] = 1.0;
        for s in all_paths(dtype, &v) {
            assert!(!s.nan && s.inf && !s.zero, "{dtype}");
        }
    }
    // Squares past f32::MAX and below its smallest subnormal: the sum
    // is redone in f64.
    let big = [3e30f32, 4e30];
    for s in all_paths(Dtype::F32, &big) {
        assert!((s.norm / 5e30 - 1.0).abs() < 1e-6 && !s.inf, "{s:?}");
    }
    let tiny = [3e-30f32, 4e-30, 0.0];
    for s in all_paths(Dtype::F32, &tiny) {
        assert!((s.norm / 5e-30 - 1.0).abs() < 1e-6 && !s.zero, "{s:?}");
    }
}

#[test]
fn hash_sees_every_byte_and_place() {
    let a: Vec<u8> = (0..150).map(|i| (i * 7) as u8).collect();
    let mut seen = std::collections::HashSet::new();
    assert!(seen.insert(hash_row(&a)));
    for i in 0..a.len() {
        let mut b = a.clone();
        b[i] ^= 1;
        assert!(seen.insert(hash_row(&b)), "byte {i}");
    }
    assert!(seen.insert(hash_row(&a[..149])));
    // Two 64-byte stripes swapped.
    let mut swapped = a[64..128].to_vec();
    swapped.extend_from_slice(&a[..64]);
    swapped.extend_from_slice(&a[128..]);
    assert!(seen.insert(hash_row(&swapped)));
    assert_eq!(hash_row(&a), hash_row(&a.clone()));
}

#[test]
fn row_key_sees_samples_norm_and_length_only() {
    // Short rows are hashed whole.
    let short: Vec<u8> = (0..256).map(|i| i as u8).collect();
    let mut other = short.clone();
    other[100] ^= 1;
    assert_eq!(row_key(&short, 1.0), hash_row(&short));
    assert_ne!(row_key(&short, 1.0), row_key(&other, 1.0));
    // Long rows: the first and last words, every sampled word, the sum
    // and the length count; a byte between samples does not.
    let row: Vec<u8> = (0..8192).map(|i| (i * 7 + i / 256) as u8).collect();
    let key = row_key(&row, 2.5);
    assert_eq!(key, row_key(&row.clone(), 2.5));
    assert_ne!(key, row_key(&row, 2.25));
    assert_ne!(key, row_key(&row[..8190], 2.5));
    for at in [0, 7, 8184, 8191, 8184 * 7 / 15] {
        let mut b = row.clone();
        b[at] ^= 1;
        assert_ne!(key, row_key(&b, 2.5), "byte {at}");
    }
    let mut b = row.clone();
    b[20] ^= 1;
    assert_eq!(key, row_key(&b, 2.5));
}
