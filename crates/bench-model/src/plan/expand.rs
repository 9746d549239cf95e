//! The matrix blocks expanded into [`Case`]s: the product of each block's dimensions (every row
//! of [`DIMENSIONS`] in turn), in plan order of profiles, with duplicates refused.

use std::collections::BTreeMap;

use super::case::Case;
use super::dimension::DIMENSIONS;
use super::dims::{Dims, Matrix, Protocol};
use super::methodology::Methodology;
use super::source::{PlanError, PlanErrors};
use super::Plan;

impl Plan {
    /// Expands the matrix blocks into cases, ordered by profile (plan order) so each profile's
    /// setup runs once, then by block. Two blocks producing the same case is an error.
    pub fn cases(&self) -> Result<Vec<Case>, PlanErrors> {
        let mut cases: Vec<(usize, Case, usize)> = Vec::new();
        let profile_index = |p: &str| self.dut.profiles.iter().position(|x| x.name == p);
        for m in &self.matrices {
            for dims in points(m) {
                let methodologies = methodologies(m, &dims);
                let order = profile_index(&dims.profile).unwrap_or(usize::MAX);
                cases.push((order, Case::new(dims, methodologies), m.line));
            }
        }
        cases.sort_by_key(|(order, _, _)| *order);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut errors = Vec::new();
        for (_, case, line) in &cases {
            if let Some(first) = seen.insert(case.id.clone(), *line) {
                errors.push(PlanError {
                    file: self.file.clone(),
                    line: *line,
                    column: 1,
                    key: "matrix".into(),
                    message: format!(
                        "case `{}` is also produced by the [[matrix]] block at line {first}",
                        case.id
                    ),
                    hint: Some("merge the blocks or give them different dimensions".into()),
                });
            }
        }
        if errors.is_empty() {
            Ok(cases.into_iter().map(|(_, c, _)| c).collect())
        } else {
            Err(PlanErrors(errors))
        }
    }
}

/// Every point of block `m`: the product of its dimensions' values, the last row of the table
/// varying fastest.
fn points(m: &Matrix) -> Vec<Dims> {
    DIMENSIONS.iter().fold(vec![Dims::default()], |partial, d| {
        partial.iter().flat_map(|p| (d.expand)(m, p)).collect()
    })
}

/// The block's methodologies that apply at `dims`: iperf3 alone for TCP, and an `mtu-probe`
/// once per block position, at its largest size (the probe's top).
fn methodologies(m: &Matrix, dims: &Dims) -> Vec<Methodology> {
    m.methodologies
        .iter()
        .copied()
        .filter(|x| dims.protocol == Protocol::Udp || !x.needs_engine())
        .filter(|x| *x != Methodology::MtuProbe || dims.frame == m.largest_fixed())
        .collect()
}
