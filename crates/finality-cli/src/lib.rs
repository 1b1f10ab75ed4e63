//! The binary's configuration file as a library, so it can be reached from
//! outside the binary: the `config_loader` fuzz target (`fuzz/`) feeds it
//! arbitrary files. Everything else of the binary stays in `main.rs`.
#![forbid(unsafe_code)]

pub mod config;
