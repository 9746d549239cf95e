//! LCP's and the NCPs' (IPCP, IPv6CP) packets and signals: echoes, rejects, the link coming
//! up or going down, and the network phase settling.

use wire::ppp::control::{Code, ControlPacket};
use wire::ppp::Protocol;
use wire::units::Nanos;

use super::super::fsm::Signal;
use super::{Anomaly, DownReason, Link, LinkEvent, Phase};
use crate::util::add;

impl Link {
    pub(super) fn lcp_input(&mut self, now: Nanos, info: &[u8]) {
        let Ok(cp) = ControlPacket::new_checked(info) else {
            self.anomaly(Anomaly::ControlMalformed);
            return;
        };
        let (code, id, data) = (cp.code(), cp.identifier(), cp.data());
        if code == Code::TerminateRequest && self.closing_reason.is_none() {
            self.closing_reason = Some(DownReason::PeerTerminate);
        }
        if self.lcp.input(now, code, id, data) {
            return;
        }
        if !self.lcp.is_opened() {
            // LCP-only codes mean nothing before the link is open (RFC 1661 §5.8-5.11).
            if matches!(code, Code::Unknown(_)) {
                self.lcp
                    .code_reject(&info[..usize::from(cp.length())], self.peer_mru() - 4);
                self.anomaly(Anomaly::UnknownCode);
            } else {
                self.anomaly(Anomaly::NotUp);
            }
            return;
        }
        match code {
            Code::EchoRequest => {
                let magic = cp.magic_number();
                match magic {
                    Ok(m) if m == 0 || m != self.lcp.neg.magic || self.lcp.neg.magic == 0 => {
                        let mut reply = self.lcp.neg.magic.to_be_bytes().to_vec();
                        reply.extend_from_slice(cp.echo_data().unwrap_or(&[]));
                        self.send_control(Protocol::LCP, Code::EchoReply, id, &reply);
                    }
                    _ => self.anomaly(Anomaly::BadEcho),
                }
            }
            Code::EchoReply => match cp.magic_number() {
                Ok(m) if m == 0 || m != self.lcp.neg.magic || self.lcp.neg.magic == 0 => {
                    self.echo_outstanding = 0
                }
                _ => self.anomaly(Anomaly::BadEcho),
            },
            Code::DiscardRequest => {}
            Code::ProtocolReject => match cp.rejected_protocol() {
                Ok(Protocol::IPCP) => {
                    if let Some(f) = self.ipcp.as_mut() {
                        f.rxj(now, false);
                    }
                }
                Ok(Protocol::IPV6CP) => {
                    if let Some(f) = self.ipv6cp.as_mut() {
                        f.rxj(now, false);
                    }
                }
                Ok(Protocol::PAP | Protocol::CHAP) if self.phase == Phase::Authenticate => {
                    self.close(now, DownReason::AuthRefused)
                }
                Ok(_) => {}
                Err(_) => self.anomaly(Anomaly::ControlMalformed),
            },
            _ => {
                self.lcp
                    .code_reject(&info[..usize::from(cp.length())], self.peer_mru() - 4);
                self.anomaly(Anomaly::UnknownCode);
            }
        }
    }

    pub(super) fn ncp_input(&mut self, now: Nanos, protocol: Protocol, info: &[u8]) {
        if !self.runs(protocol) {
            if self.lcp.is_opened() {
                self.protocol_reject(protocol, info);
            } else {
                self.anomaly(Anomaly::NotUp);
            }
            return;
        }
        if self.phase != Phase::Network {
            // RFC 1661 §3.6: NCP packets before the network phase are silently discarded.
            self.anomaly(Anomaly::NotUp);
            return;
        }
        let Ok(cp) = ControlPacket::new_checked(info) else {
            self.anomaly(Anomaly::ControlMalformed);
            return;
        };
        let (code, id, data) = (cp.code(), cp.identifier(), cp.data());
        let max = self.peer_mru() - 4;
        let handled = if protocol == Protocol::IPCP {
            self.ipcp.as_mut().map(|f| f.input(now, code, id, data))
        } else {
            self.ipv6cp.as_mut().map(|f| f.input(now, code, id, data))
        };
        if handled == Some(false) {
            let raw = &info[..usize::from(cp.length())];
            if protocol == Protocol::IPCP {
                if let Some(f) = self.ipcp.as_mut() {
                    f.code_reject(raw, max);
                }
            } else if let Some(f) = self.ipv6cp.as_mut() {
                f.code_reject(raw, max);
            }
            self.anomaly(Anomaly::UnknownCode);
        }
    }

    pub(super) fn lcp_signal(&mut self, now: Nanos, s: Signal) {
        match s {
            Signal::Up => {
                self.echo_outstanding = 0;
                if self.echo_interval.0 > 0 {
                    self.echo_next = Some(add(now, self.echo_interval));
                }
                self.start_auth(now);
            }
            Signal::Down => {
                self.echo_next = None;
                self.auth.timer = None;
                self.up = false;
                if self.phase != Phase::Dead {
                    self.phase = Phase::Establish;
                }
                if let Some(f) = self.ipcp.as_mut() {
                    f.down();
                    f.close(now);
                }
                if let Some(f) = self.ipv6cp.as_mut() {
                    f.down();
                    f.close(now);
                }
            }
            Signal::Started => {}
            Signal::Finished { timeout } => {
                let reason = self.closing_reason.unwrap_or(if timeout {
                    DownReason::LcpTimeout
                } else {
                    DownReason::LcpFailed
                });
                self.kill(reason);
            }
        }
    }

    pub(super) fn ncp_signal(&mut self, now: Nanos, _signals: &[Signal]) {
        if self.phase != Phase::Network {
            return;
        }
        let states: Vec<(bool, bool)> = [
            self.ipcp.as_ref().map(|f| (f.is_opened(), f.is_finished())),
            self.ipv6cp
                .as_ref()
                .map(|f| (f.is_opened(), f.is_finished())),
        ]
        .into_iter()
        .flatten()
        .collect();
        let any_open = states.iter().any(|s| s.0);
        let all_settled = states.iter().all(|s| s.0 || s.1);
        if all_settled && !any_open {
            self.close(now, DownReason::NcpFailed);
        } else if all_settled && !self.up {
            self.up = true;
            self.events.push(LinkEvent::Up);
        } else if !any_open && self.up {
            self.up = false;
        }
    }
}
