//! Reading the user's files without ever blocking on them: a plan, a streams file, a
//! calibration or a run's records that turns out to be a FIFO (or a device, or a directory)
//! hung the command on `open` (issue 19 row 14). [`open_regular`] opens non-blocking and
//! refuses anything but a regular file before a byte is read.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens `path` for reading if it is a regular file (after following symlinks); anything
/// else is an `InvalidInput` error saying what it is. The check is on the opened file, so
/// nothing can swap the file in between.
pub fn open_regular(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        Ok(file)
    } else {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is {what}, not a regular file; give a file"),
        ))
    }
}

/// The whole text of the regular file `path` ([`open_regular`]).
pub fn read_text(path: &Path) -> io::Result<String> {
    let mut s = String::new();
    open_regular(path)?.read_to_string(&mut s)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_directories_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("plan.toml");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(read_text(dir.path())
            .unwrap_err()
            .to_string()
            .contains("a directory"));
        assert!(read_text(Path::new("/dev/null"))
            .unwrap_err()
            .to_string()
            .contains("a device"));
        let file = dir.path().join("ok.toml");
        std::fs::write(&file, "name = \"x\"\n").unwrap();
        assert_eq!(read_text(&file).unwrap(), "name = \"x\"\n");
        assert_eq!(
            read_text(&dir.path().join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
