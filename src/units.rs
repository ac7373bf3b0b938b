//! Byte counts as people read them, in binary units: the findings of
//! `check` and every rendered table say sizes the same way.

/// Bytes in binary units with three significant digits, the unit moving
/// up once the number would reach 1000: `512 B`, `1.50 KiB`, `15.0 MiB`,
/// `512 MiB`, `0.98 GiB` (never `1002.0 MiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = 0;
    // Move up while the figure, rounded as printed, would need four digits.
    while unit + 1 < UNITS.len() && (v >= 999.5 || unit == 0) {
        v /= 1024.0;
        unit += 1;
    }
    let unit = UNITS[unit];
    if v < 9.995 {
        format!("{v:.2} {unit}")
    } else if v < 99.95 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits_and_never_four() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1000), "0.98 KiB");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(10_235), "10.0 KiB");
        assert_eq!(bytes(15 << 20), "15.0 MiB");
        assert_eq!(bytes(512 << 20), "512 MiB");
        assert_eq!(bytes(1_022_000), "998 KiB");
        assert_eq!(bytes(1_023_000), "999 KiB");
        assert_eq!(bytes(1_024_000), "0.98 MiB");
        assert_eq!(bytes(1_050_673_152), "0.98 GiB");
        assert_eq!(bytes(2_101_346_304), "1.96 GiB");
    }
}
