//! A plan's `[ports.NAME.ipoe]` for a whole run: `emulate`'s IPoE port (DHCPv4, RA + DHCPv6,
//! DNS) in its own thread on the port's interface, with "the Internet" behind it when the
//! plan says `internet` (a TUN device in a namespace the run creates, as for a PPPoE access
//! concentrator, [`crate::isp::Internet`]).
//!
//! The run waits for the gateway's lease before any traffic ([`LeasePort::wait_up`]); the
//! lease is the data path (test frames from our gateway address to the leased one, at the
//! gateway's MAC). A lease the gateway releases, declines or lets expire is a drop, recorded
//! like a PPPoE session's for the trial it falls into; a newer lease replaces it.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use emulate::dhcpv4::Dhcpv4Event;
use emulate::ipoe::LeaseInfo;
use engine::control::ControlPort;
use engine::port::PortSpec;
use serde_json::Value;
use wire::ethernet::MacAddr;

use crate::hand::ipoe::{serve, IpoeNews};
use crate::isp::{now_ms, Internet, SessionLine};
use crate::plan::IpoeSettings;
use crate::port_error::{Peer, PortError, PortKind};
use crate::results::SessionDrop;
use crate::session_json as sj;

/// What the port's thread tells the run.
#[derive(Default)]
struct Shared {
    /// Bound leases, by the gateway's MAC, in the order they were bound.
    leases: BTreeMap<MacAddr, (u64, Ipv4Addr)>,
    bound_count: u64,
    /// Our MAC and gateway address, once the port is open.
    local: Option<(MacAddr, Ipv4Addr)>,
    drops: Vec<SessionDrop>,
    lines: Vec<SessionLine>,
}

impl Shared {
    /// The newest bound lease as the data path sees it.
    fn lease(&self) -> Option<LeaseInfo> {
        let (local_mac, local) = self.local?;
        let (peer_mac, (_, peer)) = self.leases.iter().max_by_key(|(_, (n, _))| *n)?;
        Some(LeaseInfo {
            local_mac,
            local,
            peer_mac: *peer_mac,
            peer: *peer,
        })
    }

    fn line(&mut self, port: &str, mut v: Value) {
        v["port"] = port.into();
        v["unix_ms"] = now_ms().into();
        self.lines.push(v);
    }

    fn news(&mut self, port: &str, n: IpoeNews) {
        match n {
            IpoeNews::Lease(e) => {
                self.line(port, sj::lease(&e));
                match e {
                    Dhcpv4Event::Bound { mac, addr, .. }
                    | Dhcpv4Event::Renewed { mac, addr, .. } => {
                        if self.leases.get(&mac).map(|l| l.1) != Some(addr) {
                            self.bound_count += 1;
                            self.leases.insert(mac, (self.bound_count, addr));
                        }
                    }
                    Dhcpv4Event::Released { mac, .. }
                    | Dhcpv4Event::Declined { mac, .. }
                    | Dhcpv4Event::Expired { mac, .. } => {
                        if self.leases.remove(&mac).is_some() {
                            let reason = match e {
                                Dhcpv4Event::Released { .. } => "LeaseReleased",
                                Dhcpv4Event::Declined { .. } => "LeaseDeclined",
                                _ => "LeaseExpired",
                            };
                            self.drops.push(SessionDrop {
                                port: port.to_string(),
                                unix_ms: now_ms(),
                                reason: reason.into(),
                            });
                        }
                    }
                    Dhcpv4Event::Nak { .. } => {}
                }
            }
            IpoeNews::Provision(p) => self.line(port, sj::provision(&p)),
            IpoeNews::Syn(s) => self.line(port, sj::syn(&s)),
        }
    }
}

/// An IPoE port running for a run.
pub struct LeasePort {
    /// The port's name in the plan.
    pub port: String,
    /// The Internet side (`internet` in the plan).
    pub internet: Option<Internet>,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    handle: Option<JoinHandle<Result<Value, String>>>,
}

impl LeasePort {
    /// Starts the IPoE port `cfg` on `port` (named `name` in the plan); returns once its
    /// socket is open.
    pub fn start(name: &str, port: &PortSpec, cfg: &IpoeSettings) -> Result<LeasePort, PortError> {
        // Refuse settings before anything is created (the plan checked them already).
        cfg.config(MacAddr::ZERO)
            .map_err(|source| PortError::Settings {
                port: name.to_string(),
                source,
            })?;
        let (internet, tun) = match cfg.internet {
            Some(addr) => {
                let (i, t) =
                    Internet::create(name, addr, 1500, vec![cfg.subnet()]).map_err(|reason| {
                        PortError::Internet {
                            port: name.to_string(),
                            reason,
                        }
                    })?;
                (Some(i), Some(t))
            }
            None => (None, None),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let shared: Arc<Mutex<Shared>> = Arc::default();
        let (ready_tx, ready) = mpsc::channel::<Result<(), String>>();
        let (spec, settings, pname) = (port.clone(), cfg.clone(), name.to_string());
        let (stop2, shared2) = (stop.clone(), shared.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("ipoe-{name}"))
            .spawn(move || -> Result<Value, String> {
                let opened = ControlPort::open(&spec)
                    .and_then(|p| p.mac().map(|m| (p, MacAddr(m))))
                    .map_err(|e| e.to_string())
                    .and_then(|(p, mac)| {
                        settings
                            .config(mac)
                            .map(|c| (p, mac, c))
                            .map_err(|e| e.to_string())
                    });
                let (cp, mac, config) = match opened {
                    Ok(x) => x,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                fn lock(s: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
                    s.lock().unwrap_or_else(|p| p.into_inner())
                }
                lock(&shared2).local = Some((mac, settings.gateway));
                let _ = ready_tx.send(Ok(()));
                let done = serve(
                    cp,
                    config,
                    tun,
                    &mut || stop2.load(Ordering::SeqCst),
                    &mut |n| lock(&shared2).news(&pname, n),
                )
                .map_err(|e| e.to_string())?;
                let mut v = sj::ipoe_stats(&done.machine);
                v["frames_rx"] = done.port.stats.rx.into();
                v["frames_tx"] = done.port.stats.tx.into();
                v["tx_failed"] = done.port.stats.tx_failed.into();
                if let Some(t) = &done.tun {
                    v["tun"] = sj::tun(t);
                }
                Ok(v)
            });
        let handle = match spawned {
            Ok(h) => h,
            Err(e) => {
                if let Some(i) = &internet {
                    i.remove();
                }
                return Err(PortError::Spawn {
                    kind: PortKind::Ipoe,
                    source: e,
                });
            }
        };
        let mut lp = LeasePort {
            port: name.to_string(),
            internet,
            stop,
            shared,
            handle: Some(handle),
        };
        match ready.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(())) => Ok(lp),
            Ok(Err(reason)) => {
                let _ = lp.finish();
                Err(PortError::Ended {
                    kind: PortKind::Ipoe,
                    port: name.to_string(),
                    reason,
                })
            }
            Err(_) => {
                let reason = lp
                    .finish()
                    .err()
                    .map_or_else(|| "no answer".into(), |e| e.to_string());
                Err(PortError::Ended {
                    kind: PortKind::Ipoe,
                    port: name.to_string(),
                    reason,
                })
            }
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits at most `timeout` for a bound lease (giving up when `stop` is set); the data
    /// path it gives.
    pub fn wait_up(
        &mut self,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<LeaseInfo, PortError> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(l) = self.lease() {
                return Ok(l);
            }
            if stop.load(Ordering::SeqCst) {
                return Err(PortError::Interrupted);
            }
            if self.handle.as_ref().is_some_and(|h| h.is_finished()) {
                let reason = match self.handle.take().map(|h| h.join()) {
                    Some(Ok(Err(e))) => e,
                    _ => "its thread ended".into(),
                };
                return Err(PortError::Ended {
                    kind: PortKind::Ipoe,
                    port: self.port.clone(),
                    reason,
                });
            }
            if Instant::now() >= end {
                return Err(PortError::NoPeer {
                    port: self.port.clone(),
                    peer: Peer::Gateway,
                    timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The newest bound lease, if any.
    pub fn lease(&self) -> Option<LeaseInfo> {
        self.shared().lease()
    }

    /// Every lease of this port that ended (released, declined, expired), in order.
    pub fn drops(&self) -> Vec<SessionDrop> {
        self.shared().drops.clone()
    }

    /// Events since the last call.
    pub fn take_lines(&self) -> Vec<SessionLine> {
        std::mem::take(&mut self.shared().lines)
    }

    /// Stops the thread and returns the statistics line; the Internet namespace goes.
    pub fn finish(&mut self) -> Result<SessionLine, PortError> {
        self.stop.store(true, Ordering::SeqCst);
        let Some(h) = self.handle.take() else {
            return Err(PortError::AlreadyFinished);
        };
        let joined = h.join();
        if let Some(i) = &self.internet {
            i.remove();
        }
        let mut v = joined
            .map_err(|_| PortError::Panicked {
                kind: PortKind::Ipoe,
            })?
            .map_err(|reason| PortError::Failed {
                kind: PortKind::Ipoe,
                reason,
            })?;
        v["event"] = "stats".into();
        v["port"] = self.port.clone().into();
        v["unix_ms"] = now_ms().into();
        Ok(v)
    }
}

impl Drop for LeasePort {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        if let Some(i) = &self.internet {
            i.remove();
        }
    }
}
