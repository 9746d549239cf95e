//! A client message as the server reads it: its type, identifiers, IAs, Option Request
//! and Rapid Commit; anything it cannot frame is None (counted as malformed by the server).

use core::net::Ipv6Addr;
use std::collections::BTreeSet;

use wire::dhcpv6::{opt, parse_oro, Dhcpv6Packet, IaAddrRepr, IaRepr};

use super::messages::IaKind;

/// One IA of a client message.
pub(super) struct IaReq {
    pub(super) kind: IaKind,
    pub(super) iaid: u32,
    /// Addresses the client listed in an IA_NA (checked by Confirm).
    pub(super) addrs: Vec<Ipv6Addr>,
}

/// A client message, parsed.
pub(super) struct ClientMsg<'a> {
    pub(super) kind: u8,
    pub(super) xid: u32,
    pub(super) client_id: Option<&'a [u8]>,
    pub(super) server_id: Option<&'a [u8]>,
    pub(super) ias: Vec<IaReq>,
    pub(super) oro: BTreeSet<u16>,
    pub(super) rapid_commit: bool,
}

pub(super) fn parse_client(b: &[u8]) -> Option<ClientMsg<'_>> {
    let p = Dhcpv6Packet::new_checked(b).ok()?;
    let mut m = ClientMsg {
        kind: p.msg_type(),
        xid: p.transaction_id(),
        client_id: None,
        server_id: None,
        ias: Vec::new(),
        oro: BTreeSet::new(),
        rapid_commit: false,
    };
    for o in p.options() {
        let (code, v) = o.ok()?;
        match code {
            opt::CLIENTID => m.client_id = m.client_id.or(Some(v)),
            opt::SERVERID => m.server_id = m.server_id.or(Some(v)),
            opt::IA_NA | opt::IA_PD => {
                let ia = IaRepr::parse(v).ok()?;
                let mut addrs = Vec::new();
                for io in ia.options() {
                    let (c, iv) = io.ok()?;
                    if c == opt::IAADDR {
                        addrs.push(IaAddrRepr::parse(iv).ok()?.addr);
                    }
                }
                let kind = if code == opt::IA_NA {
                    IaKind::Na
                } else {
                    IaKind::Pd
                };
                m.ias.push(IaReq {
                    kind,
                    iaid: ia.iaid,
                    addrs,
                });
            }
            opt::ORO => m.oro.extend(parse_oro(v)),
            opt::RAPID_COMMIT => m.rapid_commit = true,
            _ => {}
        }
    }
    Some(m)
}
