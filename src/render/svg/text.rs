//! Room for text without a font at hand: widths estimated from the
//! characters (a picture is drawn before any viewer picks its font, so
//! nothing better is known), labels cut to a width with `…`, and the step
//! at which labels along an axis are thinned so that none overlaps.

/// The estimated width in pixels of `s` at font size `size`: wide for CJK
/// and emoji, narrow for `i`, `l`, punctuation and spaces, wider for
/// capitals, about 0.64 em for the rest (DejaVu Sans, a wide font, fits).
pub fn width(s: &str, size: f64) -> f64 {
    s.chars().map(em).sum::<f64>() * size
}

/// The width of `c` in ems.
fn em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' => 0.32,
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '"' => 0.45,
        'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.9,
        'A'..='Z' => 0.72,
        c if wide(c) => 1.0,
        _ => 0.64,
    }
}

/// Whether `c` takes a full em: CJK, Hangul, full-width forms, emoji.
fn wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F
        | 0x2E80..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1FAFF
        | 0x20000..=0x3FFFD)
}

/// `s` cut to at most `max` pixels at `size`, ending in `…` when cut.
pub fn fit(s: &str, max: f64, size: f64) -> String {
    if width(s, size) <= max {
        return s.to_string();
    }
    let room = max - width("…", size);
    let mut used = 0.0;
    let mut out = String::new();
    for c in s.chars() {
        used += em(c) * size;
        if used > room {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// Every how many labels one is shown, for labels `pitch` pixels apart
/// that each need `need` pixels along the axis: 1 (all) when they fit.
pub fn thin_step(pitch: f64, need: f64) -> usize {
    if pitch <= 0.0 || !pitch.is_finite() {
        return usize::MAX;
    }
    (need / pitch).ceil().max(1.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_characters() {
        assert!(width("ill", 10.0) < width("mmm", 10.0));
        assert_eq!(width("日本", 10.0), 20.0);
        assert_eq!(width("", 10.0), 0.0);
    }

    #[test]
    fn labels_are_cut_to_fit() {
        assert_eq!(fit("dog", 100.0, 10.0), "dog");
        let cut = fit("internationalisation", 60.0, 10.0);
        assert!(cut.ends_with('…') && width(&cut, 10.0) <= 60.0, "{cut}");
        assert_eq!(fit("日本語", 15.0, 10.0), "…");
    }

    #[test]
    fn thinning_keeps_labels_apart() {
        assert_eq!(thin_step(20.0, 12.0), 1);
        assert_eq!(thin_step(5.0, 12.0), 3);
        assert_eq!(thin_step(0.0, 12.0), usize::MAX);
    }
}
