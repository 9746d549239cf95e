//! One lab, one user at a time: an advisory lock per lab name.
//!
//! Two `wirerate trial --lab X` at once counted each other's frames (`sent 56783 received
//! 60000`); two `run`s on one lab tore it down under each other; two `lab up`s raced in
//! `ip netns`. Every command that builds, changes, removes or measures a lab therefore holds
//! [`LabLock`] for as long as it does so: an exclusive `flock` on
//! `/run/wirerate/labs/NAME.lock`. The kernel releases it when the holder exits, however it
//! exits (kill -9 included), so a stale lock cannot outlive its process. The holder writes who
//! it is into the file, and a refused command names it.
//!
//! Short operations (`lab up`, `down`, `profile`) wait a bounded time for the lock, so
//! concurrent ones serialise; a measurement that finds the lab taken fails at once.

use crate::error::{LabError, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the lock files live (tmpfs: gone after a reboot, like the labs).
pub const LOCK_DIR: &str = "/run/wirerate/labs";

/// How long a short lab operation (`up`, `down`, `profile`) waits for another to finish.
pub const SHORT_WAIT: Duration = Duration::from_secs(30);

/// How long a measuring command (`trial`, `calibrate`, `run`) waits for a lab: long enough
/// for a `lab status` that is looking at the lock ([`holder`] takes it for an instant), short
/// enough that a lab in use is refused at once.
pub const USER_WAIT: Duration = Duration::from_secs(1);

/// The held lock of one lab; released when dropped or when the process ends.
#[derive(Debug)]
pub struct LabLock {
    name: String,
    _file: File,
}

fn path_of(name: &str) -> PathBuf {
    PathBuf::from(LOCK_DIR).join(format!("{name}.lock"))
}

fn open(name: &str) -> Result<File> {
    std::fs::create_dir_all(LOCK_DIR).map_err(|e| LabError::io(LOCK_DIR, e))?;
    let path = path_of(name);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| LabError::io(path.display().to_string(), e))
}

fn holder_of(file: &mut File) -> String {
    let mut s = String::new();
    let _ = file.rewind();
    let _ = file.read_to_string(&mut s);
    let s = s.trim();
    if s.is_empty() {
        "another process (it has not said who it is yet)".to_string()
    } else {
        s.to_string()
    }
}

impl LabLock {
    /// Takes lab `name`'s lock for `purpose` (said to whoever is refused, e.g. `wirerate run
    /// plans/lab-demo.toml`), waiting at most `wait` for its holder to let go. Refused with
    /// [`LabError::Busy`] naming the holder.
    pub fn acquire(name: &str, purpose: &str, wait: Duration) -> Result<LabLock> {
        crate::topology::validate_name(name)?;
        // Everything a lock guards needs root; without it the lock file cannot be written
        // either, and "Permission denied" on it would hide what is really missing.
        crate::cmd::require_root()?;
        let mut file = open(name)?;
        let deadline = Instant::now() + wait;
        loop {
            if crate::sys::try_lock_exclusive(&file)
                .map_err(|e| LabError::io(format!("locking lab {name}"), e))?
            {
                break;
            }
            if Instant::now() >= deadline || crate::cmd::interrupted() {
                return Err(LabError::Busy {
                    name: name.to_string(),
                    holder: holder_of(&mut file),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (h, m, sec) = (since / 3600 % 24, since / 60 % 60, since % 60);
        let me = format!(
            "pid {} ({purpose}, since {h:02}:{m:02}:{sec:02} UTC)",
            std::process::id()
        );
        // Only the holder writes; a refused process reads.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = file.write_all(me.as_bytes());
        let _ = file.flush();
        Ok(LabLock {
            name: name.to_string(),
            _file: file,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Who holds lab `name`'s lock now, if anyone (for `lab status`). A snapshot: it may change
/// the moment after. It takes the lock for an instant to find out, which [`USER_WAIT`] covers.
pub fn holder(name: &str) -> Option<String> {
    let mut file = File::open(path_of(name)).ok()?;
    match crate::sys::try_lock_exclusive(&file) {
        // Free: our probe took it and drops it with `file`.
        Ok(true) => None,
        Ok(false) => Some(holder_of(&mut file)),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> bool {
        crate::is_root()
    }

    /// A second user of one lab is refused and told who holds it; after the first lets go,
    /// it gets the lab. flock conflicts between two opens even in one process, so this needs
    /// no second process.
    #[test]
    fn second_user_is_refused_with_the_holder_named() {
        if !root() {
            eprintln!(
                "SKIP second_user_is_refused_with_the_holder_named: needs root to write {LOCK_DIR}"
            );
            return;
        }
        let name = format!("lk{}", std::process::id());
        let first = LabLock::acquire(&name, "test holder one", Duration::ZERO).unwrap();
        assert_eq!(first.name(), name);
        let started = Instant::now();
        let err = LabLock::acquire(&name, "test two", Duration::from_millis(300)).unwrap_err();
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "it waits the bound"
        );
        let msg = err.to_string();
        assert!(matches!(err, LabError::Busy { .. }), "{msg}");
        assert!(msg.contains("test holder one"), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(holder(&name).unwrap().contains("test holder one"));
        drop(first);
        assert_eq!(holder(&name), None);
        let second = LabLock::acquire(&name, "test two", Duration::ZERO).unwrap();
        assert!(holder(&name).unwrap().contains("test two"));
        drop(second);
        let _ = std::fs::remove_file(path_of(&name));
    }

    #[test]
    fn bad_names_never_become_paths() {
        let err = LabLock::acquire("../etc", "x", Duration::ZERO).unwrap_err();
        assert!(matches!(
            err,
            LabError::Model(lab_model::Error::InvalidName { .. })
        ));
    }
}
