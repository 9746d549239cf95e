//! `wirerate calibrate`: the tester's own ceiling per frame size and IP version on the lab's
//! `direct` topology (no DUT): the highest rate it sends and receives exactly. Stored for
//! `wirerate run` (below line rate, results within 10 % of it are flagged tester-limited).
//! Measurement lives in `bench::calibration`.

use crate::error::{CliError, CliResult};
use bench::calibration;
use std::path::PathBuf;
use std::time::Duration;
use wire::encap::IpVersion;

/// Measure the tester's ceiling per frame size on a direct link between its ports.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  sudo wirerate calibrate --sizes 64,512,1518 --duration 1")]
pub struct CalibrateArgs {
    /// Lab name for the direct topology (built and removed by this command).
    #[arg(long, default_value = "cal")]
    lab: String,
    /// Frame sizes with FCS.
    #[arg(long, value_delimiter = ',', default_value = "64,82,512,1518")]
    sizes: Vec<u32>,
    /// IP versions (4, 6).
    #[arg(long, value_delimiter = ',', default_value = "4,6")]
    ip: Vec<u8>,
    /// Seconds per size.
    #[arg(long, default_value_t = 1.0)]
    duration: f64,
    /// Reference link speed the trials ask line rate of.
    #[arg(long, default_value = "1G")]
    link_speed: String,
    /// Where to store the result (default: ~/.local/share/wirerate/calibration.json).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Packet engine: auto (XDP where it fits, else AF_PACKET), xdp or af_packet. Calibrate
    /// with the engine your plans use (`run.backend`, default auto).
    #[arg(long, default_value = "auto")]
    backend: engine::trial::Backend,
}

pub fn run(args: CalibrateArgs) -> CliResult {
    let speed = wire::linerate::parse_speed(&args.link_speed)
        .map_err(|e| CliError::Usage(format!("--link-speed: {e}")))?;
    if !(args.duration > 0.0 && args.duration <= 60.0) {
        return Err(CliError::Usage("--duration: give 0..60 seconds".into()));
    }
    let mut ips = Vec::new();
    for v in &args.ip {
        ips.push(match v {
            4 => IpVersion::V4,
            6 => IpVersion::V6,
            o => return Err(CliError::Usage(format!("--ip {o}: give 4 or 6"))),
        });
    }
    let sizes: Vec<u32> = args.sizes.clone();
    // Refused before the lab is built and anything measured: a size the lab's links cannot
    // carry, no size that fits the IP versions, or an output that is not a regular file (a
    // FIFO, or /dev/null, which the atomic rename of the save would replace).
    calibration::check_sizes(&ips, &sizes).map_err(|e| CliError::Usage(format!("--sizes: {e}")))?;
    let path = args.out.clone().unwrap_or_else(calibration::default_path);
    bench::files::check_output(&path)
        .map_err(|e| CliError::Usage(format!("--out {}: {e}", path.display())))?;
    // Before the lab exists: Ctrl-C/SIGTERM then stop the trial in flight and the lab is
    // removed below, instead of the process dying with its namespaces left behind.
    let stop = super::stop_flag();
    let _lock = lab::LabLock::acquire(&args.lab, "wirerate calibrate", lab::lock::USER_WAIT)
        .map_err(|e| CliError::Usage(format!("lab {}: {e}", args.lab)))?;
    let l = lab::Lab::up(&lab::LabConfig {
        name: args.lab.clone(),
        topology: lab::Topology::Direct,
        profile: None,
    })
    .map_err(|e| CliError::Failed(format!("lab {}: {e}", args.lab)))?;
    outln!(
        "{:>3} {:>6} {:>14} {:>14} {:>14} {:>8} {:>6}  backend",
        "ip",
        "size",
        "line rate",
        "sent",
        "received",
        "ceiling",
        "exact"
    );
    let res = calibration::measure(
        &l,
        &ips,
        // Sizes too small for an IP version (IPv6 needs 82 B) are skipped for it.
        &sizes,
        speed,
        Duration::from_secs_f64(args.duration),
        args.backend,
        &stop,
        |e| {
            outln!(
                "{:>3} {:>6} {:>11}pps {:>11}pps {:>11}pps {:>7.1}% {:>6}  {}",
                e.ip,
                e.frame_size,
                wire::units::si(e.line_pps),
                wire::units::si(e.offered_pps),
                wire::units::si(e.received_pps),
                100.0 * e.fraction().unwrap_or(0.0),
                if e.exact { "yes" } else { "no" },
                e.backend
            )
        },
    );
    let down = l.down();
    down.map_err(|e| CliError::Failed(format!("removing lab {}: {e}", args.lab)))?;
    // Stopped by a signal: whatever the trial in flight said (aborted before its start, or
    // interrupted), the calibration is incomplete and nothing is saved.
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(CliError::Failed(format!(
            "interrupted: the calibration stopped, lab {} was removed, nothing was saved",
            args.lab
        )));
    }
    let cal = res.map_err(|e| CliError::Failed(e.to_string()))?;
    cal.save(&path)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    outln!("saved {}", path.display());
    Ok(())
}
