//! The in-memory test bench shared by the PPPoE tests: our client(s) and our server wired
//! back to back with a simulated clock, optional loss, and crafted-frame helpers.
#![allow(dead_code)]

use emulate::ppp::{AuthMethod, Credential, DownReason};
use emulate::pppoe::client::{Client, ClientConfig, ClientEvent};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::util::Entropy;
use emulate::Nanos;
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::pppoe::{PppoeCode, PppoeHeader, PppoeRepr, TagIter, TagType, TagWriter};

pub const SEC: u64 = 1_000_000_000;

pub struct Net {
    pub now: Nanos,
    pub server: Server,
    pub clients: Vec<Client>,
    /// Drop every Nth frame (either direction); 0 = lossless.
    pub drop_every: usize,
    pub sent: usize,
    pub dropped: usize,
    /// Drop everything clients send / the server sends.
    pub cut_up: bool,
    pub cut_down: bool,
    pub server_events: Vec<ServerEvent>,
    pub client_events: Vec<(usize, ClientEvent)>,
    /// Every frame the server sent, for inspection.
    pub server_log: Vec<Vec<u8>>,
}

impl Net {
    pub fn new(server: ServerConfig, clients: Vec<ClientConfig>) -> Net {
        Net {
            now: Nanos(0),
            server: Server::new(server),
            clients: clients.into_iter().map(Client::new).collect(),
            drop_every: 0,
            sent: 0,
            dropped: 0,
            cut_up: false,
            cut_down: false,
            server_events: Vec::new(),
            client_events: Vec::new(),
            server_log: Vec::new(),
        }
    }

    pub fn one(server: ServerConfig, client: ClientConfig) -> Net {
        Net::new(server, vec![client])
    }

    pub fn start_all(&mut self) {
        for c in &mut self.clients {
            c.start(self.now);
        }
    }

    pub fn lost(&mut self) -> bool {
        self.sent += 1;
        if self.drop_every > 0 && self.sent % self.drop_every == 0 {
            self.dropped += 1;
            return true;
        }
        false
    }

    /// Delivers everything in flight once; returns whether any frame moved.
    pub fn exchange(&mut self) -> bool {
        let now = self.now;
        let down = self.server.take_transmit();
        let mut up = Vec::new();
        for c in &mut self.clients {
            up.extend(c.take_transmit());
        }
        let moved = !down.is_empty() || !up.is_empty();
        for f in down {
            self.server_log.push(f.clone());
            if self.cut_down || self.lost() {
                trace(now, "S->C DROP", &f);
                continue;
            }
            trace(now, "S->C", &f);
            for c in &mut self.clients {
                c.handle_frame(now, &f);
            }
        }
        for f in up {
            if self.cut_up || self.lost() {
                trace(now, "C->S DROP", &f);
                continue;
            }
            trace(now, "C->S", &f);
            self.server.handle_frame(now, &f);
        }
        self.collect();
        moved
    }

    pub fn collect(&mut self) {
        self.server_events.extend(self.server.take_events());
        for (i, c) in self.clients.iter_mut().enumerate() {
            for e in c.take_events() {
                self.client_events.push((i, e));
            }
        }
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.clients
            .iter()
            .filter_map(Client::next_deadline)
            .chain(self.server.next_deadline())
            .min()
    }

    /// Runs until `done` or simulated time passes `limit` (seconds from now).
    pub fn run_until(&mut self, limit_s: u64, done: impl Fn(&Net) -> bool) -> bool {
        let limit = Nanos(self.now.0 + limit_s * SEC);
        for _ in 0..1_000_000 {
            if done(self) {
                return true;
            }
            if self.exchange() {
                continue;
            }
            let Some(d) = self.next_deadline() else {
                return done(self);
            };
            if d > limit {
                return done(self);
            }
            self.now = d.max(self.now);
            self.server.poll(self.now);
            for c in &mut self.clients {
                c.poll(self.now);
            }
        }
        panic!("harness did not settle");
    }

    pub fn all_up(&self) -> bool {
        self.clients.iter().all(Client::is_up)
            && self.server.stats.sessions_up == self.clients.len() as u64
    }

    pub fn advance(&mut self, secs: u64) {
        let end = Nanos(self.now.0 + secs * SEC);
        let _ = self.run_until(secs, |_| false);
        self.now = end.max(self.now);
        self.server.poll(self.now);
        for c in &mut self.clients {
            c.poll(self.now);
        }
        while self.exchange() {}
    }

    pub fn server_down(&self) -> Vec<DownReason> {
        self.server_events
            .iter()
            .filter_map(|e| match e {
                ServerEvent::SessionDown { reason, .. } => Some(*reason),
                _ => None,
            })
            .collect()
    }

    pub fn client_down(&self, i: usize) -> Vec<DownReason> {
        self.client_events
            .iter()
            .filter_map(|(j, e)| match e {
                ClientEvent::Down(r) if *j == i => Some(*r),
                _ => None,
            })
            .collect()
    }
}

pub fn trace(now: Nanos, dir: &str, f: &[u8]) {
    if std::env::var_os("PPPOE_TRACE").is_none() {
        return;
    }
    let code = pppoe_code(f);
    let extra = if code == Some(PppoeCode::Session) && f.len() >= 24 {
        format!(
            "proto {:02x}{:02x} code {} id {}",
            f[20], f[21], f[22], f[23]
        )
    } else {
        String::new()
    };
    eprintln!("{:>12} {dir:10} {code:?} {extra}", now.0 / 1_000_000);
}

// ---- crafted frames ----

pub const CLIENT: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x20, 0x01]);

pub fn craft(dst: MacAddr, code: PppoeCode, sid: u16, tags: &[(TagType, &[u8])]) -> Vec<u8> {
    let len: usize = tags.iter().map(|(_, v)| 4 + v.len()).sum();
    let mut f = vec![0u8; 14 + 6 + len];
    EthernetRepr {
        src: CLIENT,
        dst,
        ethertype: if code == PppoeCode::Session {
            EtherType::PPPOE_SESSION
        } else {
            EtherType::PPPOE_DISCOVERY
        },
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))
    .unwrap();
    let mut h = PppoeHeader::new_unchecked(&mut f[14..]);
    PppoeRepr {
        code,
        session_id: sid,
        payload_len: len as u16,
    }
    .emit(&mut h)
    .unwrap();
    let mut w = TagWriter::new(h.payload_mut());
    for (t, v) in tags {
        w.push(*t, v).unwrap();
    }
    f
}

pub fn pppoe_code(f: &[u8]) -> Option<PppoeCode> {
    let h = PppoeHeader::new_checked(f.get(14..)?).ok()?;
    Some(h.code())
}

pub fn tag(f: &[u8], ty: TagType) -> Option<Vec<u8>> {
    let h = PppoeHeader::new_checked(&f[14..]).ok()?;
    TagIter::new(h.payload())
        .flatten()
        .find(|(t, _)| *t == ty)
        .map(|(_, v)| v.to_vec())
}

pub fn ac_mac() -> MacAddr {
    ServerConfig::default().mac
}

pub fn server_cfg(auth: Vec<AuthMethod>) -> ServerConfig {
    ServerConfig {
        auth,
        credentials: vec![
            Credential::new("alice", "secret-a"),
            Credential::new("bob", "secret-b"),
        ],
        // Reproducible under the simulated clock (a real port uses Entropy::Os, the default).
        entropy: Entropy::Seeded(1),
        ..ServerConfig::default()
    }
}

pub fn client_cfg(n: u8, user: &str, pass: &str) -> ClientConfig {
    ClientConfig {
        mac: MacAddr([0x02, 0x00, 0x00, 0x00, 0x10, n]),
        credential: Credential::new(user, pass),
        entropy: Entropy::Seeded(100 + u64::from(n)),
        ..ClientConfig::default()
    }
}

pub fn ipv4_packet(tag: u8) -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 28];
    p.extend_from_slice(&[tag; 24]);
    p
}
