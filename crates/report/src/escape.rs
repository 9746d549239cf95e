//! Escaping a cell for the two table formats every exporter writes (the run's tables in
//! `text`, the mtu-probe tables in `mtu`).

/// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A Markdown table cell: its pipes escaped.
pub(crate) fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}
