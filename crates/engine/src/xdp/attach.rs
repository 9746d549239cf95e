//! Attaching a loaded XDP program to a port: in the driver where the driver lets it, else on
//! the skb. One place for the connection receiver and the preliminary-phase learner, so both
//! refuse and explain alike.

use aya::programs::{Xdp, XdpFlags};

use super::mode::XdpMode;
use crate::port::PortSpec;
use crate::{Error, Result};

/// Attaches `prog` to the interface `ifindex` (the port's, in its namespace): native mode
/// first, SKB mode if the driver refuses. Returns the mode and, when native was refused, a note
/// saying why and that the program is `doing` in SKB mode. The link stays owned by the program
/// (and so by its `Ebpf`) until that is dropped.
pub(super) fn native_else_skb(
    prog: &mut Xdp,
    ifindex: u32,
    port: &PortSpec,
    doing: &str,
) -> Result<(XdpMode, Option<String>)> {
    let mut refusals = Vec::new();
    for (mode, flags) in [
        (XdpMode::Native, XdpFlags::DRV_MODE),
        (XdpMode::Skb, XdpFlags::SKB_MODE),
    ] {
        match prog.attach_to_if_index(ifindex, flags) {
            Ok(_link) => {
                let note = (!refusals.is_empty()).then(|| {
                    format!(
                        "{}: native XDP refused ({}); {doing} in SKB mode",
                        port.ifname,
                        refusals.join("; ")
                    )
                });
                return Ok((mode, note));
            }
            Err(e) => refusals.push(format!("{mode:?} mode: {e}")),
        }
    }
    Err(Error::Bpf(format!(
        "cannot attach XDP to {} (port {}): {}",
        port.ifname,
        port.name,
        refusals.join("; ")
    )))
}
