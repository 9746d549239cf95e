//! Validation frames: one frame back on each learned tuple (RFC 9693 "Validation of
//! Connection Establishment"), addressed as a real reply — from the responder's address and
//! port the connection was opened to, to the (translated) address and port it came from — so
//! that the DUT must find the connection and undo its translation for the frame to reach the
//! initiator. The signature carries the connection's creation index as its sequence number,
//! so the initiator can tell which connections validated without trusting any header.

use std::collections::HashMap;
use std::net::IpAddr;

use wire::checksum;
use wire::encap::EncapSpec;
use wire::template::{FrameTemplate, StreamSpec};

use super::learn::Tuple;
use crate::{Error, Result};

/// Writes the validation frame of any learned tuple. One template per address pair (a NAPT
/// has one public address, so usually one template); ports are patched per frame with an
/// incremental checksum update (RFC 1624), as the flow generator does.
#[derive(Debug)]
pub struct ReplyWriter {
    stream_id: u16,
    frame_size: usize,
    macs: [u8; 12],
    templates: HashMap<(IpAddr, IpAddr), FrameTemplate>,
}

impl ReplyWriter {
    /// Validation frames of `frame_size` bytes (with FCS) for stream `stream_id`, sent from
    /// `src_mac` to `dst_mac` (the DUT's port).
    pub fn new(stream_id: u16, frame_size: usize, dst_mac: [u8; 6], src_mac: [u8; 6]) -> Self {
        let mut macs = [0u8; 12];
        macs[..6].copy_from_slice(&dst_mac);
        macs[6..].copy_from_slice(&src_mac);
        ReplyWriter {
            stream_id,
            frame_size,
            macs,
            templates: HashMap::new(),
        }
    }

    fn template(&mut self, src: IpAddr, dst: IpAddr) -> Result<&FrameTemplate> {
        if !self.templates.contains_key(&(src, dst)) {
            let ip = if src.is_ipv4() {
                wire::encap::IpVersion::V4
            } else {
                wire::encap::IpVersion::V6
            };
            let mut spec = StreamSpec::new(EncapSpec::plain(ip));
            spec.stream_id = self.stream_id;
            spec.src_ip = src;
            spec.dst_ip = dst;
            spec.src_port = 0;
            spec.dst_port = 0;
            let t = FrameTemplate::new(&spec, self.frame_size)
                .map_err(|e| Error::Config(format!("validation frame {src} -> {dst}: {e}")))?;
            self.templates.insert((src, dst), t);
        }
        Ok(&self.templates[&(src, dst)])
    }

    /// Writes into `out` the reply to connection `index`, which arrived as `learned`, stamped
    /// with `timestamp_ns`; returns its length (no FCS).
    pub fn write(
        &mut self,
        index: u64,
        learned: &Tuple,
        timestamp_ns: u64,
        out: &mut [u8],
    ) -> Result<usize> {
        let macs = self.macs;
        let t = self.template(learned.dst, learned.src)?;
        let len = t.len();
        let out = out.get_mut(..len).ok_or_else(|| {
            Error::Config(format!("validation frame of {len} B: buffer too small"))
        })?;
        out.copy_from_slice(t.bytes());
        out[..12].copy_from_slice(&macs);
        t.stamp(out, index, timestamp_ns);
        let (csum_at, _) = t.udp_checksum();
        let udp_at = t.signature_offset() - wire::encap::UDP_HEADER;
        let mut csum = u16::from_be_bytes([out[csum_at], out[csum_at + 1]]);
        for (at, port) in [(udp_at, learned.dst_port), (udp_at + 2, learned.src_port)] {
            out[at..at + 2].copy_from_slice(&port.to_be_bytes());
            csum = checksum::update_word(csum, 0, port);
        }
        out[csum_at..csum_at + 2].copy_from_slice(&checksum::udp_nonzero(csum).to_be_bytes());
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_v4_verifies(f: &[u8]) -> bool {
        let src: [u8; 4] = f[26..30].try_into().unwrap();
        let dst: [u8; 4] = f[30..34].try_into().unwrap();
        let ph = checksum::pseudo_header_v4(src.into(), dst.into(), 17, (f.len() - 34) as u16);
        checksum::fold(ph + checksum::sum(&f[34..])) == 0xffff
    }

    #[test]
    fn reply_goes_back_on_the_learned_tuple() {
        let learned = Tuple {
            src: IpAddr::from([203, 0, 113, 1]),
            src_port: 40_000,
            dst: IpAddr::from([203, 0, 113, 2]),
            dst_port: 9,
        };
        let mut w = ReplyWriter::new(2, 64, [2; 6], [4; 6]);
        let mut buf = vec![0xa5; 2048];
        let n = w.write(77, &learned, 123, &mut buf).unwrap();
        assert_eq!(n, 60);
        let f = &buf[..n];
        assert_eq!((&f[..6], &f[6..12]), (&[2u8; 6][..], &[4u8; 6][..]));
        let (back, id, seq) = Tuple::of_frame(f).unwrap();
        assert_eq!((id, seq), (2, 77));
        assert_eq!(back.src, learned.dst);
        assert_eq!(back.dst, learned.src);
        assert_eq!((back.src_port, back.dst_port), (9, 40_000));
        assert!(udp_v4_verifies(f), "UDP checksum after the port patch");
        assert!(checksum::verifies(&f[14..34]), "IPv4 header checksum");
        // Ports whose sum wraps the checksum still verify.
        let odd = Tuple {
            src_port: 0xffff,
            dst_port: 0xfffe,
            ..learned
        };
        let n = w
            .write(u64::from(u32::MAX), &odd, u64::MAX, &mut buf)
            .unwrap();
        assert!(udp_v4_verifies(&buf[..n]));
    }
}
