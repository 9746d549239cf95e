//! Reading the user's files without ever blocking on them: a plan, a streams file, a
//! calibration or a run's records that turns out to be a FIFO (or a device, or a directory)
//! hung the command on `open` (issue 19 row 14). [`open_regular`] opens non-blocking and
//! refuses anything but a regular file before a byte is read. Outputs likewise
//! ([`check_output`], [`create_regular`], [`check_output_dir`]): a FIFO hung the writer, and
//! an atomic write-then-rename replaced a device with a file.

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
        Err(not_regular(kind, "a regular file; give a file"))
    }
}

/// What `kind` is, as the error of a path that had to be `wanted`.
fn not_regular(kind: std::fs::FileType, wanted: &str) -> io::Error {
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
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {what}, not {wanted}"),
    )
}

/// Refuses an output path that exists and is not a regular file, before anything is measured
/// or written: writing into a FIFO blocks until someone reads it (`craft -o FIFO` hung), and
/// the write-then-rename that stores files atomically would *replace* a device or FIFO with a
/// regular file (`calibrate --out /dev/null` turned the host's /dev/null into a file). A path
/// that does not exist yet is fine; a symlink is judged by what it points to.
pub fn check_output(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(not_regular(
            m.file_type(),
            "a regular file; give a file name to write",
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Refuses a results directory that exists and is not a directory (`run --out FIFO` failed
/// with a bare "File exists").
pub fn check_output_dir(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => Err(not_regular(m.file_type(), "a directory; give a directory")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates (or truncates) `path` for writing, only as a regular file ([`check_output`]); the
/// check is repeated on the opened file, and the open is non-blocking so that a FIFO swapped
/// in meanwhile cannot hang it either.
pub fn create_regular(path: &Path) -> io::Result<File> {
    check_output(path)?;
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        Ok(file)
    } else {
        Err(not_regular(
            kind,
            "a regular file; give a file name to write",
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

    /// A FIFO at `path`, made by coreutils' `mkfifo` (the crate has no `unsafe`, so no
    /// mkfifo(3)).
    fn make_fifo(path: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("running mkfifo (coreutils)");
        assert!(st.success(), "mkfifo {}: {st}", path.display());
    }

    #[test]
    fn fifos_directories_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("plan.toml");
        make_fifo(&fifo);
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

    #[test]
    fn outputs_that_are_fifos_devices_or_directories_are_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.pcap");
        make_fifo(&fifo);
        // Would block forever without a reader if it were opened for writing.
        let e = create_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(check_output(&fifo).is_err());
        assert!(check_output_dir(&fifo)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        let e = check_output(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        assert!(check_output(dir.path())
            .unwrap_err()
            .to_string()
            .contains("a directory"));
        // New and existing regular files, and directories for check_output_dir, are fine.
        let new = dir.path().join("new.json");
        check_output(&new).unwrap();
        std::io::Write::write_all(&mut create_regular(&new).unwrap(), b"x").unwrap();
        std::io::Write::write_all(&mut create_regular(&new).unwrap(), b"yz").unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"yz");
        check_output_dir(dir.path()).unwrap();
        check_output_dir(&dir.path().join("missing")).unwrap();
    }
}
