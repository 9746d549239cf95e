//! `wirerate pppoe client --sessions N [--subscribers FILE]`: a fleet of our subscribers at once
//! and their setup statistics. The fleet's machine is `emulate::pppoe::fleet`, its loop
//! `bench::sessions`; this maps the flags and prints.

use std::time::Duration;

use emulate::ppp::link::Credential;
use emulate::pppoe::client::ClientConfig;
use emulate::util::Entropy;
use engine::port::PortSpec;

use super::hand::{secs, Stop};
use super::pppoe_args::{auth_methods, ClientArgs};
use crate::error::{CliError, CliResult};

/// `pppoe client --sessions N` / `--subscribers FILE`: many subscribers at once and their
/// setup statistics (the loop and the figures are `bench::sessions`).
pub(super) fn fleet(a: ClientArgs) -> CliResult {
    let p = &a.port;
    let auth = auth_methods(&p.auth)?;
    let limit = p.duration.map(|d| secs(d, "--duration")).transpose()?;
    let hold = a.hold.map(|d| secs(d, "--hold")).transpose()?;
    let echo = secs(p.echo_interval, "--echo-interval")?;
    if a.tun.is_some() {
        return Err(CliError::Usage(
            "--tun: one session only; leave out --sessions/--subscribers".into(),
        ));
    }
    let logins = match &a.subscribers {
        Some(f) => bench::sessions::load_subscribers(f)
            .map_err(|e| CliError::Usage(e.to_string()))?
            .credentials(),
        None => vec![Credential::new(&p.user, &p.password)],
    };
    let mut client = ClientConfig {
        service_name: a.service.clone(),
        auth,
        echo_interval: wire::units::Nanos(echo.as_nanos() as u64),
        entropy: Entropy::Os,
        ..ClientConfig::default()
    };
    if let Some(m) = p.mru {
        client.mru = m;
    }
    client.max_payload = p.max_payload;
    client
        .check()
        .map_err(|e| CliError::Usage(format!("--mru {}: {e}", client.mru)))?;
    Entropy::check_os().map_err(|e| CliError::Failed(e.to_string()))?;
    let sessions = a.sessions.map_or(logins.len(), |n| n as usize);
    if a.subscribers.is_some() && sessions > logins.len() {
        return Err(CliError::Usage(format!(
            "--sessions {sessions}: the subscriber table has {} users, and each logs in once \
             (a second login replaces the first on our AC)",
            logins.len()
        )));
    }
    let cfg = emulate::pppoe::fleet::FleetConfig {
        client,
        logins,
        sessions,
        start_rate: a.start_rate,
        ..Default::default()
    };
    let limits = bench::sessions::FleetLimits {
        settle_within: limit.unwrap_or(Duration::from_secs(120)),
        hold: hold.unwrap_or(Duration::ZERO),
    };
    let mut spec = PortSpec::new("pppoe", &p.dev);
    spec.netns = p.netns.clone();
    let stop = Stop::new(None);
    if !p.json {
        errln!(
            "PPPoE fleet of {sessions} sessions on {}; Ctrl-C stops",
            p.dev
        );
    }
    let run = bench::sessions::run_fleet(&spec, cfg, limits, &|| stop.now(), |_, _, _| {})
        .map_err(|e| CliError::Failed(e.to_string()))?;
    if p.json {
        for s in &run.sessions {
            outln!("{}", s.to_json());
        }
        outln!("{}", run.to_json());
    } else {
        for s in run.sessions.iter().filter(|s| s.session_id.is_none()) {
            outln!("not up  #{} {} {}: {}", s.index, s.user, s.mac, s.state);
        }
        for l in run.summary_lines() {
            outln!("{l}");
        }
    }
    if run.setup.came_up < sessions {
        return Err(CliError::Failed(format!(
            "{} of {sessions} sessions did not come up",
            sessions - run.setup.came_up
        )));
    }
    Ok(())
}
