//! Unit tests of the value findings: the outlier rule, unreachable row
//! kinds, and duplicate keys that collide without rows being equal.

use super::*;
use crate::cmd::check::pass::scan;
use crate::progress::Progress;

/// [`outliers`] of `rows`, with their middle norms made here.
fn outliers_of(rows: &[(u32, f32)]) -> (Vec<u32>, f64, f64) {
    let mid = middle(rows.iter().map(|&(_, n)| f64::from(n))).map_or((1.0, 1.0), |m| (m.0, m.1));
    outliers(rows, mid)
}

#[test]
fn outlier_rule() {
    let mut rows: Vec<(u32, f32)> = (0..100)
        .map(|i| (i, 1.0 + (i % 10) as f32 * 0.01))
        .collect();
    assert!(outliers_of(&rows).0.is_empty());
    rows.push((100, 50.0));
    rows.push((101, 0.001));
    rows.push((102, 1.2));
    let (ids, lo, hi) = outliers_of(&rows);
    assert_eq!(ids, vec![101, 100]);
    assert!(lo < 1.0 && hi > 1.09 && hi < 50.0, "{lo} {hi}");
    // The bounds are those of the rule on log-norms, taken directly.
    let logs: Vec<f64> = rows.iter().map(|&(_, n)| f64::from(n).ln()).collect();
    let med = crate::median::median_of(logs.iter().copied()).unwrap();
    let mad = crate::median::median_of(logs.iter().map(|l| (l - med).abs())).unwrap();
    let limit = OUTLIER_SIGMAS * (1.4826 * mad).max(0.01);
    for (got, want) in [(lo, (med - limit).exp()), (hi, (med + limit).exp())] {
        assert!((got - want).abs() < 1e-12 * want, "{got} {want}");
    }
    // Equal norms: the 1% floor keeps rounding noise quiet.
    let flat: Vec<(u32, f32)> = (0..50).map(|i| (i, 1.0 + (i % 2) as f32 * 1e-4)).collect();
    assert!(outliers_of(&flat).0.is_empty());
    assert!(outliers_of(&rows[..5]).0.is_empty());
}

#[test]
fn unreachable_row_kinds() {
    assert_eq!(classify(&[0.0, 0.0], Some(1.0)), "zero");
    assert_eq!(classify(&[0.0, 1.0], Some(1.0)), "mixed");
    assert_eq!(classify(&[0.9, 1.1, 1.0], Some(1.0)), "trained-looking");
    assert_eq!(classify(&[0.02, 0.021], Some(1.0)), "random");
    assert_eq!(classify(&[5.0, 6.0], Some(1.0)), "random");
    assert_eq!(classify(&[1.0], None), "random");
}

#[test]
fn key_collisions_are_not_duplicates() {
    // Rows 0, 1 and 3 share their norm and every sampled word (the
    // values 1 and 2 swap places away from the samples); 0 and 3 are
    // equal.
    let mut rows = vec![vec![0.5f32; 128]; 4];
    (rows[0][3], rows[0][5]) = (1.0, 2.0);
    (rows[1][3], rows[1][5]) = (2.0, 1.0);
    (rows[3][3], rows[3][5]) = (1.0, 2.0);
    let raw: Vec<u8> = rows.concat().iter().flat_map(|x| x.to_le_bytes()).collect();
    let m = Matrix::new("m", &raw, crate::dtype::Dtype::F32, &[4, 128]).unwrap();
    let stats = scan(&m, &Progress::hidden(), None);
    assert_eq!(stats.hashes[0], stats.hashes[1]);
    let live: Vec<(u32, f32)> = (0..4).map(|i| (i, stats.norms[i as usize])).collect();
    let mut out = Vec::new();
    duplicates(None, "m", &m, &stats, &live, &mut out);
    assert_eq!(out.len(), 1);
    let e = &out[0].evidence;
    assert_eq!(
        (e["groups"].clone(), e["rows"].clone()),
        (json!(1), json!(2)),
        "{e}"
    );
    let ids: Vec<&Value> = e["first_groups"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(ids, [&json!(0), &json!(3)], "{e}");
}
