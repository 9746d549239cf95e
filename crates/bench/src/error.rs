//! How a `bench` call fails, in the one split the CLI turns into its exit status: the user's
//! input (a flag, a plan value, a file; exit 2) or a failure while doing the work (a socket, a
//! child process, the kernel; exit 1). The message is what the user reads, word for word.
//!
//! One type for the session machines, the trial executor and the testbed, so that the CLI
//! maps one `bench` error to its own instead of one per module.

use std::fmt;

/// Why a `bench` call did not do its work; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchError {
    /// The user's to fix: the message names the flag, key or file and what would work.
    Usage(String),
    /// A valid request failed while running.
    Failed(String),
}

impl BenchError {
    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            BenchError::Usage(m) | BenchError::Failed(m) => m,
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for BenchError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_printed_as_is_whatever_the_kind() {
        let usage = BenchError::Usage("--rate: expected a number".into());
        let failed = BenchError::Failed("socket: permission denied".into());
        assert_eq!(usage.to_string(), "--rate: expected a number");
        assert_eq!(failed.to_string(), "socket: permission denied");
        assert_ne!(
            usage,
            BenchError::Failed("--rate: expected a number".into())
        );
    }
}
