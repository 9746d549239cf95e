//! The one table of the matrix's dimensions ([`DIMENSIONS`]): per dimension its `[[matrix]]`
//! key, how its values are written and checked, how a block's values expand into cases, its
//! case-id segment (written and read back by the same row), its hook variable and its column
//! in the report. A new dimension is a row here, a field of [`Dims`] and [`Matrix`], and
//! whatever applies it (docs/architecture.md, "Adding a dimension").

use wire::encap::{EncapSpec, IpVersion, Tagging};
use wire::linerate::FrameSize;

use super::dims::{Dims, Matrix, Protocol};
use super::frame_size::fixed_frame_size;
use super::source::did_you_mean;

/// How a dimension's values are written in a `[[matrix]]` block. The plan parser checks the
/// syntax (with the texts every key's errors use), then hands each value to the row's
/// [`Dimension::store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// A list of these words.
    Words(&'static [&'static str]),
    /// A list of integers in `min..=max`.
    Ints { min: i64, max: i64 },
    /// A list of integers, or this word. The row's [`Dimension::store`] bounds the integers
    /// (one conversion with its own texts: the frame size's `fixed_frame_size`).
    IntsOrWord { word: &'static str },
    /// A list of non-empty strings.
    Texts,
    /// `true` or `false`.
    Flag,
    /// A table of user dimensions, `NAME = [values]`.
    Table,
}

/// One value of a key, its syntax checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Word(&'static str),
    Int(i64),
    Text(String),
    Flag(bool),
    /// One user dimension: its name and values.
    Named(String, Vec<String>),
}

/// A value refused by its dimension: what is wrong and, where there is one, what to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub hint: Option<String>,
}

impl Refusal {
    fn new(message: impl Into<String>) -> Refusal {
        Refusal {
            message: message.into(),
            hint: None,
        }
    }
}

/// What a value's check needs besides its block: the plan's profile names.
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    pub profiles: &'a [&'a str],
}

/// What a block without the dimension's key has.
#[derive(Debug, Clone, Copy)]
pub enum Absent {
    /// Nothing: the key is required.
    Required,
    /// No values: its cases have no value of the dimension.
    Nothing,
    /// These values.
    Default(fn(&mut Matrix, &Known<'_>)),
}

/// Where a dimension's value stands in a case id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// The first segment (the profile).
    First,
    /// The second segment (`udp4`: the protocol with the IP version).
    Second,
    /// Inside the named dimension's segment (the IP version in the protocol's).
    Within(&'static str),
    /// Segments of its own after the second, told apart by their form (`64B`, `s2`,
    /// `tos=46`); none when the case has no value.
    Own,
}

/// How the report shows a dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// A column of the results table named `name`, at `rank` among the dimensions' columns
    /// (the published layout: encap before frame_size); `sparse`: only in runs where some row
    /// has a value.
    Own {
        name: &'static str,
        rank: u8,
        sparse: bool,
    },
    /// No column: the case's value reads `name=value` beside the user dimensions (its case-id
    /// segments), in points, labels and chart series.
    Label,
    /// No column: the family of charts and tables a row belongs to names it
    /// (`IPv4 UDP, bidirectional`).
    Family,
}

/// One dimension of the matrix. Every function takes the typed value from [`Dims`] or
/// [`Matrix`] and nothing else.
pub struct Dimension {
    /// Its key in a `[[matrix]]` block.
    pub key: &'static str,
    /// How the key's values are written.
    pub syntax: Syntax,
    /// One value, its syntax checked, added to the block's values (`Err`: the value is wrong,
    /// and why). The dimensions before it in the table are already stored.
    pub store: fn(&mut Matrix, Item, &Known<'_>) -> Result<(), Refusal>,
    /// A block without the key.
    pub absent: Absent,
    /// Whether a block whose key is wrong is dropped (it cannot expand without it; its other
    /// checks would only repeat the error).
    pub needed: bool,
    /// The cases a partial case (the dimensions before this one set) makes with this
    /// dimension's values of the block, in order.
    pub expand: fn(&Matrix, &Dims) -> Vec<Dims>,
    /// Where its value stands in a case id.
    pub segment: Segment,
    /// Its case-id segments for a case.
    pub write: fn(&Dims) -> Vec<String>,
    /// Reads one segment back into a case: `false` when the segment is not this dimension's.
    pub read: fn(&str, &mut Dims) -> bool,
    /// The hook variable (`WR_<NAME>`: one per user dimension).
    pub hook: &'static str,
    /// Its hook variables for a case (none when the case has no value).
    pub env: fn(&Dims) -> Vec<(String, String)>,
    /// How the report shows it.
    pub column: Column,
    /// Its cell in the report's results table (empty without a value, or without a column).
    pub cell: fn(&Dims) -> String,
}

/// The dimensions of the matrix, in case-id order (which is also the order in which a block
/// expands: the last row varies fastest).
pub static DIMENSIONS: [Dimension; 13] = [
    Dimension {
        key: "profile",
        syntax: Syntax::Texts,
        store: |m, item, known| {
            let Item::Text(s) = item else {
                return Err(Refusal::new("expected a profile name"));
            };
            if known.profiles.contains(&s.as_str()) {
                m.profile.push(s);
                return Ok(());
            }
            let hint = did_you_mean(&s, known.profiles.iter().copied())
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| format!("profiles: {}", known.profiles.join(", ")));
            Err(Refusal {
                message: format!("no profile `{s}` in [dut.profiles]"),
                hint: Some(hint),
            })
        },
        absent: Absent::Default(|m, known| {
            m.profile = known.profiles.iter().map(|p| p.to_string()).collect()
        }),
        needed: true,
        expand: |m, d| each(d, m.profile.iter().cloned(), |d, p| d.profile = p),
        segment: Segment::First,
        write: |d| vec![d.profile.clone()],
        read: |s, d| {
            d.profile = s.to_string();
            true
        },
        hook: "WR_PROFILE",
        env: |d| vec![("WR_PROFILE".into(), d.profile.clone())],
        column: Column::Own {
            name: "profile",
            rank: 0,
            sparse: false,
        },
        cell: |d| d.profile.clone(),
    },
    Dimension {
        key: "protocol",
        syntax: Syntax::Words(&["udp", "tcp"]),
        store: |m, item, _| {
            m.protocol.push(match item {
                Item::Word("tcp") => Protocol::Tcp,
                _ => Protocol::Udp,
            });
            Ok(())
        },
        absent: Absent::Required,
        needed: true,
        expand: |m, d| each(d, m.protocol.iter().copied(), |d, p| d.protocol = p),
        segment: Segment::Second,
        write: |d| vec![format!("{}{}", d.protocol, d.ip.number())],
        read: |s, d| {
            let (protocol, ip) = match s.strip_prefix("tcp") {
                Some(ip) => (Protocol::Tcp, ip),
                None => (Protocol::Udp, s.strip_prefix("udp").unwrap_or("4")),
            };
            d.protocol = protocol;
            d.ip = if ip == "6" {
                IpVersion::V6
            } else {
                IpVersion::V4
            };
            true
        },
        hook: "WR_PROTOCOL",
        env: |d| vec![("WR_PROTOCOL".into(), d.protocol.to_string())],
        column: Column::Own {
            name: "protocol",
            rank: 1,
            sparse: false,
        },
        cell: |d| d.protocol.to_string(),
    },
    Dimension {
        key: "ip",
        syntax: Syntax::Ints { min: 4, max: 6 },
        store: |m, item, _| {
            m.ip.push(match item {
                Item::Int(4) => IpVersion::V4,
                Item::Int(6) => IpVersion::V6,
                _ => return Err(Refusal::new("IP version must be 4 or 6")),
            });
            Ok(())
        },
        absent: Absent::Default(|m, _| m.ip = vec![IpVersion::V4]),
        needed: true,
        expand: |m, d| each(d, m.ip.iter().copied(), |d, ip| d.ip = ip),
        segment: Segment::Within("protocol"),
        write: |_| Vec::new(),
        read: |_, _| false,
        hook: "WR_IP",
        env: |d| vec![("WR_IP".into(), d.ip.number().to_string())],
        column: Column::Own {
            name: "ip",
            rank: 2,
            sparse: false,
        },
        cell: |d| d.ip.number().to_string(),
    },
    Dimension {
        key: "frame-size",
        syntax: Syntax::IntsOrWord { word: "imix" },
        store: |m, item, _| {
            match item {
                // One IMIX per block, after the sizes.
                Item::Word(_) if m.has_imix() => {}
                Item::Word(_) => m.frame_size.push(FrameSize::Imix),
                Item::Int(n) => {
                    // The one check of a size: its range and every IP version of the block.
                    let size =
                        fixed_frame_size(n, &m.ip).map_err(|e| Refusal::new(e.to_string()))?;
                    let at = m.frame_size.len() - usize::from(m.has_imix());
                    m.frame_size.insert(at, size);
                }
                _ => return Err(Refusal::new("expected a frame size")),
            }
            Ok(())
        },
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| match d.protocol {
            Protocol::Udp => each(d, m.frame_size.iter().copied(), |d, f| d.frame = Some(f)),
            Protocol::Tcp => vec![d.clone()],
        },
        segment: Segment::Own,
        write: |d| match d.frame {
            Some(FrameSize::Fixed { bytes }) => vec![format!("{bytes}B")],
            Some(FrameSize::Imix) => vec!["imix".into()],
            None => Vec::new(),
        },
        read: |s, d| {
            if s == "imix" {
                d.frame = Some(FrameSize::Imix);
                return true;
            }
            match s.strip_suffix('B').and_then(|n| n.parse().ok()) {
                Some(bytes) => {
                    d.frame = Some(FrameSize::Fixed { bytes });
                    true
                }
                None => false,
            }
        },
        hook: "WR_FRAME_SIZE",
        env: |d| {
            d.frame
                .map(|f| ("WR_FRAME_SIZE".into(), f.to_string()))
                .into_iter()
                .collect()
        },
        column: Column::Own {
            name: "frame_size",
            rank: 4,
            sparse: false,
        },
        cell: |d| d.frame.map(|f| f.to_string()).unwrap_or_default(),
    },
    Dimension {
        key: "sessions",
        syntax: Syntax::Ints { min: 1, max: 128 },
        store: |m, item, _| int(item).map(|n| m.sessions.push(n as u32)),
        absent: Absent::Default(|m, _| m.sessions = vec![1]),
        needed: false,
        expand: |m, d| match d.protocol {
            Protocol::Tcp => each(d, m.sessions.iter().copied(), |d, s| d.sessions = Some(s)),
            Protocol::Udp => vec![d.clone()],
        },
        segment: Segment::Own,
        write: |d| d.sessions.map(|s| format!("s{s}")).into_iter().collect(),
        read: |s, d| read_number(s.strip_prefix('s'), &mut d.sessions),
        hook: "WR_SESSIONS",
        env: |d| number_env("WR_SESSIONS", d.sessions),
        column: Column::Own {
            name: "sessions",
            rank: 5,
            sparse: false,
        },
        cell: |d| text(d.sessions),
    },
    Dimension {
        key: "mss",
        syntax: Syntax::Ints { min: 88, max: 9000 },
        store: |m, item, _| int(item).map(|n| m.mss.push(n as u32)),
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| match d.protocol {
            Protocol::Tcp => each(d, optional(&m.mss), |d, v| d.mss = v),
            Protocol::Udp => vec![d.clone()],
        },
        segment: Segment::Own,
        write: |d| d.mss.map(|m| format!("mss{m}")).into_iter().collect(),
        read: |s, d| read_number(s.strip_prefix("mss"), &mut d.mss),
        hook: "WR_MSS",
        env: |d| number_env("WR_MSS", d.mss),
        column: Column::Own {
            name: "mss",
            rank: 6,
            sparse: false,
        },
        cell: |d| text(d.mss),
    },
    Dimension {
        key: "encap",
        syntax: Syntax::Texts,
        store: |m, item, _| {
            let Item::Text(s) = item else {
                return Err(Refusal::new("expected an encapsulation"));
            };
            m.encap.push(parse_encap(&s).map_err(Refusal::new)?);
            Ok(())
        },
        absent: Absent::Nothing,
        needed: false,
        // TCP runs iperf3 over plain interfaces: no encapsulation.
        expand: |m, d| match d.protocol {
            Protocol::Udp => each(d, optional(&m.encap), |d, e| {
                d.encap = e.map(|mut e| {
                    e.ip = d.ip;
                    e
                })
            }),
            Protocol::Tcp => vec![d.clone()],
        },
        segment: Segment::Own,
        write: |d| {
            d.encap
                .iter()
                .map(|e| format!("encap={}", spell_encap(e)))
                .collect()
        },
        read: |s, d| match s
            .strip_prefix("encap=")
            .map(|v| (v, v.parse::<EncapSpec>()))
        {
            Some((v, Ok(mut e))) => {
                // Older runs' `encap` user variable named the IP version; the dimension
                // takes the case's.
                if !names_ip(v) && !e.ipv4_in_ipv6() {
                    e.ip = d.ip;
                }
                d.encap = Some(e);
                true
            }
            _ => false,
        },
        hook: "WR_ENCAP",
        env: |d| {
            d.encap
                .iter()
                .map(|e| ("WR_ENCAP".into(), spell_encap(e)))
                .collect()
        },
        column: Column::Own {
            name: "encap",
            rank: 3,
            sparse: false,
        },
        cell: |d| d.encap_or_plain().to_string(),
    },
    Dimension {
        key: "bidirectional",
        syntax: Syntax::Flag,
        store: |m, item, _| {
            m.bidirectional = item == Item::Flag(true);
            Ok(())
        },
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| {
            let mut d = d.clone();
            d.bidirectional = m.bidirectional && d.protocol == Protocol::Udp;
            vec![d]
        },
        segment: Segment::Own,
        write: |d| {
            if d.bidirectional {
                vec!["bidir".into()]
            } else {
                Vec::new()
            }
        },
        read: |s, d| {
            d.bidirectional |= s == "bidir";
            s == "bidir"
        },
        hook: "WR_BIDIRECTIONAL",
        env: |d| {
            if d.bidirectional {
                vec![("WR_BIDIRECTIONAL".into(), "1".into())]
            } else {
                Vec::new()
            }
        },
        column: Column::Family,
        cell: |_| String::new(),
    },
    Dimension {
        key: "offload",
        syntax: Syntax::Words(SWITCH_WORDS),
        store: |m, item, _| switch(item).map(|on| m.offload.push(on)),
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| each(d, optional(&m.offload), |d, v| d.offload = v),
        segment: Segment::Own,
        write: |d| switch_segment("offload", d.offload),
        read: |s, d| read_switch(s, "offload", &mut d.offload),
        hook: "WR_OFFLOAD",
        env: |d| switch_env("WR_OFFLOAD", d.offload),
        column: Column::Own {
            name: "offload",
            rank: 7,
            sparse: true,
        },
        cell: |d| d.offload.map(|o| on_off(o).to_string()).unwrap_or_default(),
    },
    Dimension {
        key: "fastpath",
        syntax: Syntax::Words(SWITCH_WORDS),
        store: |m, item, _| switch(item).map(|on| m.fastpath.push(on)),
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| each(d, optional(&m.fastpath), |d, v| d.fastpath = v),
        segment: Segment::Own,
        write: |d| switch_segment("fastpath", d.fastpath),
        read: |s, d| read_switch(s, "fastpath", &mut d.fastpath),
        hook: "WR_FASTPATH",
        env: |d| switch_env("WR_FASTPATH", d.fastpath),
        column: Column::Own {
            name: "fastpath",
            rank: 8,
            sparse: true,
        },
        cell: |d| {
            d.fastpath
                .map(|o| on_off(o).to_string())
                .unwrap_or_default()
        },
    },
    Dimension {
        key: "flows",
        syntax: Syntax::Ints {
            min: 1,
            max: u16::MAX as i64,
        },
        store: |m, item, _| int(item).map(|n| m.flows.push(n as u16)),
        absent: Absent::Nothing,
        needed: false,
        // iperf3 sends its own streams.
        expand: |m, d| match d.protocol {
            Protocol::Udp => each(d, optional(&m.flows), |d, v| d.flows = v),
            Protocol::Tcp => vec![d.clone()],
        },
        segment: Segment::Own,
        write: |d| d.flows.map(|n| format!("flows={n}")).into_iter().collect(),
        read: |s, d| read_number(s.strip_prefix("flows="), &mut d.flows),
        hook: "WR_FLOWS",
        env: |d| number_env("WR_FLOWS", d.flows),
        column: Column::Label,
        cell: |_| String::new(),
    },
    Dimension {
        key: "tos",
        syntax: Syntax::Ints { min: 0, max: 255 },
        store: |m, item, _| int(item).map(|n| m.tos.push(n as u8)),
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| match d.protocol {
            Protocol::Udp => each(d, optional(&m.tos), |d, v| d.tos = v),
            Protocol::Tcp => vec![d.clone()],
        },
        segment: Segment::Own,
        write: |d| d.tos.map(|t| format!("tos={t}")).into_iter().collect(),
        read: |s, d| read_number(s.strip_prefix("tos="), &mut d.tos),
        hook: "WR_TOS",
        env: |d| number_env("WR_TOS", d.tos),
        column: Column::Label,
        cell: |_| String::new(),
    },
    Dimension {
        key: "vars",
        syntax: Syntax::Table,
        store: |m, item, _| {
            let Item::Named(name, values) = item else {
                return Err(Refusal::new("expected a user dimension"));
            };
            m.vars.push((name, values));
            Ok(())
        },
        absent: Absent::Nothing,
        needed: false,
        expand: |m, d| {
            let mut out = vec![d.clone()];
            for (name, values) in &m.vars {
                out = out
                    .iter()
                    .flat_map(|d| {
                        values.iter().map(move |v| {
                            let mut d = d.clone();
                            d.vars.push((name.clone(), v.clone()));
                            d
                        })
                    })
                    .collect();
            }
            out
        },
        segment: Segment::Own,
        write: |d| d.vars.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        // Any `name=value` no dimension before it took.
        read: |s, d| match s.split_once('=') {
            Some((k, v)) => {
                d.vars.push((k.into(), v.into()));
                true
            }
            None => false,
        },
        hook: "WR_<NAME>",
        env: |d| {
            d.vars
                .iter()
                .map(|(k, v)| (env_name(k), v.clone()))
                .collect()
        },
        column: Column::Label,
        cell: |_| String::new(),
    },
];

/// The row of the dimension whose plan key is `key`.
pub fn dimension(key: &str) -> Option<&'static Dimension> {
    DIMENSIONS.iter().find(|d| d.key == key)
}

impl Dims {
    /// The case id: every dimension's segments joined by `/`
    /// (`profile/udp4/64B[/sN][/mssN][/encap=…][/bidir][/offload=on][/fastpath=on][/flows=N]
    /// [/tos=N][/var=value…]`): readable and independent of the case's position in the plan.
    pub fn id(&self) -> String {
        DIMENSIONS
            .iter()
            .flat_map(|d| (d.write)(self))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The dimensions a case id names ([`Dims::id`] read back): the first two segments by
    /// position, each other one by the first dimension whose form it has. Segments no
    /// dimension reads are left out.
    pub fn of_id(id: &str) -> Dims {
        let mut d = Dims::default();
        let mut parts = id.split('/');
        for at in [Segment::First, Segment::Second] {
            if let (Some(s), Some(dim)) =
                (parts.next(), DIMENSIONS.iter().find(|x| x.segment == at))
            {
                (dim.read)(s, &mut d);
            }
        }
        for s in parts {
            d.read_segment(s);
        }
        d
    }

    /// Reads one segment after the second into these dimensions; `false` when no dimension
    /// takes it.
    pub fn read_segment(&mut self, s: &str) -> bool {
        DIMENSIONS
            .iter()
            .filter(|x| x.segment == Segment::Own)
            .any(|x| (x.read)(s, self))
    }

    /// The hook variables of the case's dimensions, in table order.
    pub fn env(&self) -> Vec<(String, String)> {
        DIMENSIONS.iter().flat_map(|d| (d.env)(self)).collect()
    }

    /// The dimensions the report shows as `name=value` ([`Column::Label`]): the stream
    /// dimensions, then the user dimensions, as their case-id segments read.
    pub fn labels(&self) -> Vec<(String, String)> {
        DIMENSIONS
            .iter()
            .filter(|d| d.column == Column::Label)
            .flat_map(|d| (d.write)(self))
            .filter_map(|s| s.split_once('=').map(|(k, v)| (k.into(), v.into())))
            .collect()
    }
}

/// A dimension's cell in the report's results table ([`Dimension::cell`]).
pub type Cell = fn(&Dims) -> String;

/// The dimensions with a column of their own in the report, in column order: (name, whether
/// it shows only in runs where some row has a value, the cell's text).
pub fn columns() -> Vec<(&'static str, bool, Cell)> {
    let mut v: Vec<(u8, &'static str, bool, Cell)> = DIMENSIONS
        .iter()
        .filter_map(|d| match d.column {
            Column::Own { name, rank, sparse } => Some((rank, name, sparse, d.cell)),
            _ => None,
        })
        .collect();
    v.sort_by_key(|c| c.0);
    v.into_iter().map(|(_, n, s, c)| (n, s, c)).collect()
}

/// `[None]` for a block without the key, else each value.
fn optional<T: Copy>(values: &[T]) -> Vec<Option<T>> {
    if values.is_empty() {
        vec![None]
    } else {
        values.iter().copied().map(Some).collect()
    }
}

/// A copy of `d` per value, set by `set`.
fn each<T>(d: &Dims, values: impl IntoIterator<Item = T>, set: fn(&mut Dims, T)) -> Vec<Dims> {
    values
        .into_iter()
        .map(|v| {
            let mut d = d.clone();
            set(&mut d, v);
            d
        })
        .collect()
}

fn int(item: Item) -> Result<i64, Refusal> {
    match item {
        Item::Int(n) => Ok(n),
        _ => Err(Refusal::new("expected an integer")),
    }
}

fn text<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn number_env<T: ToString>(name: &str, v: Option<T>) -> Vec<(String, String)> {
    v.map(|v| (name.to_string(), v.to_string()))
        .into_iter()
        .collect()
}

/// A numeric segment (`s2`, `flows=100`): its number, when `rest` is one.
fn read_number<T: std::str::FromStr>(rest: Option<&str>, into: &mut Option<T>) -> bool {
    match rest.and_then(|n| n.parse().ok()) {
        Some(n) => {
            *into = Some(n);
            true
        }
        None => false,
    }
}

/// How plans, case ids and hook variables spell a switch, off first.
const SWITCH_WORDS: &[&str] = &["off", "on"];

/// `on` / `off`, as plans, case ids and hook variables spell a switch.
pub fn on_off(on: bool) -> &'static str {
    SWITCH_WORDS[usize::from(on)]
}

fn switch(item: Item) -> Result<bool, Refusal> {
    match item {
        Item::Word(w) => Ok(w == on_off(true)),
        _ => Err(Refusal::new("expected `on` or `off`")),
    }
}

fn switch_segment(key: &str, v: Option<bool>) -> Vec<String> {
    v.map(|on| format!("{key}={}", on_off(on)))
        .into_iter()
        .collect()
}

fn switch_env(name: &str, v: Option<bool>) -> Vec<(String, String)> {
    v.map(|on| (name.to_string(), on_off(on).to_string()))
        .into_iter()
        .collect()
}

/// `key=on|off`. Another value (`fastpath=1` of an older plan's user dimension of that name)
/// is not the switch's: it stays a user dimension.
fn read_switch(s: &str, key: &str, into: &mut Option<bool>) -> bool {
    let Some(v) = s.strip_prefix(key).and_then(|r| r.strip_prefix('=')) else {
        return false;
    };
    match SWITCH_WORDS.iter().position(|w| *w == v) {
        Some(i) => {
            *into = Some(i == 1);
            true
        }
        None => false,
    }
}

/// `fast-path` → `WR_FAST_PATH`.
pub fn env_name(var: &str) -> String {
    format!("WR_{}", var.to_ascii_uppercase().replace('-', "_"))
}

/// Whether an encapsulation's text names the IP version (`vlan+ipv6`).
fn names_ip(s: &str) -> bool {
    s.split('+').any(|p| {
        matches!(
            p.trim().to_ascii_lowercase().as_str(),
            "ipv4" | "ipv6" | "ip4" | "ip6"
        )
    })
}

/// A block's `encap` value: `wire`'s spelling without the IP version, which the block's `ip`
/// gives.
pub(super) fn parse_encap(s: &str) -> Result<EncapSpec, String> {
    if names_ip(s) {
        return Err(format!(
            "`{s}`: give the IP version in the block's `ip` key, not in `encap` (e.g. encap = [\"plain\", \"vlan\"], ip = [4, 6])"
        ));
    }
    s.parse::<EncapSpec>().map_err(|e| format!("`{s}`: {e}"))
}

/// An encapsulation as plans and case ids spell it: `plain`, `vlan`, `qinq+pppoe`, `dslite`, `mape`
/// (the IP version is the case's own dimension): `wire`'s spelling, outermost first, without
/// the IP version.
pub fn spell_encap(e: &EncapSpec) -> String {
    let mut parts: Vec<String> = Vec::new();
    match e.tagging {
        Tagging::Untagged => {}
        Tagging::Vlan => parts.push("vlan".into()),
        Tagging::QinQ => parts.push("qinq".into()),
    }
    if e.mpls_labels > 0 {
        parts.push(format!("mpls:{}", e.mpls_labels));
    }
    if e.pppoe {
        parts.push("pppoe".into());
    }
    if let Some(name) = e.softwire_name() {
        parts.push(name.into());
    }
    if parts.is_empty() {
        return "plain".into();
    }
    parts.join("+")
}
