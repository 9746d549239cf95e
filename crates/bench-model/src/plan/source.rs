//! Where a plan error is: file, line, column and key, plus a "did you mean" hint.
//!
//! TOML parsers report byte offsets; people read lines. Every error the plan checker produces
//! goes through [`PlanError`] so `wirerate plan check` can print `plan.toml:12:1: key: message`.

use core::fmt;
use core::ops::Range;

/// One problem in a plan file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    /// The plan file as given.
    pub file: String,
    /// 1-based line (0 when the file could not be read at all).
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Dotted key path, e.g. `dut.profiles.napt.setup[0]` (empty for syntax errors).
    pub key: String,
    /// What is wrong.
    pub message: String,
    /// A suggestion, e.g. the key that was probably meant.
    pub hint: Option<String>,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0: the file as a whole (it could not be read).
        match self.line {
            0 => write!(f, "{}: ", self.file)?,
            _ => write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?,
        }
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanError {}

/// All problems found in a plan (the checker keeps going after the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanErrors(pub Vec<PlanError>);

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanErrors {}

/// 1-based (line, column) of byte `offset` in `src`; column counts characters.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = src.get(..offset).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Builds [`PlanError`]s for one source text.
#[derive(Debug)]
pub(crate) struct Source<'s> {
    pub(crate) text: &'s str,
    pub(crate) file: String,
    pub(crate) errors: Vec<PlanError>,
}

impl<'s> Source<'s> {
    pub(crate) fn new(text: &'s str, file: &str) -> Source<'s> {
        Source {
            text,
            file: file.to_string(),
            errors: Vec::new(),
        }
    }

    pub(crate) fn error(
        &mut self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        let (line, column) = line_col(self.text, span.start);
        self.errors.push(PlanError {
            file: self.file.clone(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
            hint,
        });
    }

    pub(crate) fn line(&self, offset: usize) -> usize {
        line_col(self.text, offset).0
    }
}

/// Levenshtein distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `given`, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (given.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (distance(given, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_from_offsets() {
        let s = "a = 1\nbé = 2\n";
        assert_eq!(line_col(s, 0), (1, 1));
        assert_eq!(line_col(s, 6), (2, 1));
        assert_eq!(line_col(s, 9), (2, 3), "é is one column, two bytes");
        assert_eq!(line_col(s, 999), (3, 1));
    }

    #[test]
    fn suggestions() {
        let keys = ["trial-duration", "repetitions", "settle"];
        assert_eq!(did_you_mean("trial-duraton", keys), Some("trial-duration"));
        assert_eq!(did_you_mean("repetition", keys), Some("repetitions"));
        assert_eq!(did_you_mean("colour", keys), None);
    }
}
