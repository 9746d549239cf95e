//! Closing packet sockets and unmapping their rings off the caller's thread.
//!
//! The kernel waits for an RCU grace period (`synchronize_net`) when the last reference to a
//! packet socket goes — 10–25 ms here, twice for a socket with a ring — and a trial opens
//! several per port (each receiver, the senders' control sockets, the next-hop
//! announcements) and drops them one after the other before the next trial can begin.
//! Nothing in the engine needs the close to have happened (a dropped socket is muted first,
//! see `PacketSocket`'s `Drop`), so what is dropped is handed to one long-lived thread that
//! does the waiting. Parcels are released in the order they were handed over: a ring's
//! mapping before its socket, so the socket's last reference goes on that thread too.

use std::sync::mpsc::{self, Sender};
use std::sync::OnceLock;

type Parcel = Box<dyn Send>;

/// The releasing thread's inbox; `None` when it could not be started (then drops happen
/// in place, as they would without it).
static RELEASER: OnceLock<Option<Sender<Parcel>>> = OnceLock::new();

/// Drops `thing` on the releasing thread, or here if there is none.
pub(super) fn later<T: Send + 'static>(thing: T) {
    let inbox = RELEASER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Parcel>();
        std::thread::Builder::new()
            .name("wr-release".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| tx)
    });
    let parcel: Parcel = Box::new(thing);
    match inbox {
        Some(tx) => {
            if let Err(mpsc::SendError(parcel)) = tx.send(parcel) {
                drop(parcel);
            }
        }
        None => drop(parcel),
    }
}
