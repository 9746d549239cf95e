//! Reading and checking a plan: from text or a file, with or without the matrix expanded, and
//! the subscriber tables its PPPoE ports name.

use std::path::Path;

use super::case::Case;
use super::parse;
use super::source::{PlanError, PlanErrors};
use super::Plan;

impl Plan {
    /// Parses and checks plan `text`; `file` is used in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Plan, PlanErrors> {
        Ok(Plan::parse_expanded(text, file)?.0)
    }

    /// [`Plan::parse`], keeping the cases its check expanded: a run expands its matrix once
    /// and hands these down (estimate, preflight, runner, `run.json`).
    pub fn parse_expanded(text: &str, file: &str) -> Result<(Plan, Vec<Case>), PlanErrors> {
        let plan = parse::parse(text, file)?;
        // Expansion problems (duplicate cases) are plan errors too.
        let cases = plan.cases()?;
        Ok((plan, cases))
    }

    /// The plan's structure only, without the matrix expansion [`Plan::parse`] checks: for
    /// comparing a stored plan with the one given (`--resume`), where the cases are not needed.
    pub fn parse_unexpanded(text: &str, file: &str) -> Result<Plan, PlanErrors> {
        parse::parse(text, file)
    }

    /// Whether `other` asks for the same measurements: equal except where its text has them
    /// (file name, the lines matrix blocks start on), so comments and layout do not count.
    pub fn same_measurements(&self, other: &Plan) -> bool {
        let strip = |p: &Plan| {
            let mut p = p.clone();
            p.file.clear();
            p.matrices.iter_mut().for_each(|m| m.line = 0);
            p
        };
        strip(self) == strip(other)
    }

    /// Reads and checks the plan at `path`.
    pub fn load(path: &Path) -> Result<Plan, PlanErrors> {
        Ok(Plan::load_expanded(path)?.0)
    }

    /// [`Plan::load`], keeping the cases its check expanded ([`Plan::parse_expanded`]).
    pub fn load_expanded(path: &Path) -> Result<(Plan, Vec<Case>), PlanErrors> {
        let file = path.display().to_string();
        let text = crate::files::read_text(path).map_err(|e| {
            PlanErrors(vec![PlanError {
                file: file.clone(),
                line: 0,
                column: 0,
                key: String::new(),
                message: format!("cannot read the plan: {e}"),
                hint: None,
            }])
        })?;
        let (plan, cases) = Plan::parse_expanded(&text, &file)?;
        plan.check_subscriber_tables()?;
        Ok((plan, cases))
    }

    /// Reads every `[ports.NAME.pppoe] subscribers` table, so a bad line is a plan error
    /// (`TABLE:LINE`, the plan key) before anything runs.
    fn check_subscriber_tables(&self) -> Result<(), PlanErrors> {
        let mut errors = Vec::new();
        for port in &self.ports {
            let Some(path) = port.pppoe.as_ref().and_then(|p| p.subscribers.as_ref()) else {
                continue;
            };
            let key = format!("ports.{}.pppoe.subscribers", port.name);
            let error = |line: usize, message: String| PlanError {
                file: path.display().to_string(),
                line,
                column: 0,
                key: key.clone(),
                message,
                hint: None,
            };
            let mut bytes = Vec::new();
            let read = crate::files::open_regular(path)
                .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes));
            if let Err(e) = read {
                errors.push(error(0, format!("cannot read the subscriber table: {e}")));
                continue;
            }
            match emulate::pppoe::subscribers::SubscriberTable::parse(&bytes) {
                Err(e) => errors.push(error(e.line, e.message)),
                Ok(t) if t.is_empty() => errors.push(error(
                    0,
                    "no subscribers (one `USER PASSWORD [ipv4=…]` per line)".into(),
                )),
                Ok(_) => {}
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(PlanErrors(errors))
        }
    }
}
