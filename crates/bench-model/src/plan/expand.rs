//! The matrix blocks expanded into [`Case`]s: the product of each block's dimensions, in plan
//! order of profiles, with duplicates refused.

use std::collections::BTreeMap;

use wire::encap::IpVersion;

use super::case::{case_id, Case};
use super::dims::{Matrix, Protocol};
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
            for profile in &m.profile {
                for &protocol in &m.protocol {
                    for &ip in &m.ip {
                        // (frame size, IMIX): the sizes, then the IMIX.
                        let (sizes, sessions, mss): (Vec<(Option<u32>, bool)>, Dim, Dim) =
                            match protocol {
                                Protocol::Udp => (
                                    m.frame_size
                                        .iter()
                                        .map(|&f| (Some(f), false))
                                        .chain(m.imix.then_some((None, true)))
                                        .collect(),
                                    vec![None],
                                    vec![None],
                                ),
                                Protocol::Tcp => (
                                    vec![(None, false)],
                                    m.sessions.iter().copied().map(Some).collect(),
                                    if m.mss.is_empty() {
                                        vec![None]
                                    } else {
                                        m.mss.iter().copied().map(Some).collect()
                                    },
                                ),
                            };
                        for &(frame_size, imix) in &sizes {
                            for &s in &sessions {
                                for &ms in &mss {
                                    for encap in encap_values(&m.encap, ip, protocol) {
                                        for (offload, fastpath) in switch_product(m) {
                                            for (flows, tos) in stream_product(m, protocol) {
                                                for vars in var_product(&m.vars) {
                                                    let methodologies = m
                                                        .methodologies
                                                        .iter()
                                                        .copied()
                                                        .filter(|x| {
                                                            protocol == Protocol::Udp
                                                                || !x.needs_engine()
                                                        })
                                                        // Once per block position: at its
                                                        // largest size, the probe's top.
                                                        .filter(|x| {
                                                            *x != Methodology::MtuProbe
                                                                || (!imix
                                                                    && frame_size
                                                                        == m.frame_size
                                                                            .iter()
                                                                            .max()
                                                                            .copied())
                                                        })
                                                        .collect();
                                                    let mut case = Case {
                                                        id: String::new(),
                                                        profile: profile.clone(),
                                                        protocol,
                                                        ip,
                                                        frame_size,
                                                        imix,
                                                        sessions: s,
                                                        mss: ms,
                                                        vars,
                                                        methodologies,
                                                        encap,
                                                        bidirectional: m.bidirectional
                                                            && protocol == Protocol::Udp,
                                                        offload,
                                                        fastpath,
                                                        flows,
                                                        tos,
                                                    };
                                                    case.id = case_id(&case);
                                                    let order = profile_index(profile)
                                                        .unwrap_or(usize::MAX);
                                                    cases.push((order, case, m.line));
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
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

/// Values of one optional dimension of a case.
type Dim = Vec<Option<u32>>;

/// The `encap` values of a block for one IP version and protocol: `[None]` when the block has
/// no `encap` key or for TCP (iperf3 runs over plain interfaces).
fn encap_values(
    encap: &[wire::encap::EncapSpec],
    ip: IpVersion,
    protocol: Protocol,
) -> Vec<Option<wire::encap::EncapSpec>> {
    if encap.is_empty() || protocol == Protocol::Tcp {
        return vec![None];
    }
    encap
        .iter()
        .map(|e| {
            let mut e = *e;
            e.ip = ip;
            Some(e)
        })
        .collect()
}

fn var_product(vars: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (name, values) in vars {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push((name.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    out
}

/// The (offload, fastpath) pairs of a block; `None` where the block does not have the key.
fn switch_product(m: &Matrix) -> Vec<(Option<bool>, Option<bool>)> {
    let values = |v: &[bool]| -> Vec<Option<bool>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    };
    let mut out = Vec::new();
    for o in values(&m.offload) {
        for f in values(&m.fastpath) {
            out.push((o, f));
        }
    }
    out
}

/// The (flows, tos) pairs of a block for `protocol`; `None` where the block does not have the
/// key, and for TCP (iperf3 sends its own streams).
fn stream_product(m: &Matrix, protocol: Protocol) -> Vec<(Option<u16>, Option<u8>)> {
    fn values<T: Copy>(v: &[T], protocol: Protocol) -> Vec<Option<T>> {
        if v.is_empty() || protocol == Protocol::Tcp {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    }
    let mut out = Vec::new();
    for f in values(&m.flows, protocol) {
        for t in values(&m.tos, protocol) {
            out.push((f, t));
        }
    }
    out
}
