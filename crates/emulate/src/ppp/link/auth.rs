//! Authentication (RFC 1661's Authenticate phase): PAP (RFC 1334) and CHAP-MD5 (RFC 1994),
//! either side, with their retransmissions and verdicts.

use wire::ppp::chap::ChapRepr;
use wire::ppp::control::ControlPacket;
use wire::ppp::pap::PapRepr;
use wire::ppp::Protocol;
use wire::units::Nanos;

use super::super::neg::AuthMethod;
use super::{Anomaly, Credential, DownReason, Link, LinkEvent, Phase, Role};
use crate::util::{add, md5};

impl Link {
    pub(super) fn start_auth(&mut self, now: Nanos) {
        self.auth.method = match self.role {
            Role::Server => self.lcp.neg.auth_requested,
            Role::Client => self.lcp.neg.auth_to_perform,
        };
        self.auth.done = false;
        self.auth.last_answer = None;
        let Some(method) = self.auth.method else {
            if self.role == Role::Server && !self.auth_cfg.is_empty() {
                // We demand authentication but LCP opened without it: refuse the link.
                self.close(now, DownReason::AuthRefused);
            } else {
                self.start_network(now);
            }
            return;
        };
        self.phase = Phase::Authenticate;
        let long_wait = Nanos(
            self.fsm_cfg
                .restart
                .0
                .saturating_mul(u64::from(self.fsm_cfg.max_configure)),
        );
        match (self.role, method) {
            (Role::Server, AuthMethod::Pap) | (Role::Client, AuthMethod::ChapMd5) => {
                // Wait for the peer to start.
                self.auth.timer = Some(add(now, long_wait));
            }
            (Role::Server, AuthMethod::ChapMd5) => {
                self.auth.tries_left = self.fsm_cfg.max_configure;
                self.auth.id = self.lcp.fresh_id();
                self.rng.fill(&mut self.auth.challenge);
                self.send_challenge(now);
            }
            (Role::Client, AuthMethod::Pap) => {
                self.auth.tries_left = self.fsm_cfg.max_configure;
                self.auth.id = self.lcp.fresh_id();
                self.send_pap_request(now);
            }
        }
    }

    fn send_challenge(&mut self, now: Nanos) {
        self.auth.tries_left = self.auth.tries_left.saturating_sub(1);
        self.auth.timer = Some(add(now, self.fsm_cfg.restart));
        let challenge = self.auth.challenge;
        let name = self.name.clone();
        let repr = ChapRepr::Challenge {
            identifier: self.auth.id,
            value: &challenge,
            name: name.as_bytes(),
        };
        self.emit_chap(&repr);
    }

    fn send_pap_request(&mut self, now: Nanos) {
        self.auth.tries_left = self.auth.tries_left.saturating_sub(1);
        self.auth.timer = Some(add(now, self.fsm_cfg.restart));
        let cred = self
            .credentials
            .first()
            .cloned()
            .unwrap_or(Credential::new("", ""));
        let repr = PapRepr::AuthenticateRequest {
            identifier: self.auth.id,
            peer_id: cred.user.as_bytes(),
            password: cred.password.as_bytes(),
        };
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&Protocol::PAP.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f);
        }
    }

    fn emit_chap(&mut self, repr: &ChapRepr<'_>) -> Vec<u8> {
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&Protocol::CHAP.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f.clone());
        }
        f
    }

    fn emit_pap(&mut self, repr: &PapRepr<'_>) -> Vec<u8> {
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&Protocol::PAP.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f.clone());
        }
        f
    }

    pub(super) fn auth_timeout(&mut self, now: Nanos) {
        self.auth.timer = None;
        if self.auth.done || self.phase != Phase::Authenticate {
            return;
        }
        if self.auth.tries_left > 0 {
            self.retransmits += 1;
            match (self.role, self.auth.method) {
                (Role::Server, Some(AuthMethod::ChapMd5)) => return self.send_challenge(now),
                (Role::Client, Some(AuthMethod::Pap)) => return self.send_pap_request(now),
                (Role::Client, Some(AuthMethod::ChapMd5)) => {
                    if let Some((_, f)) = self.auth.last_answer.clone() {
                        self.auth.tries_left -= 1;
                        self.out.push(f);
                        self.auth.timer = Some(add(now, self.fsm_cfg.restart));
                        return;
                    }
                }
                _ => {}
            }
        }
        self.close(now, DownReason::AuthTimeout);
    }

    pub(super) fn auth_input(&mut self, now: Nanos, protocol: Protocol, info: &[u8]) {
        let expected = match self.auth.method {
            Some(AuthMethod::Pap) => Protocol::PAP,
            Some(AuthMethod::ChapMd5) => Protocol::CHAP,
            None => Protocol(0),
        };
        let in_phase = matches!(self.phase, Phase::Authenticate | Phase::Network);
        if protocol != expected || !in_phase {
            if self.lcp.is_opened() && self.auth.method.is_none() {
                self.protocol_reject(protocol, info);
            } else {
                self.anomaly(Anomaly::UnexpectedAuth);
            }
            return;
        }
        let Ok(cp) = ControlPacket::new_checked(info) else {
            self.anomaly(Anomaly::UnexpectedAuth);
            return;
        };
        if protocol == Protocol::PAP {
            match PapRepr::parse(&cp) {
                Ok(p) => self.pap(now, p),
                Err(_) => self.anomaly(Anomaly::UnexpectedAuth),
            }
        } else {
            match ChapRepr::parse(&cp) {
                Ok(c) => self.chap(now, c),
                Err(_) => self.anomaly(Anomaly::UnexpectedAuth),
            }
        }
    }

    fn pap(&mut self, now: Nanos, p: PapRepr<'_>) {
        match (self.role, p) {
            (
                Role::Server,
                PapRepr::AuthenticateRequest {
                    identifier,
                    peer_id,
                    password,
                },
            ) => {
                if self.auth.done {
                    // A retransmitted request after our Ack was lost: answer again.
                    if let Some((_, mut f)) = self.auth.last_answer.clone() {
                        if f.len() > 3 {
                            f[3] = identifier;
                        }
                        self.out.push(f);
                    }
                    return;
                }
                let ok = self
                    .credentials
                    .iter()
                    .any(|c| c.user.as_bytes() == peer_id && c.password.as_bytes() == password);
                let user = String::from_utf8_lossy(peer_id).into_owned();
                if ok {
                    let f = self.emit_pap(&PapRepr::AuthenticateAck {
                        identifier,
                        message: b"welcome",
                    });
                    self.auth.last_answer = Some((Protocol::PAP, f));
                    self.auth_success(now, user);
                } else {
                    self.emit_pap(&PapRepr::AuthenticateNak {
                        identifier,
                        message: b"authentication failed",
                    });
                    self.close(now, DownReason::AuthFailed);
                }
            }
            (Role::Client, PapRepr::AuthenticateAck { identifier, .. })
                if identifier == self.auth.id && !self.auth.done =>
            {
                let user = self
                    .credentials
                    .first()
                    .map(|c| c.user.clone())
                    .unwrap_or_default();
                self.auth_success(now, user);
            }
            (Role::Client, PapRepr::AuthenticateNak { identifier, .. })
                if identifier == self.auth.id && !self.auth.done =>
            {
                self.auth.timer = None;
                self.close(now, DownReason::AuthFailed);
            }
            _ => self.anomaly(Anomaly::UnexpectedAuth),
        }
    }

    fn chap(&mut self, now: Nanos, c: ChapRepr<'_>) {
        match (self.role, c) {
            (
                Role::Server,
                ChapRepr::Response {
                    identifier,
                    value,
                    name,
                },
            ) if identifier == self.auth.id => {
                if self.auth.done {
                    if let Some((_, f)) = self.auth.last_answer.clone() {
                        self.out.push(f);
                    }
                    return;
                }
                let user = String::from_utf8_lossy(name).into_owned();
                let ok = self.credentials.iter().any(|cr| {
                    cr.user.as_bytes() == name
                        && md5(&[&[identifier], cr.password.as_bytes(), &self.auth.challenge])
                            == value
                });
                if ok {
                    let f = self.emit_chap(&ChapRepr::Success {
                        identifier,
                        message: b"welcome",
                    });
                    self.auth.last_answer = Some((Protocol::CHAP, f));
                    self.auth_success(now, user);
                } else {
                    self.emit_chap(&ChapRepr::Failure {
                        identifier,
                        message: b"authentication failed",
                    });
                    self.close(now, DownReason::AuthFailed);
                }
            }
            (
                Role::Client,
                ChapRepr::Challenge {
                    identifier, value, ..
                },
            ) => {
                let cred = self
                    .credentials
                    .first()
                    .cloned()
                    .unwrap_or(Credential::new("", ""));
                let digest = md5(&[&[identifier], cred.password.as_bytes(), value]);
                if self.auth.done {
                    // A re-challenge after success (RFC 1994 allows periodic ones): answer.
                    self.emit_chap(&ChapRepr::Response {
                        identifier,
                        value: &digest,
                        name: cred.user.as_bytes(),
                    });
                    return;
                }
                if identifier != self.auth.id || self.auth.last_answer.is_none() {
                    self.auth.tries_left = self.fsm_cfg.max_configure;
                }
                self.auth.id = identifier;
                let f = self.emit_chap(&ChapRepr::Response {
                    identifier,
                    value: &digest,
                    name: cred.user.as_bytes(),
                });
                // Success or Failure may be lost; RFC 1994 §4.1 has the authenticator accept
                // repeated Responses, so repeat ours until one arrives.
                self.auth.last_answer = Some((Protocol::CHAP, f));
                self.auth.timer = Some(add(now, self.fsm_cfg.restart));
            }
            (Role::Client, ChapRepr::Success { identifier, .. })
                if identifier == self.auth.id && !self.auth.done =>
            {
                let user = self
                    .credentials
                    .first()
                    .map(|c| c.user.clone())
                    .unwrap_or_default();
                self.auth_success(now, user);
            }
            (Role::Client, ChapRepr::Failure { identifier, .. }) if identifier == self.auth.id => {
                self.auth.timer = None;
                self.close(now, DownReason::AuthFailed);
            }
            _ => self.anomaly(Anomaly::UnexpectedAuth),
        }
    }

    fn auth_success(&mut self, now: Nanos, user: String) {
        self.auth.done = true;
        self.auth.timer = None;
        self.auth.user = Some(user.clone());
        if self.role == Role::Server {
            self.events.push(LinkEvent::Authenticated { user });
        }
        if self.phase == Phase::Authenticate {
            self.start_network(now);
        }
    }
}
