//! One module per subcommand: each owns its clap `Args` and a `run` function.

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod completions;
pub mod craft;
pub mod dslite;
pub mod lab;
pub mod linerate;
pub mod plan;
pub mod pppoe;
pub mod report;
pub mod run;
pub mod trial;
pub mod trial_inside;
