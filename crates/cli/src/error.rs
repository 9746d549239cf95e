//! How a command fails: bad input (exit status 2) or a failure while doing the work (exit 1).
//! `main` prints exactly one line, `wirerate: <message>`, on stderr.

use std::fmt;

#[derive(Debug)]
pub enum CliError {
    /// The user asked for something invalid; the message says what and how to fix it. Exit 2.
    Usage(String),
    /// A valid request failed while running (I/O, a child process, the kernel). Exit 1.
    Failed(String),
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failed(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => f.write_str(m),
        }
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

/// A `bench` error keeps its kind: bad input exits 2, a failure 1.
impl From<bench::BenchError> for CliError {
    fn from(e: bench::BenchError) -> CliError {
        match e {
            bench::BenchError::Usage(m) => CliError::Usage(m),
            bench::BenchError::Failed(m) => CliError::Failed(m),
        }
    }
}
