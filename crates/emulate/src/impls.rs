//! Which machine implements which port interface ([`crate::control_plane`]): listed here,
//! apart from both the traits and the machines, which then need not import each other.

use crate::control_plane::{control_plane, ip_relay};

control_plane!(
    crate::pppoe::server::Server,
    crate::pppoe::client::Client,
    crate::pppoe::fleet::ClientFleet,
    crate::arp_nd::Neighbors,
    crate::dslite::Aftr,
    crate::dslite::B4,
    crate::softwire::AftrPort,
    crate::softwire::B4Port,
    crate::mape_port::BrPort,
    crate::ipoe::IpoePort
);

ip_relay!(
    crate::pppoe::server::Server,
    crate::pppoe::client::Client,
    crate::softwire::AftrPort,
    crate::softwire::B4Port,
    crate::mape_port::BrPort,
    crate::ipoe::IpoePort
);
