//! Which engine runs the NAT load: AF_PACKET or XDP, as `load.backend` asks (`Auto`: XDP
//! when the load fits it, else AF_PACKET, saying why). Apart from both engines' modules
//! (`load`: the shared types and the AF_PACKET engine; `load_xdp`), so neither imports the
//! other's caller.

use std::sync::atomic::AtomicBool;

use super::load::{run_af_packet, LoadPhase, LoadReport};
use super::load_xdp::{self, XdpLoadError};
use super::{ConnTrialConfig, Opened, Tuple};
use crate::stream::StreamConfig;
use crate::trial::Backend;
use crate::{Error, Result};

/// Runs the load on the connections of `learned` (index, tuple as the responder learned it;
/// all N of them), opened as `opened`, on the engine `load.backend` asks for (`Auto`: XDP when
/// the load fits it and XDP loads before the first frame, else AF_PACKET, saying why).
pub(super) fn run(
    cfg: &ConnTrialConfig,
    load: LoadPhase,
    prelim: &StreamConfig,
    opened: Opened,
    learned: &[(u64, Tuple)],
    stop: &AtomicBool,
) -> Result<LoadReport> {
    let on_af_packet = |note: String| {
        let mut r = run_af_packet(cfg, load, prelim, opened, learned, stop)?;
        r.note = note;
        Ok(r)
    };
    match load.backend {
        Backend::AfPacket => on_af_packet(String::new()),
        Backend::Xdp => {
            if let Some(why) = load_xdp::unfit(cfg) {
                return Err(Error::Config(format!("XDP load: {why}")));
            }
            load_xdp::run(cfg, load, opened, learned, stop).map_err(|e| match e {
                XdpLoadError::BeforeStart(e) | XdpLoadError::AfterStart(e) => e,
            })
        }
        Backend::Auto => {
            if let Some(why) = load_xdp::unfit(cfg) {
                return on_af_packet(format!(
                    "auto: af_packet, as XDP cannot run this load ({why})"
                ));
            }
            match load_xdp::run(cfg, load, opened, learned, stop) {
                Ok(mut r) => {
                    r.note = if r.note.is_empty() {
                        "auto: xdp".into()
                    } else {
                        format!("auto: xdp ({})", r.note)
                    };
                    Ok(r)
                }
                Err(XdpLoadError::BeforeStart(e)) => on_af_packet(format!(
                    "auto: af_packet, as XDP failed before sending ({e})"
                )),
                Err(XdpLoadError::AfterStart(e)) => Err(e),
            }
        }
    }
}
