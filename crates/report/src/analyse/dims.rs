//! Each case's dimensions, as the report groups and labels it: from the cases `run.json`
//! lists, with the frame size and encapsulation its trials recorded; for a case it does not
//! list, from the case id ([`crate::compat`]).

use std::collections::BTreeMap;

use bench_model::plan::Case;
use bench_model::results::UdpFacts;

use crate::model::Dims;

/// Dimensions by case id, filled on first use.
pub(crate) struct CaseDims<'a> {
    of: BTreeMap<String, Dims>,
    udp_facts: &'a BTreeMap<String, &'a UdpFacts>,
}

impl<'a> CaseDims<'a> {
    /// The dimensions of `cases`, with what their trials recorded in `udp_facts`.
    pub fn new(cases: &[Case], udp_facts: &'a BTreeMap<String, &'a UdpFacts>) -> CaseDims<'a> {
        let mut of: BTreeMap<String, Dims> = cases
            .iter()
            .map(|c| (c.id.clone(), crate::compat::dims_of_case(c)))
            .collect();
        for (id, f) in udp_facts {
            if let Some(d) = of.get_mut(id) {
                with_udp_facts(d, f);
            }
        }
        CaseDims { of, udp_facts }
    }

    /// The dimensions of case `id`.
    pub fn get(&mut self, id: &str) -> Dims {
        let facts = self.udp_facts;
        self.of
            .entry(id.to_string())
            .or_insert_with(|| {
                let mut d = crate::compat::dims_of_case_id(id);
                if let Some(f) = facts.get(id) {
                    with_udp_facts(&mut d, f);
                }
                d
            })
            .clone()
    }
}

/// The frame size and encapsulation a case's trials recorded, over what its dimensions say.
fn with_udp_facts(d: &mut Dims, f: &UdpFacts) {
    d.frame = Some(f.frame);
    d.encap = f.encap;
}
