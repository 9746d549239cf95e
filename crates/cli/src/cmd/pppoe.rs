//! `wirerate pppoe server|client`: run the `emulate` PPPoE access concentrator or subscriber
//! on a port by hand, printing session events as they happen and the statistics at the end.
//! The state machines live in `emulate`, their loop in `bench::hand::pppoe`; this maps the
//! flags to their configuration and prints (`pppoe_print.rs`).

use std::sync::Arc;

use bench::hand::pppoe::{ClientNews, ClientRun, ServerRun};
use bench::hand::{self};
use bench::session_json as sj;
use emulate::ppp::link::Credential;
use emulate::pppoe::client::ClientConfig;
use emulate::pppoe::server::ServerConfig;
use emulate::pppoe::ConfigError;
use emulate::util::Entropy;

use super::hand::{emit, print_syn, secs, Stop};
pub use super::pppoe_args::PppoeArgs;
use super::pppoe_args::{auth_methods, ClientArgs, Role, ServerArgs};
use super::pppoe_print::{info_text, print_client_stats, print_server_news, print_server_stats};
use crate::error::{CliError, CliResult};

pub fn run(a: PppoeArgs) -> CliResult {
    match a.role {
        Role::Server(s) => server(s),
        Role::Client(c) if c.sessions.is_some() || c.subscribers.is_some() => {
            super::pppoe_fleet::fleet(c)
        }
        Role::Client(c) => client(c),
    }
}

fn server(a: ServerArgs) -> CliResult {
    let p = &a.port;
    let auth = auth_methods(&p.auth)?;
    let duration = p.duration.map(|d| secs(d, "--duration")).transpose()?;
    let echo = secs(p.echo_interval, "--echo-interval")?;
    let mut cfg = ServerConfig {
        ac_name: a.ac_name.clone(),
        auth,
        credentials: vec![Credential::new(&p.user, &p.password)],
        gateway: a.gateway,
        pool_first: a.pool,
        pool_size: a.pool_size,
        pado_rate: a.pado_rate,
        pado_burst: a.pado_rate.max(1000),
        echo_interval: wire::units::Nanos(echo.as_nanos() as u64),
        // Challenges, magic numbers, session ids and the cookie key differ on every run.
        entropy: Entropy::Os,
        ..ServerConfig::default()
    };
    if let Some(m) = p.mru {
        cfg.mru = m;
    }
    if let Some(mp) = p.max_payload {
        cfg.max_payload = mp;
    }
    if let Some(f) = &a.subscribers {
        let t = bench::sessions::load_subscribers(f).map_err(|e| CliError::Usage(e.to_string()))?;
        cfg.subscribers = Some(Arc::new(t));
    }
    cfg.check().map_err(|e| {
        let flags = match e {
            ConfigError::Mru { mru, .. } => format!("--mru {mru}"),
            ConfigError::EmptyPool => "--pool-size 0".into(),
            ConfigError::PoolOutsideDocumentation { .. }
            | ConfigError::PoolStartsAtNetworkOrBroadcast { .. } => format!("--pool {}", a.pool),
            ConfigError::PoolHoldsGateway { .. } => format!(
                "--pool {} --pool-size {} --gateway {}",
                a.pool, a.pool_size, a.gateway
            ),
            ConfigError::PoolTooLarge { .. } => {
                format!("--pool {} --pool-size {}", a.pool, a.pool_size)
            }
            ConfigError::Subscriber(ref t) => {
                let f = a
                    .subscribers
                    .as_deref()
                    .unwrap_or(std::path::Path::new("-"));
                return CliError::Usage(format!("{}:{}: {}", f.display(), t.line, t.message));
            }
        };
        CliError::Usage(format!("{flags}: {e}"))
    })?;
    let pool_net = emulate::pppoe::pool_net(a.pool);
    if a.tun.is_some() && pool_net.is_some_and(|n| n.contains(a.tun_addr)) {
        return Err(CliError::Usage(format!(
            "--tun-addr {}: inside the pool's network ({}); the Internet host needs an address \
             the subscribers are not in",
            a.tun_addr,
            pool_net.map_or("-".into(), |n| n.to_string())
        )));
    }
    let tun_ns = a.tun_netns.as_deref().or(p.netns.as_deref());
    let tun = match &a.tun {
        Some(name) => Some(hand::internet_tun(
            name,
            tun_ns,
            u32::from(cfg.max_payload.max(1492)),
            a.tun_addr,
            pool_net.map(|n| n.to_string()).into_iter().collect(),
        )?),
        None => None,
    };
    let run = ServerRun::open(&p.dev, p.netns.as_deref(), cfg, tun, a.provision)?;
    let stop = Stop::new(duration);
    if !p.json {
        errln!(
            "PPPoE AC on {} ({}); Ctrl-C, Enter or Ctrl-D stops",
            p.dev,
            run.mac
        );
    }
    let done = run.serve(a.sessions, &mut || stop.now(), &mut |n| {
        print_server_news(n, p.json)
    })?;
    let (srv, port, tun) = (&done.server, &done.port, done.tun.as_ref());
    print_server_stats(srv, p.json, port, tun);
    if let Some(pv) = &done.provisioning {
        super::provision::print_pppoe_stats(pv, p.json);
    }
    Ok(())
}

fn client(a: ClientArgs) -> CliResult {
    let p = &a.port;
    let auth = auth_methods(&p.auth)?;
    let duration = p.duration.map(|d| secs(d, "--duration")).transpose()?;
    let hold = a.hold.map(|d| secs(d, "--hold")).transpose()?;
    let echo = secs(p.echo_interval, "--echo-interval")?;
    let mut cfg = ClientConfig {
        service_name: a.service.clone(),
        credential: Credential::new(&p.user, &p.password),
        auth,
        echo_interval: wire::units::Nanos(echo.as_nanos() as u64),
        entropy: Entropy::Os,
        ..ClientConfig::default()
    };
    if let Some(m) = p.mru {
        cfg.mru = m;
    }
    cfg.max_payload = p.max_payload;
    cfg.check()
        .map_err(|e| CliError::Usage(format!("--mru {}: {e}", cfg.mru)))?;
    let tun = a
        .tun
        .as_deref()
        .map(|name| hand::create_tun(name, p.netns.as_deref()))
        .transpose()?;
    let run = ClientRun::open(&p.dev, p.netns.as_deref(), cfg, tun)?;
    let stop = Stop::new(duration);
    if !p.json {
        errln!(
            "PPPoE client on {} ({}); Ctrl-C, Enter or Ctrl-D stops",
            p.dev,
            run.mac
        );
    }
    let done = run.run(hold, &mut || stop.now(), &mut |n| match n {
        ClientNews::Up { info, setup_ms } => {
            let mut v = sj::pppoe_info(&info);
            v["event"] = "up".into();
            v["setup_ms"] = setup_ms.into();
            emit(
                p.json,
                v,
                format!("up    {}  setup {setup_ms:.1} ms", info_text(&info)),
            );
        }
        ClientNews::Down(reason) => emit(
            p.json,
            serde_json::json!({"event": "down", "reason": format!("{reason:?}")}),
            format!("down  {reason:?}"),
        ),
        ClientNews::Syn(s) => print_syn(&s, p.json),
    })?;
    let (c, port, tun, ended) = (&done.client, &done.port, &done.tun, done.ended);
    let st = &c.stats;
    print_client_stats(c, p.json, port, tun.as_ref());
    match ended {
        Some(r) if st.setup.is_none() => Err(CliError::Failed(format!("no session: {r:?}"))),
        _ if st.setup.is_none() => Err(CliError::Failed("no session came up".into())),
        _ => Ok(()),
    }
}
