//! What `embscope man` and `embscope completions` print: one man page for
//! the whole tool (every command with its options, the exit status, the
//! environment it reads) and the completion scripts, both made from the
//! clap definitions so they cannot drift from the parser.

use std::io::{self, Write};

use clap::CommandFactory;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};

use super::args::Cli;

/// The exit codes and what each means.
const EXIT_STATUS: [(&str, &str); 3] = [
    (
        "0",
        "Success. A closed output pipe (embscope ... | head) also ends with 0.",
    ),
    (
        "1",
        "check found something at or above --fail-on; tensors --filter matched no tensor; \
         diff found a difference in the vocabulary layers or the tokenizer.",
    ),
    (
        "2",
        "Bad usage or bad input: a flag or value the command does not take, a model that \
         cannot be found or read, a malformed file, a file changed while it was read, an \
         unknown token, an id out of range. One line on stderr says what. In neighbors \
         --batch, each line that cannot be answered is one such line, with its number, \
         and the other lines are answered.",
    ),
];

/// Every environment variable embscope reads, and what it changes.
const ENVIRONMENT: [(&str, &str); 9] = [
    (
        "NO_COLOR",
        "Set and not empty: no colour with --color auto.",
    ),
    ("CLICOLOR", "0: no colour with --color auto."),
    (
        "CLICOLOR_FORCE",
        "Set and not 0: colour even into a pipe or file with --color auto (NO_COLOR wins).",
    ),
    (
        "HF_HUB_CACHE",
        "The Hugging Face hub cache, where a Hub id (org/name) is looked up.",
    ),
    (
        "HF_HOME",
        "Without HF_HUB_CACHE, the hub cache is HF_HOME/hub.",
    ),
    (
        "XDG_CACHE_HOME",
        "Without either, the hub cache is XDG_CACHE_HOME/huggingface/hub, \
         else ~/.cache/huggingface/hub.",
    ),
    (
        "OLLAMA_MODELS",
        "The Ollama store, where an Ollama name (llama3.2:1b) is looked up; \
         else ~/.ollama/models, then /usr/share/ollama/.ollama/models.",
    ),
    (
        "EMBSCOPE_KERNEL",
        "The search kernel neighbors runs, by the name embscope -v neighbors prints; \
         unset or empty, a short trial on the first rows picks the fastest the CPU runs.",
    ),
    (
        "EMBSCOPE_CPU_MASK",
        "CPU features the fast paths may not use, comma-separated (amx,avx512vnni): \
         runs this CPU as one without them.",
    ),
];

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "embscope", &mut out);
    out
}

/// The man page, as roff: clap_mangen's sections for the tool, then
/// COMMANDS with each command's synopsis, description and options in this
/// one page (clap_mangen would name a page per command, which nothing
/// installs), EXIT STATUS and ENVIRONMENT.
pub fn man_page() -> io::Result<Vec<u8>> {
    let cli = Cli::command();
    let man = Man::new(cli.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    writeln!(out, ".SH COMMANDS")?;
    for sub in cli.get_subcommands() {
        let name = format!("embscope {}", sub.get_name());
        let man = Man::new(sub.clone().bin_name(&name));
        let mut section = Vec::new();
        man.render_synopsis_section(&mut section)?;
        man.render_description_section(&mut section)?;
        man.render_options_section(&mut section)?;
        Roff::new()
            .control("SS", [name.as_str()])
            .to_writer(&mut out)?;
        // The command's own headings would sit beside the page's: dropped,
        // its parts set apart by paragraph breaks instead.
        for line in String::from_utf8_lossy(&section).lines() {
            if line.starts_with(".SH ") {
                writeln!(out, ".PP")?;
            } else {
                writeln!(out, "{line}")?;
            }
        }
    }
    let mut roff = Roff::new();
    for (heading, entries) in [
        ("EXIT STATUS", &EXIT_STATUS[..]),
        ("ENVIRONMENT", &ENVIRONMENT[..]),
    ] {
        roff.control("SH", [heading]);
        for (name, what) in entries {
            roff.control("TP", [])
                .text([bold(*name)])
                .text([roman(*what)]);
        }
    }
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(once_defined(&String::from_utf8_lossy(&out)).into_bytes())
}

/// `page` with its string definitions (`.ie`/`.el` lines, which every
/// section rendered apart starts with) kept at their first place only.
fn once_defined(page: &str) -> String {
    let mut seen = Vec::new();
    let mut out = String::with_capacity(page.len());
    for line in page.lines() {
        if line.starts_with(".ie ") || line.starts_with(".el ") {
            if seen.contains(&line) {
                continue;
            }
            seen.push(line);
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
