//! The error of parsing a name from a fixed set (a backend, a mode) from the command line:
//! which set, what was given and the names that would do, as
//! `unknown backend "dpdk" (auto, af_packet, xdp)`. One type, so every such `FromStr` in
//! the engine and in the crates over it (`tester-bench`) says it the same way and none
//! hands a bare `String` across a crate boundary.

use std::fmt;

/// `given` is not one of the names of `what`; `choices` lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named (`"backend"`, `"TX backend"`, …).
    pub what: &'static str,
    /// The text given.
    pub given: String,
    /// The names that would do, as the message lists them.
    pub choices: &'static str,
}

impl UnknownName {
    pub fn new(what: &'static str, given: &str, choices: &'static str) -> UnknownName {
        UnknownName {
            what,
            given: given.to_string(),
            choices,
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} {:?} ({})",
            self.what, self.given, self.choices
        )
    }
}

impl std::error::Error for UnknownName {}

#[cfg(test)]
mod tests {
    use super::UnknownName;

    #[test]
    fn the_message_names_the_set_the_text_and_the_choices() {
        let e = UnknownName::new("backend", "dp\"dk", "auto, af_packet, xdp");
        assert_eq!(
            e.to_string(),
            r#"unknown backend "dp\"dk" (auto, af_packet, xdp)"#
        );
    }
}
