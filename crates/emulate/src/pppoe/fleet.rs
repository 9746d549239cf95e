//! Many PPPoE subscribers behind one port, as an access concentrator meets them: each session
//! its own [`Client`] with its own MAC address and Host-Uniq, logging in as one user of a
//! list (a subscriber table's), started all at once or at a set rate — and the setup
//! statistics a BRAS benchmark reports: per session first PADI to network phase complete
//! (IPCP and, where on, IPv6CP), min/mean/p99/max, sessions per second, retransmissions and
//! failures by reason.
//!
//! Sans-I/O like its clients: a port loop feeds it frames and time ([`ControlPlane`] is
//! implemented in `control_plane`). Frames are dispatched to a client by destination MAC.
//!
//! [`ControlPlane`]: crate::control_plane::ControlPlane

use std::collections::{BTreeMap, BTreeSet};

use wire::ethernet::MacAddr;
use wire::units::Nanos;

use super::client::{Client, ClientConfig, ClientEvent, ClientState};
use super::SessionInfo;
use crate::ppp::link::{Credential, DownReason};
use crate::util::{min_deadline, Counter};

/// Where a session stands, for the fleet's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Standing {
    /// Up, ended, or never started.
    settled: bool,
    /// Ended or never started.
    down: bool,
}

fn standing(c: &Client) -> Standing {
    let down = matches!(c.state(), ClientState::Down(_) | ClientState::Idle);
    Standing {
        settled: down || c.is_up(),
        down,
    }
}

/// How the fleet behaves.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// What every subscriber does; its `mac` and `credential` are replaced per session and
    /// its entropy derived per session.
    pub client: ClientConfig,
    /// The logins: session `i` logs in as `logins[i % logins.len()]` (empty: the template's
    /// credential for all).
    pub logins: Vec<Credential>,
    pub sessions: usize,
    /// The first three bytes of every session's MAC; the last three are the session's
    /// index. Keep the locally administered bit (0x02) set and the multicast bit clear.
    pub mac_prefix: [u8; 3],
    /// Sessions started per second; 0 starts them all at once.
    pub start_rate: u32,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            client: ClientConfig::default(),
            logins: Vec::new(),
            sessions: 1,
            mac_prefix: [0x02, 0x77, 0x73],
            start_rate: 0,
        }
    }
}

/// The largest fleet (three bytes of MAC address per session index).
pub const MAX_SESSIONS: usize = 1 << 24;

/// Setup-time statistics of a fleet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetupStats {
    pub sessions: usize,
    /// Sessions up now.
    pub up: usize,
    /// Sessions that came up at least once.
    pub came_up: usize,
    /// Sessions neither up nor ended (still setting up).
    pub pending: usize,
    /// Sessions that ended without ever coming up, by reason.
    pub failed: Counter<DownReason>,
    /// First PADI to network phase complete, over the sessions that came up.
    pub min: Nanos,
    pub mean: Nanos,
    /// Nearest-rank 50th, 90th and 99th percentiles.
    pub p50: Nanos,
    pub p90: Nanos,
    pub p99: Nanos,
    pub max: Nanos,
    /// From the first session's start to the last one's coming up.
    pub span: Nanos,
    /// `came_up` / `span`.
    pub sessions_per_s: f64,
    /// PADI/PADR retries plus PPP retransmissions, all sessions.
    pub retransmits: u64,
    /// The most sessions up at the same time.
    pub peak_up: usize,
}

/// One session's outcome.
#[derive(Debug, Clone)]
pub struct SessionOutcome<'a> {
    pub index: usize,
    pub mac: MacAddr,
    pub user: &'a str,
    pub state: &'a ClientState,
    pub info: Option<SessionInfo>,
    pub setup: Option<Nanos>,
}

/// Many subscribers on one port.
#[derive(Debug)]
pub struct ClientFleet {
    start_rate: u32,
    clients: Vec<Client>,
    users: Vec<String>,
    by_mac: BTreeMap<MacAddr, usize>,
    started: usize,
    first_start: Option<Nanos>,
    last_up: Option<Nanos>,
    /// Whether each session is counted in `up_now`.
    was_up: Vec<bool>,
    up_now: usize,
    peak_up: usize,
    /// Each session's next timer, and the same ordered by time, so that `poll` and
    /// `next_deadline` touch only what is due (tens of thousands of sessions).
    deadlines: Vec<Option<Nanos>>,
    timers: BTreeSet<(Nanos, usize)>,
    /// Each session's standing and how many are settled / down, kept as sessions change.
    standing: Vec<Standing>,
    settled_count: usize,
    down_count: usize,
    tx: Vec<Vec<u8>>,
    events: Vec<(usize, ClientEvent)>,
}

impl ClientFleet {
    /// A fleet of `cfg.sessions` (at most [`MAX_SESSIONS`]) subscribers, none started.
    pub fn new(cfg: FleetConfig) -> ClientFleet {
        let n = cfg.sessions.min(MAX_SESSIONS);
        let mut clients = Vec::with_capacity(n);
        let mut users = Vec::with_capacity(n);
        let mut by_mac = BTreeMap::new();
        for i in 0..n {
            let mut c = cfg.client.clone();
            let b = (i as u32).to_be_bytes();
            c.mac = MacAddr([
                cfg.mac_prefix[0],
                cfg.mac_prefix[1],
                cfg.mac_prefix[2],
                b[1],
                b[2],
                b[3],
            ]);
            if let Some(l) = cfg.logins.get(i % cfg.logins.len().max(1)) {
                c.credential = l.clone();
            }
            c.entropy = cfg.client.entropy.derive(0xf1ee7 + i as u64);
            users.push(c.credential.user.clone());
            by_mac.insert(c.mac, i);
            clients.push(Client::new(c));
        }
        ClientFleet {
            start_rate: cfg.start_rate,
            clients,
            users,
            by_mac,
            started: 0,
            first_start: None,
            last_up: None,
            was_up: vec![false; n],
            up_now: 0,
            peak_up: 0,
            deadlines: vec![None; n],
            timers: BTreeSet::new(),
            standing: vec![
                Standing {
                    settled: true,
                    down: true
                };
                n
            ],
            settled_count: n,
            down_count: n,
            tx: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Starts the fleet: every session now, or the first and the rest at the start rate.
    pub fn start(&mut self, now: Nanos) {
        self.first_start = Some(now);
        self.start_due(now);
    }

    /// Closes every session (LCP Terminate, PADT; a session still in discovery gives up).
    pub fn close_all(&mut self, now: Nanos) {
        self.started = self.clients.len();
        for i in 0..self.clients.len() {
            if matches!(
                self.clients[i].state(),
                ClientState::Session | ClientState::Discovering | ClientState::Requesting
            ) {
                self.clients[i].close(now);
                self.collect(i, now);
            }
        }
    }

    /// Ends every session still open at once with a PADT (after [`close_all`](Self::close_all)
    /// had its grace): no session is left for the AC to time out.
    pub fn abort_all(&mut self, now: Nanos) {
        self.started = self.clients.len();
        for i in 0..self.clients.len() {
            if !self.standing[i].down {
                self.clients[i].abort(now);
                self.collect(i, now);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.clients.len()
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Sessions up now.
    pub fn up(&self) -> usize {
        self.up_now
    }

    /// Every session started and is up or ended.
    pub fn settled(&self) -> bool {
        self.started == self.clients.len() && self.settled_count == self.clients.len()
    }

    /// No session is up or setting up.
    pub fn all_down(&self) -> bool {
        self.down_count == self.clients.len()
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    /// Session events, with the session's index.
    pub fn take_events(&mut self) -> Vec<(usize, ClientEvent)> {
        std::mem::take(&mut self.events)
    }

    /// Every session's outcome so far, in index order.
    pub fn outcomes(&self) -> impl Iterator<Item = SessionOutcome<'_>> + '_ {
        self.clients
            .iter()
            .enumerate()
            .map(|(i, c)| SessionOutcome {
                index: i,
                mac: c.config().mac,
                user: &self.users[i],
                state: c.state(),
                info: c.session_info(),
                setup: c.stats.setup,
            })
    }

    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        if frame.len() < 14 {
            return false;
        }
        let mut dst = [0u8; 6];
        dst.copy_from_slice(&frame[..6]);
        match self.by_mac.get(&MacAddr(dst)) {
            Some(&i) => {
                let claimed = self.clients[i].handle_frame(now, frame);
                self.collect(i, now);
                claimed
            }
            // Broadcasts and frames for other stations: ours only if PPPoE.
            None => matches!([frame[12], frame[13]], [0x88, 0x63] | [0x88, 0x64]),
        }
    }

    pub fn poll(&mut self, now: Nanos) {
        self.start_due(now);
        let due: Vec<usize> = self
            .timers
            .iter()
            .take_while(|(d, _)| *d <= now)
            .map(|(_, i)| *i)
            .collect();
        for i in due {
            self.clients[i].poll(now);
            self.collect(i, now);
        }
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        let next_start = (self.started < self.clients.len() && self.start_rate > 0)
            .then(|| self.start_time(self.started))
            .flatten();
        min_deadline(next_start, self.timers.first().map(|(d, _)| *d))
    }

    /// When session `i` is due to start.
    fn start_time(&self, i: usize) -> Option<Nanos> {
        let first = self.first_start?;
        if self.start_rate == 0 {
            return Some(first);
        }
        let offset = (i as u128 * 1_000_000_000 / u128::from(self.start_rate)) as u64;
        Some(Nanos(first.0.saturating_add(offset)))
    }

    fn start_due(&mut self, now: Nanos) {
        while self.started < self.clients.len()
            && self.start_time(self.started).is_some_and(|t| t <= now)
        {
            let i = self.started;
            self.started += 1;
            self.clients[i].start(now);
            self.collect(i, now);
        }
    }

    /// Moves client `i`'s frames and events into the fleet's, keeping the up count.
    fn collect(&mut self, i: usize, now: Nanos) {
        let c = &mut self.clients[i];
        self.tx.append(&mut c.take_transmit());
        for e in c.take_events() {
            match &e {
                ClientEvent::Up(_) if !self.was_up[i] => {
                    self.up_now += 1;
                    self.peak_up = self.peak_up.max(self.up_now);
                    self.last_up = Some(now);
                }
                // Only a session that was up counts down; one that failed in setup never
                // counted up.
                ClientEvent::Down(_) if self.was_up[i] => {
                    self.up_now -= 1;
                }
                _ => {}
            }
            self.was_up[i] = matches!(e, ClientEvent::Up(_))
                || (self.was_up[i] && !matches!(e, ClientEvent::Down(_)));
            self.events.push((i, e));
        }
        self.refresh(i);
    }

    /// Files session `i`'s next timer and standing after anything touched it (every call
    /// into a client is followed by [`collect`](Self::collect), which calls this).
    fn refresh(&mut self, i: usize) {
        let next = self.clients[i].next_deadline();
        if self.deadlines[i] != next {
            if let Some(old) = self.deadlines[i] {
                self.timers.remove(&(old, i));
            }
            if let Some(d) = next {
                self.timers.insert((d, i));
            }
            self.deadlines[i] = next;
        }
        let now = standing(&self.clients[i]);
        let was = std::mem::replace(&mut self.standing[i], now);
        self.settled_count =
            self.settled_count + usize::from(now.settled) - usize::from(was.settled);
        self.down_count = self.down_count + usize::from(now.down) - usize::from(was.down);
    }

    /// The setup statistics so far.
    pub fn setup_stats(&self) -> SetupStats {
        let mut setups: Vec<Nanos> = self.clients.iter().filter_map(|c| c.stats.setup).collect();
        setups.sort_unstable();
        let mut s = SetupStats {
            sessions: self.clients.len(),
            up: self.clients.iter().filter(|c| c.is_up()).count(),
            came_up: setups.len(),
            peak_up: self.peak_up,
            ..SetupStats::default()
        };
        for c in &self.clients {
            s.retransmits += c.stats.retransmits;
            match c.state() {
                ClientState::Down(r) if c.stats.setup.is_none() => s.failed.add(*r),
                ClientState::Discovering | ClientState::Requesting => s.pending += 1,
                ClientState::Session if !c.is_up() => s.pending += 1,
                _ => {}
            }
        }
        if let (Some(first), Some(last)) = (setups.first(), setups.last()) {
            s.min = *first;
            s.max = *last;
            let total: u128 = setups.iter().map(|d| u128::from(d.0)).sum();
            s.mean = Nanos((total / setups.len() as u128) as u64);
            let rank = |pct: usize| setups[(setups.len() * pct).div_ceil(100).max(1) - 1];
            (s.p50, s.p90, s.p99) = (rank(50), rank(90), rank(99));
        }
        if let (Some(a), Some(b)) = (self.first_start, self.last_up) {
            s.span = Nanos(b.0.saturating_sub(a.0));
            if s.span.0 > 0 {
                s.sessions_per_s = s.came_up as f64 / (s.span.0 as f64 / 1e9);
            }
        }
        s
    }
}
