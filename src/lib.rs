//! embscope: inspect the vocabulary layers of a language-model checkpoint.
//!
//! Data flows one way: [`checkpoint`] locates and maps the files
//! (safetensors, or one GGUF file read through candle), reads the config
//! and indexes every tensor; [`roles`] decides which tensor is the
//! embedding and which the head; [`vocab`] reads the tokenizer files;
//! [`matrix`] gives typed rows over the mapped bytes; what several commands
//! share sits below them ([`stream`] reads a matrix's rows in one parallel
//! pass, [`search`] finds the nearest ones, [`query`] resolves queries to
//! rows, `rows` holds the per-row loops, [`score`] how untrained each row
//! looks); the [`cmd`] modules compute plain reports,
//! none importing another, and [`report`] makes one page of several;
//! [`render`] prints them as text, JSON or pictures. On top,
//! [`cli`] parses the command line with clap and resolves it once into the
//! plain requests these modules take, so nothing below it knows clap;
//! [`usage`] holds its conventions (value parsers, one-line argument
//! errors). Both readers of files, [`checkpoint`] and [`vocab`], open
//! only regular files (`regular_file`) and map them through `mapped`,
//! which turns a read of a file truncated meanwhile into a one-line error.

mod aligned;
pub mod alloc_budget;
pub mod checkpoint;
pub mod cli;
pub mod cmd;
mod cpu;
pub mod dtype;
pub mod error;
mod mapped;
pub mod matrix;
mod median;
pub mod progress;
pub mod query;
mod regular_file;
pub mod render;
pub mod report;
pub mod roles;
mod rows;
mod same_hash;
pub mod score;
pub mod search;
pub mod stream;
mod units;
pub mod usage;
pub mod vocab;

pub use error::{Error, Result};
