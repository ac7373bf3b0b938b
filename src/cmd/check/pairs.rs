//! Related token pairs of a vocabulary, for `related`: a word with and
//! without its leading-space marker (`Ġ`, `▁`, a space, or WordPiece's
//! `##` for the piece inside a word), a lower-case word and its
//! capitalised form, a token and its plural (the token with an `s`), and
//! the ten digits with each other. A model's own tokenizer puts the
//! members of such pairs close in a trained matrix; a tokenizer from
//! another model pairs rows that have nothing to do with each other.
//!
//! Only ordinary entries of the model vocabulary count (added tokens are
//! specials or placeholders), with ids within the matrix, and words of
//! three letters or more. The entries are visited in an order spread
//! over the whole vocabulary, and each class stops at [`CAP`] pairs: a
//! few thousand rows to read, however large the vocabulary.

use foldhash::HashMap;

use crate::vocab::Vocab;

/// Pairs taken of each class at most.
pub(crate) const CAP: usize = 500;

/// The kind of relation between the two tokens of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Class {
    /// A word with and without its leading-space marker.
    Space,
    /// A lower-case word and its capitalised form.
    Case,
    /// A token and the token with an `s`.
    Plural,
    /// Two digits.
    Digits,
}

impl Class {
    /// The classes of words (not digits), in report order.
    pub(crate) const WORDS: [Class; 3] = [Class::Space, Class::Case, Class::Plural];

    /// The lowercase name, as JSON spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Space => "space",
            Class::Case => "case",
            Class::Plural => "plural",
            Class::Digits => "digits",
        }
    }
}

/// Leading-space markers of the tokenizer kinds: byte-level BPE's `Ġ`,
/// SentencePiece's `▁`, a plain space (tokenizers that store text), and
/// WordPiece's `##` (which marks the other member: the piece inside a
/// word; either way the two differ by the marker).
const MARKERS: [&str; 4] = ["Ġ", "▁", " ", "##"];

/// The related pairs of each class in `vocab`, as (id, id) with both ids
/// below `rows`: each word class up to [`CAP`] pairs, then the digits.
pub(crate) fn pairs(vocab: &Vocab, rows: usize) -> Vec<(Class, Vec<(u32, u32)>)> {
    // The first entry of each string, as the tokenizer's lookup has it.
    let mut entries: Vec<(&str, u32)> = Vec::new();
    let mut ids: HashMap<&str, u32> = HashMap::default();
    for (token, id) in vocab.model_entries() {
        if (id as usize) < rows && !ids.contains_key(token) {
            ids.insert(token, id);
            entries.push((token, id));
        }
    }
    let mut found = Class::WORDS.map(|c| (c, Vec::new()));
    let full = |found: &[(Class, Vec<(u32, u32)>); 3]| found.iter().all(|(_, p)| p.len() >= CAP);
    let n = entries.len();
    let step = spread_step(n);
    for k in 0..n {
        if full(&found) {
            break;
        }
        let (token, id) = entries[k * step % n];
        let (marker, word) = strip_marker(token);
        if word.chars().count() < 3 || !word.chars().all(char::is_alphabetic) {
            continue;
        }
        let mut add = |class: usize, other: &str| {
            let list = &mut found[class].1;
            if list.len() < CAP
                && let Some(&other) = ids.get(other)
            {
                list.push((id, other));
            }
        };
        if !marker.is_empty() {
            add(0, word);
        }
        let mut chars = word.chars();
        if let Some(first) = chars.next().filter(|c| c.is_lowercase()) {
            let capital: String = first.to_uppercase().chain(chars).collect();
            add(1, &format!("{marker}{capital}"));
        }
        add(2, &format!("{token}s"));
    }
    let digits: Vec<u32> = (0..10)
        .filter_map(|d| ids.get(d.to_string().as_str()).copied())
        .collect();
    let digit_pairs = digits
        .iter()
        .enumerate()
        .flat_map(|(i, &a)| digits[i + 1..].iter().map(move |&b| (a, b)))
        .collect();
    let mut out: Vec<(Class, Vec<(u32, u32)>)> = found.into();
    out.push((Class::Digits, digit_pairs));
    out
}

/// `token` split into its leading-space marker (empty without one) and
/// the rest.
fn strip_marker(token: &str) -> (&str, &str) {
    MARKERS
        .iter()
        .find_map(|m| token.strip_prefix(m).map(|rest| (*m, rest)))
        .unwrap_or(("", token))
}

/// A step through `n` items that visits each once (`k * step % n` for
/// `k < n`) and lands far apart at each turn: near `n` over the golden
/// ratio, and prime to `n`.
fn spread_step(n: usize) -> usize {
    if n < 2 {
        return 1;
    }
    let mut step = ((n as f64 * 0.618_033_988_75) as usize).max(1);
    while gcd(step, n) != 1 {
        step += 1;
    }
    step
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_step_visits_every_item_once() {
        for n in [1, 2, 3, 10, 97, 128, 1000, 30522] {
            let step = spread_step(n);
            let mut seen: Vec<usize> = (0..n).map(|k| k * step % n).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{n}");
        }
    }

    #[test]
    fn markers_come_off_the_front_only() {
        assert_eq!(strip_marker("Ġking"), ("Ġ", "king"));
        assert_eq!(strip_marker("▁King"), ("▁", "King"));
        assert_eq!(strip_marker("##ing"), ("##", "ing"));
        assert_eq!(strip_marker(" cat"), (" ", "cat"));
        assert_eq!(strip_marker("kingĠ"), ("", "kingĠ"));
    }

    #[test]
    fn pairs_of_each_class_are_found_within_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = [
            "Ġking", "king", "ĠKing", "Ġkings", "Ġqueen", "queen", "##ing", "ing", "0", "1", "2",
            "Ġab", "ab", "Ġdog", "dog",
        ];
        let vocab: Vec<String> = (tokens.iter().enumerate())
            .map(|(i, t)| format!("{t:?}: {i}"))
            .collect();
        let json = format!(
            r#"{{"model": {{"type": "WordLevel", "unk_token": "0", "vocab": {{{}}}}}}}"#,
            vocab.join(", ")
        );
        std::fs::write(dir.path().join("tokenizer.json"), json).unwrap();
        let v = Vocab::load(dir.path(), None).unwrap().unwrap();
        let found = |rows: usize| -> Vec<(Class, Vec<(u32, u32)>)> {
            let mut out = pairs(&v, rows);
            for (_, p) in &mut out {
                p.sort_unstable();
            }
            out
        };
        let all = found(tokens.len());
        assert_eq!(
            all,
            [
                (Class::Space, vec![(0, 1), (4, 5), (6, 7), (13, 14)]),
                (Class::Case, vec![(0, 2)]),
                (Class::Plural, vec![(0, 3)]),
                (Class::Digits, vec![(8, 9), (8, 10), (9, 10)]),
            ]
        );
        // Rows past the matrix have no place in a pair.
        let cut = found(5);
        assert_eq!(cut[0].1, [(0, 1)]);
        assert_eq!(cut[1].1, [(0, 2)]);
        assert!(cut[3].1.is_empty());
    }
}
