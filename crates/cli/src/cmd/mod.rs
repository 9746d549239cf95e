//! One module per subcommand: each owns its clap `Args` and a `run` function.

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod completions;
pub mod craft;
pub mod dslite;
pub mod hand;
pub mod ipoe;
pub mod lab;
pub mod linerate;
pub mod mape;
pub mod plan;
pub mod plan_new;
pub mod pppoe;
pub mod pppoe_args;
pub mod pppoe_fleet;
pub mod pppoe_print;
pub mod provision;
pub mod report;
pub mod run;
pub mod trial;
#[cfg(test)]
mod trial_identity;
pub mod trial_inside;
pub mod trial_table;

/// A stop flag set by SIGINT/SIGTERM (the lab crate's handler, polled every 20 ms), for the
/// commands that build something they must take down again (`run`, `calibrate`, `trial`):
/// instead of dying they finish the step in progress, stop, and clean up.
pub(crate) fn stop_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    ::lab::install_interrupt_handler();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || loop {
        if ::lab::cmd::interrupted() {
            s.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    });
    stop
}
