//! A lab taken down when its owner lets go of it, also when a panic unwinds: for tests (a
//! failed assertion must not leave namespaces behind for the next test) and for callers that
//! may fail half-way.

use crate::Lab;

/// Owns a lab and takes it down on drop. `None` once taken back with `.0.take()`.
pub struct LabGuard(pub Option<Lab>);

impl std::ops::Deref for LabGuard {
    type Target = Lab;

    /// The lab; panics if it was taken back.
    fn deref(&self) -> &Lab {
        self.0.as_ref().expect("the guarded lab was taken back")
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        if let Some(l) = self.0.take() {
            let _ = l.down();
        }
    }
}
