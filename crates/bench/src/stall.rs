//! When the tester fell behind its own schedule (a stall), and how often a trial is measured
//! again for it: one policy for the run's searches (`runner`) and the tester's calibration
//! (`calibration`), which both measure a stalled trial again before believing it.

/// A trial whose sender slipped more than this share of its schedule is tester-limited, even
/// when its offered rate stays within the plan's `tester-tolerance`.
pub const SLIP_TOLERANCE: f64 = 0.001;

/// How many trials of one search are measured again after the tester fell behind (slipped
/// frames or offered less than asked) before the search is stopped tester-limited.
pub const MAX_STALL_RETRIES: u32 = 2;

/// How many re-measurements one search grants stalls at loads the tester has shown it carries
/// (a load it kept in the search, or one its calibration carried): a shared machine's
/// transients, counted apart from [`MAX_STALL_RETRIES`]. Beyond them the search stops
/// tester-limited. Eight: a demo run's 64 B search on the lab, where the DUT's overload and the
/// tester share two vCPUs, measured six such stalls in 20 trials and needed a seventh.
pub const MAX_TRANSIENT_RETRIES: u32 = 8;
