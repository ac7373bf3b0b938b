//! The `size` scenarios the report's summary compares with the files:
//! the other tie (what tying saves, or what untying costs), the
//! vocabulary trimmed to the tokenizer when the matrices are padded past
//! it, and a vocabulary twice as large (what a multilingual extension
//! costs). Each is `size` with its what-if flags, so the page's figures
//! are that command's.

use serde::Serialize;

use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::cmd::size::{self, Scenario, SizeReport};
use crate::roles::{Roles, TieStatus};

/// One scenario.
#[derive(Debug, Serialize)]
pub struct WhatIf {
    /// The `size` flags that ask for it (`--tie`, `--vocab 256512`).
    pub flags: String,
    /// `size` with those flags.
    pub size: SizeReport,
}

/// The scenarios for a model whose `size` is `stored`, with `tokenizer`
/// ids (when there is a tokenizer).
pub fn scenarios(
    ckpt: &Checkpoint,
    roles: &Roles,
    stored: &SizeReport,
    tokenizer: Option<usize>,
) -> Result<Vec<WhatIf>> {
    let mut out = Vec::new();
    let rows = (stored.embedding.as_deref())
        .and_then(|name| ckpt.tensor(name))
        .map(|t| t.shape[0] as u64);
    let Some(rows) = rows else {
        return Ok(out);
    };
    let mut add = |flags: String, scenario: Scenario| -> Result<()> {
        let size = size::run(ckpt, roles, &scenario)?;
        out.push(WhatIf { flags, size });
        Ok(())
    };
    match roles.tie.status {
        TieStatus::Untied | TieStatus::TiedHeadStored => add(
            "--tie".into(),
            Scenario {
                tied: Some(true),
                ..Scenario::default()
            },
        )?,
        TieStatus::Tied => add(
            "--untie".into(),
            Scenario {
                tied: Some(false),
                ..Scenario::default()
            },
        )?,
        TieStatus::UntiedHeadMissing | TieStatus::NoHead | TieStatus::VocabOnly => {}
    }
    if let Some(n) = tokenizer.map(|n| n as u64).filter(|&n| n > 0 && n < rows) {
        add(
            format!("--vocab {n}"),
            Scenario {
                vocab: Some(n),
                ..Scenario::default()
            },
        )?;
    }
    let twice = rows * 2;
    add(
        format!("--vocab {twice}"),
        Scenario {
            vocab: Some(twice),
            ..Scenario::default()
        },
    )?;
    Ok(out)
}
