//! Files written whole or not at all: traces and reports go to a temporary file beside
//! their destination (`.NAME.tmp-PID-N` in the same directory) and are renamed over it
//! only once complete, so a run that is killed or fails while writing leaves the
//! previous file as it was, never a truncated one.
//!
//! A process killed while writing (SIGINT, SIGKILL) cannot remove its temporary file.
//! The next write of the same destination does: it removes every `.NAME.tmp-PID-N`
//! beside it whose process `PID` no longer exists (`/proc/PID`, proc(5)). Temporary
//! files of live processes, this one included, are left alone.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The temporary file beside `path` that [`replace_file`] writes first:
/// `DIR/.NAME.tmp-PID-N`, unique within this process.
fn temp_path(path: &Path) -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names a directory, not a file",
        )
    })?;
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(path.with_file_name(temp))
}

/// Removes the temporary files beside `path` that processes which no longer exist
/// left (module doc). Best effort: a file that cannot be removed, or a directory that
/// cannot be read, is left as it is.
fn remove_stale_temps(path: &Path) {
    let Some(name) = path.file_name() else {
        return;
    };
    let proc = Path::new("/proc");
    // Without procfs no process can be known dead.
    if !proc.join("self").exists() {
        return;
    }
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".tmp-");
    let Some(prefix) = prefix.to_str() else {
        return;
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(pid, n)| {
                !pid.is_empty()
                    && !n.is_empty()
                    && pid.bytes().chain(n.bytes()).all(|b| b.is_ascii_digit())
            })
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if pid != me && is_file && !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Checks that [`replace_file`] could write `path`, without touching `path` itself:
/// creates the temporary file beside it, then removes it. An existing file at `path`
/// is left as it is, and none is created; temporary files of dead processes beside it
/// are removed (module doc).
///
/// ```
/// let dir = std::env::temp_dir();
/// locus::observe::check_replaceable(&dir.join("locus-doc-trace.json")).unwrap();
/// assert!(locus::observe::check_replaceable(std::path::Path::new("/nonexistent/t.json")).is_err());
/// ```
pub fn check_replaceable(path: &Path) -> io::Result<()> {
    refuse_special(path)?;
    remove_stale_temps(path);
    let temp = temp_path(path)?;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    std::fs::remove_file(&temp)
}

/// Writes `path` whole or not at all: `write` fills a temporary file in the same
/// directory, which is flushed to disk and renamed over `path` only when `write`
/// succeeded. On any error the temporary file is removed and a previous file at `path`
/// is left as it was.
///
/// ```
/// use std::io::Write;
///
/// let path = std::env::temp_dir().join(format!("locus-doc-{}.json", std::process::id()));
/// locus::observe::replace_file(&path, |out| out.write_all(b"{}\n")).unwrap();
/// let failed = locus::observe::replace_file(&path, |out| {
///     out.write_all(b"{\"half\":")?;
///     Err(std::io::Error::other("interrupted"))
/// });
/// assert!(failed.is_err());
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn replace_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    refuse_special(path)?;
    remove_stale_temps(path);
    let temp = temp_path(path)?;
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let written = (|| {
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        out.flush()?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        // On disk before the rename, so that the name never points at missing data.
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        // The error that matters is the one of the write; the file may be gone already.
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Refuses a path that names something other than a file, which renaming a file over
/// it would replace: a directory, or a device, a pipe or a socket (`/dev/null`).
fn refuse_special(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path is a directory",
        )),
        Ok(m) if !m.is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path is not a regular file (a device, a pipe or a socket), which the \
             file written would replace",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileTypeExt;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("locus-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_check_neither_creates_nor_truncates() {
        let dir = scratch("check");
        let path = dir.join("trace.json");
        check_replaceable(&path).unwrap();
        assert!(entries(&dir).is_empty());
        std::fs::write(&path, "previous").unwrap();
        check_replaceable(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous");
        assert_eq!(entries(&dir), ["trace.json"]);
        assert!(check_replaceable(&dir.join("missing/trace.json")).is_err());
        assert!(check_replaceable(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A device or a pipe (`--trace /dev/null`) is refused, not replaced by a file.
    #[test]
    fn a_path_that_is_not_a_file_is_refused_and_kept() {
        let dir = scratch("special");
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo {}", fifo.display());
        for refused in [
            check_replaceable(&fifo),
            replace_file(&fifo, |out| out.write_all(b"{}")),
        ] {
            let e = refused.unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(entries(&dir), ["pipe"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What an interrupted writer left beside the destination goes with the next
    /// check or write; a live process's temporary file, and other names, stay.
    #[test]
    fn temporaries_of_dead_processes_are_removed() {
        let dir = scratch("stale");
        let path = dir.join("t.json");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        let stale = [
            format!(".t.json.tmp-{dead}-0"),
            format!(".t.json.tmp-{dead}-17"),
        ];
        let kept = [
            format!(".t.json.tmp-{me}-999"),
            format!(".u.json.tmp-{dead}-0"),
            format!(".t.json.tmp-{dead}-x"),
            "t.json.tmp-1-0".to_string(),
        ];
        let names = || stale.iter().chain(&kept).cloned().collect::<Vec<_>>();
        for name in names() {
            std::fs::write(dir.join(name), "{\"half\":").unwrap();
        }
        check_replaceable(&path).unwrap();
        let mut want = kept.to_vec();
        want.sort();
        assert_eq!(entries(&dir), want);
        for name in names() {
            std::fs::write(dir.join(name), "{").unwrap();
        }
        replace_file(&path, |out| out.write_all(b"{}")).unwrap();
        want.push("t.json".into());
        want.sort();
        assert_eq!(entries(&dir), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_previous_file_and_no_temporary() {
        let dir = scratch("replace");
        let path = dir.join("summary.json");
        std::fs::write(&path, "previous").unwrap();
        let e = replace_file(&path, |out| {
            out.write_all(&[b'x'; 100_000])?;
            Err(io::Error::other("stopped"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "stopped");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous");
        assert_eq!(entries(&dir), ["summary.json"]);
        replace_file(&path, |out| out.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(entries(&dir), ["summary.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
