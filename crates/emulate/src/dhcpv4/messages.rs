//! What goes in and out of a [`super::Dhcpv4Server`] besides the DHCP bytes: how a message
//! arrived, where its reply goes, the lease-table events, and the counters.

use core::net::Ipv4Addr;

use wire::dhcpv4::MessageType;
use wire::ethernet::MacAddr;

use crate::util::Counter;

/// How a message reached us, which decides between the RENEWING (unicast) and REBINDING
/// (broadcast) states and is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Broadcast,
    Unicast,
}

/// Where a reply goes (RFC 2131 §4.1, `giaddr` 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// To 255.255.255.255 and ff:ff:ff:ff:ff:ff (the client asked, or a NAK).
    Broadcast,
    /// To this address and MAC (`yiaddr` of an OFFER/ACK, or the client's `ciaddr`).
    Unicast(Ipv4Addr, MacAddr),
}

/// A reply to send from port 67 to port 68.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dhcpv4Reply {
    pub message: Vec<u8>,
    pub to: Destination,
    pub kind: MessageType,
}

/// A change of the lease table; `mac` is the client's, `client` its lease key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv4Event {
    /// An ACK bound `addr` for `lease` seconds (a new lease, or one after INIT-REBOOT).
    Bound {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
        lease: u32,
    },
    /// An ACK in RENEWING or REBINDING extended the lease.
    Renewed {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
        lease: u32,
    },
    Released {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
    },
    /// The client found `addr` in use on the link; it is held out of the pool.
    Declined {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
    },
    Expired {
        mac: MacAddr,
        client: Vec<u8>,
        addr: Ipv4Addr,
    },
    /// A REQUEST was refused; `requested` is what the client asked for.
    Nak {
        mac: MacAddr,
        requested: Option<Ipv4Addr>,
        why: NakReason,
    },
}

/// Why a REQUEST got a NAK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NakReason {
    /// In SELECTING, the address is not the one we offered (or the offer ran out and the
    /// address went to someone else).
    NotOffered,
    /// The address is another client's.
    InUse,
    /// Not a pool address (another network, or not ours to give).
    NotInPool,
    /// A REQUEST in no state RFC 2131 §4.3.2 describes (e.g. neither address given).
    NoAddress,
}

impl NakReason {
    /// The Message option (56) of the NAK: why, for the client's log.
    pub(super) fn text(self) -> &'static [u8] {
        match self {
            NakReason::NotOffered => b"address not offered to this client",
            NakReason::InUse => b"address leased to another client",
            NakReason::NotInPool => b"address not in this server's pool",
            NakReason::NoAddress => b"no address requested",
        }
    }
}

/// Messages not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dhcpv4Drop {
    /// Not a DHCP message, broken options, or not Ethernet.
    Malformed,
    /// A BOOTREPLY, or a server's message type (OFFER, ACK, NAK) from a client.
    NotFromClient,
    /// No message type (plain BOOTP is not served).
    NoMessageType,
    /// Through a relay agent (`giaddr` set): not served.
    Relayed,
    /// A DHCPDECLINE/RELEASE naming another server.
    NotForUs,
    /// A DISCOVER with every pool address taken.
    PoolExhausted,
}

/// Counters of a [`super::Dhcpv4Server`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dhcpv4Stats {
    pub rx: Counter<MessageType>,
    pub tx: Counter<MessageType>,
    pub dropped: Counter<Dhcpv4Drop>,
    pub naks: Counter<NakReason>,
    /// REQUESTs naming another server: our offer withdrawn.
    pub other_server: u64,
    /// Messages that arrived broadcast / unicast.
    pub broadcast_rx: u64,
    pub unicast_rx: u64,
    pub leases_now: u64,
    pub expired: u64,
    pub declined: u64,
}
