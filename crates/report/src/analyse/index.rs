//! The run's records indexed by search, once, for every part of the analysis.

use std::collections::BTreeMap;

use bench_model::plan::Methodology;
use bench_model::results::{ConnDone, ConnTrialRecord, Record, TrialRecord, UdpFacts};
use bench_model::search::SearchResult;
use wire::units::Pps;

/// (case, repetition, methodology): one search.
pub(crate) type SearchKey = (String, u32, Methodology);

/// The records, indexed. Superseded trials (measured again after a tester stall) are only
/// counted.
pub(crate) struct Index<'a> {
    /// Each search's trials, in file order.
    pub trials: BTreeMap<SearchKey, Vec<&'a TrialRecord>>,
    /// Each finished search's result (`None`: finished without a load result, such as iperf3
    /// and the connection methodologies).
    pub done: BTreeMap<SearchKey, Option<&'a SearchResult>>,
    /// Results the runner found within 10 % of the tester's calibrated ceiling: (case, m) → pps.
    pub ceiling: BTreeMap<(String, Methodology), Pps>,
    /// The 100 % per direction each search's loads were fractions of, as the runner recorded it in
    /// its `done` record (runs recorded from 3fcea2d to eb18b68; read by
    /// [`crate::compat::udp_line`]).
    pub line_pps: BTreeMap<(String, Methodology), Pps>,
    /// The typed facts of each UDP case's trials (frames, path, 100 %), by case id.
    pub udp_facts: BTreeMap<String, &'a UdpFacts>,
    /// Trials recorded as superseded.
    pub superseded: usize,
    /// The connection methodologies' trials and results.
    pub conn_trials: Vec<&'a ConnTrialRecord>,
    /// See `conn_trials`.
    pub conn_done: Vec<&'a ConnDone>,
}

impl<'a> Index<'a> {
    /// Indexes `records`.
    pub fn of(records: &'a [Record]) -> Index<'a> {
        let mut trials: BTreeMap<SearchKey, Vec<&TrialRecord>> = BTreeMap::new();
        let mut done: BTreeMap<SearchKey, Option<&SearchResult>> = BTreeMap::new();
        let mut ceiling = BTreeMap::new();
        let mut line_pps = BTreeMap::new();
        let mut udp_facts = BTreeMap::new();
        let mut superseded = 0usize;
        let mut conn_trials = Vec::new();
        let mut conn_done = Vec::new();
        for r in records {
            // A case's frames and path are the same in all its trials: the first that has
            // its facts speaks for the case.
            if let Record::Trial(t) = r {
                if let Some(f) = &t.udp {
                    udp_facts.entry(t.key.case_id.clone()).or_insert(f);
                }
            }
            match r {
                Record::ConnTrial(t) if t.superseded => superseded += 1,
                Record::ConnTrial(t) => conn_trials.push(t),
                Record::ConnDone(d) => conn_done.push(d),
                Record::Trial(t) if t.superseded => superseded += 1,
                Record::Trial(t) => trials
                    .entry((t.key.case_id.clone(), t.key.repetition, t.key.methodology))
                    .or_default()
                    .push(t),
                Record::Done(d) => {
                    if let Some(p) = d.line_pps.filter(|p| p.0.is_finite() && p.0 > 0.0) {
                        line_pps.insert((d.case_id.clone(), d.methodology), p);
                    }
                    if let Some(c) = d.ceiling.filter(|c| c.tester_limited) {
                        ceiling.insert((d.case_id.clone(), d.methodology), c.result_pps);
                    }
                    done.insert(
                        (d.case_id.clone(), d.repetition, d.methodology),
                        d.result.as_ref(),
                    );
                }
            }
        }
        // Connection searches count as finished searches like the others (they have no load
        // result, so no throughput row is built from them).
        for d in &conn_done {
            done.insert((d.case_id.clone(), d.repetition, d.methodology), None);
        }
        Index {
            trials,
            done,
            ceiling,
            line_pps,
            udp_facts,
            superseded,
            conn_trials,
            conn_done,
        }
    }
}
