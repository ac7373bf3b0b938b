//! Queries resolved to rows: a word (through the vocabulary's word forms),
//! `=entry` (that entry exactly), `#ID`, a text (encoded by the
//! tokenizer), and expressions of terms joined by `+` and `-`
//! (`king - man + woman`); with the errors every command that takes
//! tokens gives alike: a tokenizer that is needed and missing, a text that
//! encodes to nothing, a token that is not in the vocabulary (with close
//! entries). `lookup` and `neighbors` take their rows from here.

use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::matrix::Matrix;
use crate::vocab::{Vocab, WordMatch};
use crate::{Error, Result};

/// One query as the user wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum QuerySpec {
    /// A token, `#ID` or `a - b + c` expression.
    Expr(String),
    /// A text whose token rows are averaged (`--text`).
    Text(String),
}

impl QuerySpec {
    /// Whether resolving it needs the tokenizer: a text, or an expression
    /// with a term that is not an `#ID` (a malformed one too, whose error
    /// may name the vocabulary).
    pub fn needs_vocab(&self) -> bool {
        match self {
            QuerySpec::Text(_) => true,
            QuerySpec::Expr(e) => parse_expression(e)
                .map_or(true, |terms| terms.iter().any(|(_, w)| row_id(w).is_none())),
        }
    }
}

/// One resolved term of a query.
#[derive(Debug, Clone, Serialize)]
pub struct Term {
    /// `+1` or `-1`.
    pub sign: i8,
    /// The term as written.
    pub text: String,
    /// The row used (for `--text`, every token's row).
    pub ids: Vec<u32>,
}

/// A query resolved: its terms and the vector it stands for.
#[derive(Debug)]
pub struct Resolved {
    /// The terms, each with its rows.
    pub terms: Vec<Term>,
    /// A single term's row as stored; the mean of a text's rows; for an
    /// expression, the mean of its terms' unit rows, signed (gensim's
    /// `most_similar`).
    pub vector: Vec<f32>,
}

/// Resolves `q` against the rows of `m`, adding to `notes` how words were
/// resolved when it was not as written.
pub fn resolve(
    ckpt: &Checkpoint,
    m: &Matrix,
    vocab: Option<&Vocab>,
    q: &QuerySpec,
    notes: &mut Vec<String>,
) -> Result<Resolved> {
    match q {
        QuerySpec::Text(text) => {
            let ids = encode_text(ckpt, vocab, text, false, "query rows as #ID")?;
            let mut mean = vec![0f32; m.cols()];
            for &id in &ids {
                let row = m.checked_row(u64::from(id))?;
                mean.iter_mut().zip(&row).for_each(|(a, b)| *a += b);
            }
            let n = ids.len() as f32;
            mean.iter_mut().for_each(|x| *x /= n);
            Ok(Resolved {
                terms: vec![Term {
                    sign: 1,
                    text: text.clone(),
                    ids,
                }],
                vector: mean,
            })
        }
        QuerySpec::Expr(expr) => {
            let parts = parse_expression(expr)?;
            let single = parts.len() == 1 && parts[0].0 == 1;
            let mut terms = Vec::with_capacity(parts.len());
            let mut sum = vec![0f32; m.cols()];
            for (sign, word) in parts {
                let id = term_id(ckpt, vocab, &word, notes)?;
                let row = m.checked_row(id)?;
                // In range, and Matrix::new keeps rows within u32.
                let id = id as u32;
                if single {
                    sum = row;
                } else {
                    // gensim's most_similar: unit-normalise each term, then average.
                    let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
                    if norm > 0.0 {
                        let w = f32::from(sign) / norm;
                        sum.iter_mut().zip(&row).for_each(|(a, b)| *a += w * b);
                    }
                }
                terms.push(Term {
                    sign,
                    text: word,
                    ids: vec![id],
                });
            }
            if !single {
                let n = terms.len() as f32;
                sum.iter_mut().for_each(|x| *x /= n);
            }
            Ok(Resolved { terms, vector: sum })
        }
    }
}

/// Splits `king - man + woman` into signed terms. Operators need spaces
/// around them, so `e-mail` and `C++` stay single terms. A query typed
/// with a leading space (`" king"`) keeps it on its first term, which then
/// asks for the leading-space entry (see [`Vocab::resolve_word`]).
pub fn parse_expression(expr: &str) -> Result<Vec<(i8, String)>> {
    let mut terms = Vec::new();
    let mut sign = 1i8;
    let mut current: Vec<&str> = Vec::new();
    let mut after_operator = false;
    for w in expr.split_whitespace() {
        if w == "+" || w == "-" {
            if !current.is_empty() {
                terms.push((sign, current.join(" ")));
                current.clear();
            } else if after_operator {
                return Err(Error::BadInput(format!(
                    "expression `{expr}`: operator `{w}` follows another operator"
                )));
            } else {
                return Err(Error::BadInput(format!(
                    "expression `{expr}` starts with an operator; for the entry `{w}` write `={w}`"
                )));
            }
            sign = if w == "-" { -1 } else { 1 };
            after_operator = true;
        } else {
            current.push(w);
            after_operator = false;
        }
    }
    if current.is_empty() {
        return Err(Error::BadInput(if after_operator {
            format!("expression `{expr}` ends with an operator")
        } else {
            format!("query `{expr}` is empty")
        }));
    }
    terms.push((sign, current.join(" ")));
    // `#ID` and `=entry` name their row themselves.
    if expr.starts_with(' ') && !terms[0].1.starts_with(['#', '=']) {
        terms[0].1.insert(0, ' ');
    }
    Ok(terms)
}

/// The row of a query that names one token (`#ID`, a word, `=entry`), as
/// [`resolve`] finds the row of a term, checked against the rows of `m`;
/// an expression of several terms is an error. Reads no row.
pub fn token_row(
    ckpt: &Checkpoint,
    m: &Matrix,
    vocab: Option<&Vocab>,
    query: &str,
    notes: &mut Vec<String>,
) -> Result<u32> {
    let terms = parse_expression(query)?;
    let [(1, word)] = &terms[..] else {
        return Err(Error::BadInput(format!(
            "`{query}` is an expression of {} terms, not one token",
            terms.len()
        )));
    };
    let id = term_id(ckpt, vocab, word, notes)?;
    if id >= m.rows() as u64 {
        // The error naming the id and the matrix's rows.
        m.checked_row(id)?;
    }
    // In range, and Matrix::new keeps rows within u32.
    Ok(id as u32)
}

/// The row of one term: `#ID`, or a word resolved in the vocabulary.
fn term_id(
    ckpt: &Checkpoint,
    vocab: Option<&Vocab>,
    word: &str,
    notes: &mut Vec<String>,
) -> Result<u64> {
    if let Some(id) = row_id(word) {
        return id;
    }
    let v = need_vocab(ckpt, vocab, &format!("query `{word}`"), "query rows as #ID")?;
    if let Some(found) = v.resolve_word(word)? {
        notes.extend(resolution_notes(v, word, &found));
        return Ok(u64::from(found.id));
    }
    if let Some(exact) = word.strip_prefix('=').filter(|e| !e.is_empty()) {
        return Err(unknown_token(v, exact));
    }
    // Not one entry: say what it is made of, when the tokenizer can tell.
    if let Ok(ids) = v.encode(word, false)
        && ids.len() > 1
    {
        let pieces: Vec<String> = ids
            .iter()
            .map(|&id| format!("`{}`", v.readable(id).unwrap_or_else(|| format!("#{id}"))))
            .collect();
        return Err(Error::BadInput(format!(
            "`{word}` is not one vocabulary entry but {} tokens ({}); to average them use --text {word:?}",
            ids.len(),
            pieces.join(" ")
        )));
    }
    Err(unknown_token(v, word))
}

/// The notes on how `word` resolved, when it was not taken as written or
/// another entry could be meant: the normalisation the tokenizer applied
/// to it (then the rest is said of the normalised word), the piece a bare
/// word passed over, the entry `==` itself when `==` asked for the entry
/// `=`, or an entry whose text is not the word (an entry stored in
/// another form whose text is the word, byte-level `åĮĹäº¬` for `北京` or
/// `Ġking` for ` king`, needs no note).
fn resolution_notes(v: &Vocab, typed: &str, found: &WordMatch) -> Vec<String> {
    let (id, raw) = (found.id, &found.raw);
    let mut notes = Vec::new();
    let word = match &found.normalized {
        Some(n) => {
            notes.push(format!(
                "{:?} normalised to {:?} as the tokenizer does",
                typed.trim_start_matches(' '),
                n.trim_start_matches(' ')
            ));
            n.as_str()
        }
        None => typed,
    };
    if let Some((piece, piece_raw)) = &found.piece {
        notes.push(format!(
            "{word:?} resolved to {raw:?} (#{id}, the word); for the piece {piece_raw:?} (#{piece}) write \"={word}\""
        ));
    } else if word.starts_with('=') {
        notes.extend(v.entry_id(word).filter(|&other| other != id).map(|other| {
            format!("{word:?} is the entry {raw:?} (#{id}); for the entry {word:?} (#{other}) write \"={word}\"")
        }));
    } else if raw != word && v.readable(id).as_deref() != Some(word) {
        notes.push(format!("{word:?} resolved to {raw:?} (#{id})"));
    }
    notes
}

/// The row of a `#ID` term, `None` for other terms.
fn row_id(word: &str) -> Option<Result<u64>> {
    let digits = word.strip_prefix('#')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Err(Error::BadInput(format!(
            "#ID takes a non-negative integer, got {word:?}; for the vocabulary entry write \"={word}\""
        ))));
    }
    // Digits only: parsing fails on overflow alone.
    Some(
        digits
            .parse::<u64>()
            .map_err(|_| Error::BadInput(format!("`{word}` is not a row id: more than 64 bits"))),
    )
}

/// The vocabulary, or an error saying a tokenizer is needed for `what`
/// and what to do `instead`.
pub fn need_vocab<'v>(
    ckpt: &Checkpoint,
    vocab: Option<&'v Vocab>,
    what: &str,
    instead: &str,
) -> Result<&'v Vocab> {
    vocab.ok_or_else(|| Error::NoVocab {
        what: what.to_string(),
        missing: ckpt.no_vocab(),
        instead: instead.to_string(),
    })
}

/// The token ids of `--text`: an error when there is no tokenizer, the
/// text is empty, or it encodes to no tokens (whitespace is text: `" "`
/// and `"\n"` are tokens in byte-level vocabularies).
pub fn encode_text(
    ckpt: &Checkpoint,
    vocab: Option<&Vocab>,
    text: &str,
    add_special_tokens: bool,
    instead: &str,
) -> Result<Vec<u32>> {
    let v = need_vocab(ckpt, vocab, "--text", instead)?;
    if text.is_empty() {
        return Err(Error::BadInput("--text is empty".into()));
    }
    let ids = v.encode(text, add_special_tokens)?;
    if ids.is_empty() {
        return Err(Error::BadInput(format!(
            "--text {text:?} encodes to no tokens"
        )));
    }
    Ok(ids)
}

/// A vocabulary entry's id, exactly as written, or an error with close
/// entries.
pub fn token_id(vocab: &Vocab, token: &str) -> Result<u32> {
    vocab
        .entry_id(token)
        .ok_or_else(|| unknown_token(vocab, token))
}

/// The error for a token that is not in the vocabulary, with close entries.
pub fn unknown_token(vocab: &Vocab, token: &str) -> Error {
    let close: Vec<String> = vocab
        .suggest(token, 5)
        .into_iter()
        .map(|(id, raw)| format!("`{raw}` (#{id})"))
        .collect();
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!("; close entries: {}", close.join(", "))
    };
    Error::UnknownToken {
        token: token.to_string(),
        vocab: vocab.file().to_path_buf(),
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        let ok = |s: &str| parse_expression(s).unwrap();
        assert_eq!(ok("Paris"), [(1, "Paris".to_string())]);
        assert_eq!(
            ok("king - man + woman"),
            [(1, "king".into()), (-1, "man".into()), (1, "woman".into())]
        );
        assert_eq!(ok("e-mail"), [(1, "e-mail".to_string())]);
        assert_eq!(ok("C++"), [(1, "C++".to_string())]);
        assert_eq!(ok(" king"), [(1, " king".to_string())]);
        assert_eq!(ok(" #5"), [(1, "#5".to_string())]);
        assert_eq!(
            ok(" king  -  man"),
            [(1, " king".into()), (-1, "man".into())]
        );
        for bad in ["", "   ", "king -", "king + + man", "- man", "+ man", "-"] {
            assert!(parse_expression(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_ids_need_no_vocabulary() {
        let expr = |s: &str| QuerySpec::Expr(s.into());
        assert!(!expr("#5").needs_vocab());
        assert!(!expr("#5 - #7 + #1").needs_vocab());
        assert!(expr("#5 - king").needs_vocab());
        assert!(expr("=#5").needs_vocab());
        assert!(expr("king -").needs_vocab());
        assert!(QuerySpec::Text("#5".into()).needs_vocab());
    }
}
