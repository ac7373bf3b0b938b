//! The reference set of `undertrained`: rows known to be untrained, given
//! with `--reference` as ids and ranges, or found automatically (see
//! `score::reference`).

use crate::score::reference::{Reference, auto};
use crate::vocab::Vocab;
use crate::{Error, Result};

/// What `--reference` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceSpec {
    /// Reserved placeholders and rows without a token.
    Auto,
    /// Inclusive id ranges as written (`5` is `5-5`), checked against the
    /// matrix when resolved.
    Ids(Vec<(u64, u64)>),
}

/// Resolves `spec` against a matrix of `rows` rows named `name`.
pub(crate) fn resolve(
    spec: &ReferenceSpec,
    vocab: Option<&Vocab>,
    rows: usize,
    name: &str,
) -> Result<Reference> {
    match spec {
        ReferenceSpec::Auto => Ok(auto(vocab, rows)),
        ReferenceSpec::Ids(ranges) => {
            if let Some(&(_, b)) = ranges.iter().find(|&&(_, b)| b >= rows as u64) {
                return Err(Error::IdOutOfRange {
                    flag: Some("--reference"),
                    id: b,
                    tensor: name.to_string(),
                    rows,
                });
            }
            // In order of their starts, each id listed once: however many
            // ranges repeat, the list stays within the matrix's rows.
            let mut sorted = ranges.clone();
            sorted.sort_unstable();
            let mut ids: Vec<u32> = Vec::new();
            for (a, b) in sorted {
                let start = a.max(ids.last().map_or(0, |&last| u64::from(last) + 1));
                if start <= b {
                    ids.extend(start as u32..=b as u32);
                }
            }
            Ok(Reference {
                ids,
                ..Reference::default()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_ids_are_range_checked() {
        let spec = ReferenceSpec::Ids(vec![(3, 4), (1, 1), (4, 4)]);
        assert_eq!(resolve(&spec, None, 5, "w").unwrap().ids, vec![1, 3, 4]);
        let err = resolve(&spec, None, 4, "w").unwrap_err();
        assert!(matches!(err, Error::IdOutOfRange { id: 4, .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "--reference: id 4 is out of range: `w` has 4 rows (ids 0..=3)"
        );
    }
}
