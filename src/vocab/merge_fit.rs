//! A check of BPE merges before the tokenizers crate builds a model from
//! them. Its builder copies each merge's parts, joined (less the
//! `continuing_subword_prefix` it takes off the second part), into a
//! buffer as long as the model vocab's longest token before it looks the
//! result up, and panics when they do not fit; such a merge's result is
//! never in the vocab, so the build could not succeed anyway. It also
//! takes the prefix's length off the second part without looking at it,
//! and reads the joined bytes as UTF-8 unchecked: a cut through a
//! character there makes a string that is not UTF-8 (undefined behaviour,
//! and never a vocab token either). The check makes both an error that
//! names the merge.

use serde::Deserialize;

use super::scan;

/// Why the merge `a` `b` cannot be built with a model vocab whose longest
/// token has `longest` bytes and whose `continuing_subword_prefix` is
/// `prefix`; `None` when it fits.
pub(super) fn unfit(a: &[u8], b: &[u8], longest: usize, prefix: &str) -> Option<String> {
    let shown = || {
        let text = |s| String::from_utf8_lossy(s).into_owned();
        format!("merge {:?} {:?}", text(a), text(b))
    };
    match b.len().checked_sub(prefix.len()) {
        None => Some(format!(
            "{}: its second part is shorter than the continuing_subword_prefix {prefix:?}",
            shown()
        )),
        Some(rest) if a.len() + rest > longest => Some(format!(
            "{} joins into {} bytes, more than the longest vocab token ({longest})",
            shown(),
            a.len() + rest
        )),
        // A UTF-8 continuation byte where the prefix ends.
        Some(_) if b.get(prefix.len()).is_some_and(|&c| c & 0xC0 == 0x80) => Some(format!(
            "{}: taking the continuing_subword_prefix {prefix:?} off its second part cuts a character",
            shown()
        )),
        Some(_) => None,
    }
}

/// The parts of tokenizer.json the merges are read from when the scan
/// cannot find them.
#[derive(Deserialize)]
struct File {
    model: Model,
}

#[derive(Deserialize)]
struct Model {
    #[serde(default)]
    merges: Option<Vec<Form>>,
}

/// One merge, in either shape the tokenizers crate reads.
#[derive(Deserialize)]
#[serde(untagged)]
enum Form {
    Pair(String, String),
    Joined(String),
}

/// The first merge of tokenizer.json `bytes` that is [`unfit`], the
/// merges read as the tokenizers crate reads them (a joined one split at
/// its one space, a `#version` line skipped). Found by the load's scan
/// where it can; when it cannot (a key written with escapes, say), serde
/// reads the merges. `None` as well when they cannot be read: the crate
/// then says what is wrong.
pub(super) fn unfit_in_file(bytes: &[u8], longest: usize, prefix: &str) -> Option<String> {
    let mut first = None;
    let layout = scan::locate(
        bytes,
        |merge| {
            if first.is_none()
                && let Some([a, b]) = merge.parts()
            {
                first = unfit(&a, &b, longest, prefix);
            }
        },
        |_, _| {},
        |_| {},
    );
    if layout.is_some_and(|l| l.merges.is_some()) {
        return first;
    }
    let file: File = serde_json::from_slice(bytes).ok()?;
    file.model.merges?.iter().find_map(|m| match m {
        Form::Pair(a, b) => unfit(a.as_bytes(), b.as_bytes(), longest, prefix),
        Form::Joined(s) => {
            let t = s.as_bytes();
            let at = scan::joined_split(t)?;
            unfit(&t[..at], &t[at + 1..], longest, prefix)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_that_fit_and_that_do_not() {
        assert_eq!(unfit(b"ab", b"c", 3, ""), None);
        assert_eq!(unfit(b"ab", b"##c", 3, "##"), None);
        let long = unfit(b"ab", b"cd", 3, "").unwrap();
        assert_eq!(
            long,
            r#"merge "ab" "cd" joins into 4 bytes, more than the longest vocab token (3)"#
        );
        let short = unfit(b"a", b"#", 9, "##").unwrap();
        assert!(short.contains(r###"shorter than the continuing_subword_prefix "##""###));
        // "é" is two bytes: a two-byte prefix taken off "xé" cuts it.
        let cut = unfit(b"a", "xé".as_bytes(), 9, "##").unwrap();
        assert!(cut.ends_with(r###"taking the continuing_subword_prefix "##" off its second part cuts a character"###), "{cut}");
        assert_eq!(unfit(b"a", "xyé".as_bytes(), 9, "##"), None);
    }

    #[test]
    fn merges_found_by_the_scan_or_by_serde() {
        let file = |model: &str| format!(r#"{{"model": {{{model}}}}}"#);
        let unfit_in = |text: &str| unfit_in_file(text.as_bytes(), 2, "");
        for fits in [
            file(r#""vocab": {"a": 0, "ab": 1}, "merges": [["a", "b"]]"#),
            file(r##""merges": ["#version: 0.2", "a b"]"##),
        ] {
            assert_eq!(unfit_in(&fits), None, "{fits}");
        }
        for long in [
            file(r#""vocab": {}, "merges": [["a", "b"], ["ab", "c"]]"#),
            file(r#""merges": ["a b", "ab c"]"#),
            // Keys with escapes: the scan does not find the merges, serde does.
            file(r#""merg\u0065s": [["a", "b"], ["ab", "c"]]"#),
            file(r#""merg\u0065s": ["a b", "ab c"]"#),
        ] {
            let found = unfit_in(&long).unwrap_or_else(|| panic!("{long}"));
            assert!(
                found.starts_with(r#"merge "ab" "c" joins into 3"#),
                "{found}"
            );
        }
        assert_eq!(unfit_in(&file(r#""merges": [["ab", "c", "d"]]"#)), None);
        assert_eq!(unfit_in("[]"), None);
    }
}
