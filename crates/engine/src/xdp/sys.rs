//! The XDP backend's `unsafe`: every block carries a `// SAFETY:` line.
