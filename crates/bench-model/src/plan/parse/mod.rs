//! The plan checker: walks toml's spanned document tree (`toml::de::DeTable`) so that every
//! key and value keeps its byte span, and reports errors with file, line and key.
//!
//! A hand-written walker rather than `#[derive(Deserialize)]`: serde stops at the first error
//! and knows neither the key path nor a "did you mean" candidate; here all errors are collected
//! and each one points at the exact key.

use core::ops::Range;
use core::time::Duration;
use std::net::Ipv4Addr;

use toml::de::{DeTable, DeValue};
use toml::Spanned;
use wire::encap::{EncapSpec, IpVersion};
use wire::units::BitsPerSec;

use super::dimension::{spell_encap, Absent, Dimension, Item, Known, Syntax, DIMENSIONS};
use super::source::{did_you_mean, PlanErrors, Source};
use super::{
    DsliteRole, DsliteSettings, Dut, DutKind, GoalSetting, IpoeSettings, Matrix, Methodology,
    MethodologySettings, Plan, Port, PppAuth, PppoeRole, PppoeSettings, Profile, Protocol,
    RunSettings, StreamSettings, Topology, TxBackend,
};
use crate::hooks::{Exec, Hook, Parser, ProfileHooks, Stage};
use crate::search::{self, LineFraction, DEFAULT_TESTER_TOLERANCE};

type Value<'i> = Spanned<DeValue<'i>>;

const LAB_TOPOLOGIES: [&str; 3] = ["forward", "endpoint", "direct"];

struct Walker<'s> {
    src: Source<'s>,
}

fn entries<'a, 'i>(t: &'a DeTable<'i>) -> Vec<(&'a str, Range<usize>, &'a Value<'i>)> {
    let mut v: Vec<_> = t
        .iter()
        .map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
        .collect();
    // Plan order, not alphabetical: profiles and dimensions keep the order the user wrote.
    v.sort_by_key(|(_, span, _)| span.start);
    v
}

fn get<'a, 'i>(t: &'a DeTable<'i>, key: &str) -> Option<&'a Value<'i>> {
    t.iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(_, v)| v)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

mod checks;
mod ipoe;
mod mape;
mod matrix;
mod ports;
mod run;
mod stream;
mod values;

#[cfg(test)]
pub(super) use checks::is_endpoint;
use checks::*;
pub(super) use checks::{check_name, NameKind};
use run::*;
use stream::RUN_STREAM_KEYS;

/// The bare or quoted TOML key that starts at byte `at` of `text`, if one does.
fn key_at(text: &str, at: usize) -> Option<String> {
    let rest = text.get(at..)?;
    if let Some(q) = rest.strip_prefix('"') {
        return q.split('"').next().map(str::to_string);
    }
    let k: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!k.is_empty()).then_some(k)
}

/// Where the key `path` (as plan errors spell it: `dut.profiles.napt.setup[0]`) is written in
/// `text`: its 1-based line and column. `None` when the text does not parse or has no such
/// key (quoted keys containing dots are not found).
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let doc = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = doc.get_ref();
    let mut here: Option<&Value<'_>> = None;
    for seg in path.split('.') {
        let (key, indices) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg, ""),
        };
        if here.is_some() {
            table = here?.get_ref().as_table()?;
        }
        let mut v = get(table, key)?;
        for idx in indices.split(']').filter(|x| !x.is_empty()) {
            let i: usize = idx.trim_start_matches('[').parse().ok()?;
            v = v.get_ref().as_array()?.get(i)?;
        }
        here = Some(v);
    }
    let (line, col) = super::source::line_col(text, here?.span().start);
    Some((line, col))
}

/// Parses and checks a plan (expansion is checked by the caller).
pub(super) fn parse(text: &str, file: &str) -> Result<Plan, PlanErrors> {
    let mut w = Walker {
        src: Source::new(text, file),
    };
    let doc = match DeTable::parse(text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim();
            // The TOML parser says "duplicate key" without the key; it points at it.
            let (key, message) = match key_at(text, span.start) {
                Some(k) if message == "duplicate key" => (
                    k.clone(),
                    format!("duplicate key `{k}`: it is already given earlier in the same table; give each key once"),
                ),
                _ => (String::new(), format!("TOML syntax: {message}")),
            };
            w.src.error(span, &key, message, None);
            return Err(PlanErrors(w.src.errors));
        }
    };
    let root_span = doc.span();
    let root = doc.get_ref();
    w.keys(
        root,
        "",
        &[
            "name",
            "description",
            "topology",
            "ports",
            "dut",
            "run",
            "methodology",
            "matrix",
        ],
    );
    let name = w
        .required(root, &root_span, "", "name")
        .and_then(|n| w.nonempty(n, "name"));
    let description = get(root, "description").and_then(|d| w.string(d, "description"));
    let topology = w.topology(root, &root_span);
    let ports = topology
        .as_ref()
        .map(|t| w.ports(root, &root_span, t))
        .unwrap_or_default();
    let dut = topology.as_ref().and_then(|t| w.dut(root, &root_span, t));
    let run = w.run(root);
    let methodology = w.methodology(root, &run);
    let profiles = dut.as_ref().map(|d| d.profiles.clone()).unwrap_or_default();
    let mut matrices = Vec::new();
    if let Some(mv) = w.required(root, &root_span, "", "matrix") {
        match mv.get_ref() {
            DeValue::Array(a) if !a.is_empty() => {
                for (i, item) in a.iter().enumerate() {
                    let path = format!("matrix[{i}]");
                    let lab_dut = dut.as_ref().is_some_and(|d| d.kind == DutKind::Lab);
                    if let Some(m) = w.matrix(item, &path, &profiles, lab_dut) {
                        w.matrix_stream_fits(root, item, &path, &m, &run, &ports);
                        if let Some(t) = &topology {
                            w.matrix_fits_ports(item, &path, &m, t, &ports);
                            w.matrix_encap_fits(item, &path, &m, t, &ports);
                            if lab_dut {
                                w.matrix_switches_fit_lab(item, &path, &m, t, &profiles);
                            }
                        }
                        matrices.push(m);
                    }
                }
            }
            _ => w.type_err(mv, "matrix", "one or more [[matrix]] blocks"),
        }
    }
    if let Some(Topology::Interfaces) = &topology {
        w.ports_fit_matrix(root, &root_span, &ports, &matrices);
    }
    if !w.src.errors.is_empty() {
        return Err(PlanErrors(w.src.errors));
    }
    match (name, topology, dut) {
        (Some(name), Some(topology), Some(dut)) => Ok(Plan {
            file: file.to_string(),
            name,
            description,
            topology,
            ports,
            dut,
            run,
            methodology,
            matrices,
        }),
        _ => Err(PlanErrors(w.src.errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("3 parsecs"), None);
    }
}
