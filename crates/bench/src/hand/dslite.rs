//! `wirerate dslite aftr|b4` by hand: the AFTR (with its link provisioning when configured)
//! or one B4 on an open port, until the caller says stop; then the machine is handed back
//! for its statistics.

use std::time::{Duration, Instant};

use emulate::provision::ProvisionEvent;
use emulate::softwire::{
    AftrConfig, AftrEvent, AftrPort, B4Config, B4Event, B4Failure, B4Port, SoftwireInfo,
};
use engine::control::{self, ControlPort};
use engine::tun::{SynSeen, Tun};

use super::{configure_wan_tun, step_relay, BenchError};

/// What the AFTR saw.
#[derive(Debug)]
pub enum AftrNews {
    /// The first packet from a B4 arrived: its softwire exists now.
    Softwire {
        b4: std::net::Ipv6Addr,
        info: SoftwireInfo,
    },
    Provision(ProvisionEvent),
    Syn(SynSeen),
}

/// What the B4 saw.
#[derive(Debug)]
pub enum B4News {
    /// The AFTR's name resolved to `aftr` (the B4 was given a name, not an address).
    AftrResolved {
        name: String,
        aftr: std::net::Ipv6Addr,
    },
    /// The tunnel probe was answered, `setup_ms` after the start.
    Up {
        info: SoftwireInfo,
        setup_ms: f64,
    },
    Failed(B4Failure),
    Syn(SynSeen),
}

/// A machine after its run, with its port's and TUN hand-off's statistics.
pub struct Done<M> {
    pub machine: M,
    pub port: ControlPort,
    pub tun: Option<Tun>,
}

/// Runs the AFTR `cfg` on `port` (relaying through `tun` when given) until `stop` says so.
pub fn serve_aftr(
    mut port: ControlPort,
    cfg: AftrConfig,
    mut tun: Option<Tun>,
    stop: &mut dyn FnMut() -> bool,
    news: &mut dyn FnMut(AftrNews),
) -> Result<Done<AftrPort>, BenchError> {
    let mut m = AftrPort::new(cfg);
    if tun.is_some() {
        m.enable_ip_relay();
    }
    while !stop() {
        step_relay(&mut port, &mut m, tun.as_mut(), |s| news(AftrNews::Syn(s)))?;
        for e in m.take_events() {
            match e {
                AftrEvent::SoftwireUp { b4, info } => news(AftrNews::Softwire { b4, info }),
                AftrEvent::Provision(p) => news(AftrNews::Provision(p)),
                AftrEvent::Packet { .. } => {}
            }
        }
    }
    Ok(Done {
        machine: m,
        port,
        tun,
    })
}

/// Runs the B4 `cfg` on `port` until `stop` says so, `hold` after its softwire came up, or
/// it fails; `tun` (in `netns`) becomes the softwire's WAN device once it is up.
pub fn run_b4(
    mut port: ControlPort,
    cfg: B4Config,
    mut tun: Option<Tun>,
    netns: Option<&str>,
    hold: Option<Duration>,
    stop: &mut dyn FnMut() -> bool,
    news: &mut dyn FnMut(B4News),
) -> Result<(Done<B4Port>, Option<B4Failure>), BenchError> {
    let (b4_ip, aftr_ip) = (cfg.ipv4, cfg.aftr_ipv4);
    let mut m = B4Port::new(cfg);
    if tun.is_some() {
        m.enable_ip_relay();
    }
    m.start(control::now());
    let mut up_at: Option<Instant> = None;
    let mut failed = None;
    while failed.is_none() && !stop() && hold.is_none_or(|h| up_at.is_none_or(|t| t.elapsed() < h))
    {
        step_relay(&mut port, &mut m, tun.as_mut(), |s| news(B4News::Syn(s)))?;
        for e in m.take_events() {
            match e {
                B4Event::Up(info) => {
                    up_at = Some(Instant::now());
                    if let Some(t) = &tun {
                        // Like a ppp0 for the softwire: the largest IPv4 packet carried whole
                        // as MTU.
                        configure_wan_tun(netns, t, info.max_datagram() as u32, b4_ip, aftr_ip)?;
                    }
                    let setup_ms = m.stats.setup.map_or(0.0, |s| s.0 as f64 / 1e6);
                    news(B4News::Up { info, setup_ms });
                }
                B4Event::Failed(why) => {
                    news(B4News::Failed(why));
                    failed = Some(why);
                }
                B4Event::AftrResolved { name, aftr } => news(B4News::AftrResolved { name, aftr }),
                B4Event::Packet(_) => {}
            }
        }
    }
    Ok((
        Done {
            machine: m,
            port,
            tun,
        },
        failed,
    ))
}
