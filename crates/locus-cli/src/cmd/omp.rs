//! `locus omp [--config C] [--topology SPEC] [--threads N] [--affinity strict|non-strict]
//! [--migrate none|now|next-touch|auto] [--report FILE] [--trace FILE] -- PROGRAM ARGS...`: runs a gcc- or clang-compiled
//! OpenMP program on Locus's OpenMP runtime (crate `locus-omp`, its README).
//!
//! The command reads the program's NEEDED entries to know which runtime it loads
//! (`libgomp.so.1`: gcc's ABI; `libomp.so.5` or `libomp.so`: clang's), finds the
//! directory holding Locus's library of that name (and the `liblocus_omp.so` both
//! forward to), puts it first on `LD_LIBRARY_PATH` (which ld.so searches before a clang
//! binary's RUNPATH; in a build's tree, the `deps/` holding `liblocus_omp.so` follows
//! it, before any inherited entry), passes the settings as environment variables (`locus_omp::env`; a
//! program run without the command reads them too), runs the program and exits with its
//! status (128 + the signal's number when a signal ended it).
//!
//! The libraries are looked for in `$LOCUS_OMP_LIB_DIR`, then in `omp/` beside the
//! `locus` binary (`target/<profile>/omp/`, where `cargo build` puts them; the runtime
//! they load is then `target/<profile>/deps/liblocus_omp.so`), then in `../lib/locus/`
//! from the binary (an installation under a prefix, the files side by side).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::ValueEnum;
use locus_omp::env;

use super::Failure;

/// Whether a task's home node binds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OmpAffinity {
    /// Only the home node's workers run the task.
    Strict,
    /// The home node is a preference; other workers may steal the task (default).
    NonStrict,
}

/// `locus omp` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scheduling configuration (ws, dsa-base, dsa-opt, home, bf, ...).
    #[arg(long)]
    config: Option<String>,
    /// Topology: host, NxC (virtual nodes over the host's CPUs) or a preset.
    #[arg(long)]
    topology: Option<String>,
    /// Number of workers, and the default team size (OMP_NUM_THREADS).
    #[arg(long)]
    threads: Option<usize>,
    /// Whether a task's home node (of its affinity clause's memory, else its out/inout
    /// memory) binds it.
    #[arg(long, value_enum)]
    affinity: Option<OmpAffinity>,
    /// What a task does with the memory of its out/inout dependences that lies on another
    /// node: none (default), now, next-touch or auto, as the runtime's migration setting
    /// does with shared data.
    #[arg(long, alias = "migration", value_name = "none|now|next-touch|auto")]
    migrate: Option<String>,
    /// Writes Locus's JSON report of the whole program there at exit.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Writes a Perfetto trace (of the program's last parallel region) there.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

/// Runs `locus omp`.
pub fn main(args: &Args) -> Result<(), Failure> {
    if let Some(c) = &args.config {
        c.parse::<locus::Config>()
            .map_err(|e| Failure::Usage(format!("--config {c}: {e}")))?;
    }
    if let Some(t) = &args.topology {
        super::topology(t)?;
    }
    if let Some(m) = &args.migrate {
        m.parse::<locus::Migration>()
            .map_err(|e| Failure::Usage(format!("--migrate {m}: {e}")))?;
    }
    if args.threads == Some(0) {
        return Err(Failure::Usage("--threads 0: at least one thread".into()));
    }
    let (program, rest) = args
        .program
        .split_first()
        .ok_or_else(|| Failure::Usage("no program to run (give it after --)".into()))?;
    let library = runtime_of(Path::new(program))?;
    let dir = library_dir(library)?;
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let mut path = dir.clone().into_os_string();
    if let Some(deps) = runtime_dir(&dir).filter(|d| *d != dir) {
        // The runtime the libraries forward to, in a build's tree: their RUNPATH names
        // it, but ld.so searches an inherited LD_LIBRARY_PATH first, and cargo's holds
        // `target/<profile>`, where an older copy of it may lie.
        path.push(":");
        path.push(deps.canonicalize().unwrap_or(deps));
    }
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    cmd.env("LD_LIBRARY_PATH", path);
    if let Some(c) = &args.config {
        cmd.env(env::CONFIG, c);
    }
    if let Some(t) = &args.topology {
        cmd.env(env::TOPOLOGY, t);
    }
    if let Some(n) = args.threads {
        cmd.env(env::NUM_THREADS, n.to_string());
    }
    if let Some(a) = args.affinity {
        let name = match a {
            OmpAffinity::Strict => "strict",
            OmpAffinity::NonStrict => "non-strict",
        };
        cmd.env(env::AFFINITY, name);
    }
    if let Some(m) = &args.migrate {
        cmd.env(env::MIGRATION, m);
    }
    if let Some(r) = &args.report {
        // A report left by an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(r);
        cmd.env(env::REPORT, r);
    }
    if let Some(t) = &args.trace {
        cmd.env(env::TRACE, t);
    }
    let status = cmd
        .status()
        .map_err(|e| Failure::Usage(format!("cannot run {}: {e}", Path::new(program).display())))?;
    if let Some(r) = &args.report {
        if !r.exists() {
            eprintln!(
                "locus: no report written to {}: the program ended before Locus's OpenMP \
                 runtime started (no OpenMP region ran, or it was not loaded)",
                r.display()
            );
        }
    }
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    std::process::exit(code)
}

/// Where the `liblocus_omp.so` of the libraries in `dir` lies: beside them (an
/// installation), or in `../deps` (a build's tree, where cargo puts it).
fn runtime_dir(dir: &Path) -> Option<PathBuf> {
    [dir.to_path_buf(), dir.join("../deps")]
        .into_iter()
        .find(|d| d.join(env::RUNTIME_FILE).is_file())
}

/// The directory holding Locus's `library` (`libgomp.so.1` or `libomp.so.5`) and
/// `liblocus_omp.so`.
pub(crate) fn library_dir(library: &str) -> Result<PathBuf, Failure> {
    let mut candidates = Vec::new();
    if let Some(d) = std::env::var_os("LOCUS_OMP_LIB_DIR") {
        candidates.push(PathBuf::from(d));
    }
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(bin.join("omp"));
        candidates.push(bin.join("../lib/locus"));
        // A test binary of this crate, in `target/<profile>/deps/`.
        candidates.push(bin.join("../omp"));
    }
    candidates
        .iter()
        .find(|d| d.join(library).is_file() && runtime_dir(d).is_some())
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()))
        .ok_or_else(|| {
            let looked: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
            Failure::Failed(format!(
                "Locus's OpenMP runtime ({library} and {}) is not in {}; build it with `cargo \
                 build` or name its directory in LOCUS_OMP_LIB_DIR",
                env::RUNTIME_FILE,
                looked.join(", ")
            ))
        })
}

/// The OpenMP library `program` loads, by its NEEDED entries: Locus's `libomp.so.5` for
/// clang's (`libomp.so.5`, `libomp.so`), else `libgomp.so.1` (gcc's, and any program
/// that is not a dynamically linked ELF file, such as a script that runs one: the
/// directory on `LD_LIBRARY_PATH` holds both). Intel's `libiomp5.so` is refused.
fn runtime_of(program: &Path) -> Result<&'static str, Failure> {
    let resolved = if program.components().count() > 1 {
        Some(program.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(program))
                .find(|p| p.is_file())
        })
    };
    let Some(bytes) = resolved.as_ref().and_then(|p| std::fs::read(p).ok()) else {
        return Ok(env::LIBRARY_FILE);
    };
    let needed = elf_needed(&bytes).unwrap_or_default();
    if needed.iter().any(|n| n == "libiomp5.so") {
        return Err(Failure::Usage(format!(
            "{} is linked with Intel's libiomp5.so, which Locus's OpenMP runtime does not \
             replace; build it with gcc -fopenmp or clang -fopenmp",
            program.display()
        )));
    }
    if needed
        .iter()
        .any(|n| n == "libomp.so.5" || n == "libomp.so")
    {
        Ok(env::KMP_LIBRARY_FILE)
    } else {
        Ok(env::LIBRARY_FILE)
    }
}

/// The NEEDED entries of a 64-bit little-endian ELF file's dynamic section; `None` when
/// `bytes` is not one (or is malformed: every read is bounds-checked).
pub(crate) fn elf_needed(bytes: &[u8]) -> Option<Vec<String>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    // ELFCLASS64, ELFDATA2LSB.
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let (phentsize, phnum) = (usize::from(u16_at(0x36)?), usize::from(u16_at(0x38)?));
    // (p_type, p_offset, p_vaddr, p_filesz) of each program header.
    let headers: Vec<(u32, u64, u64, u64)> = (0..phnum)
        .map(|i| {
            let h = phoff.checked_add(i.checked_mul(phentsize)?)?;
            let kind = u32::from_le_bytes(bytes.get(h..h + 4)?.try_into().ok()?);
            Some((kind, u64_at(h + 8)?, u64_at(h + 16)?, u64_at(h + 32)?))
        })
        .collect::<Option<_>>()?;
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    let &(_, dyn_off, _, dyn_size) = headers.iter().find(|h| h.0 == PT_DYNAMIC)?;
    // The file offset of a virtual address, through the loaded segments.
    let offset_of = |vaddr: u64| {
        headers
            .iter()
            .find(|h| h.0 == PT_LOAD && vaddr >= h.2 && vaddr - h.2 < h.3)
            .map(|h| h.1 + (vaddr - h.2))
    };
    let (mut strtab, mut needed) = (None, Vec::new());
    for i in 0..usize::try_from(dyn_size / 16).ok()? {
        let e = usize::try_from(dyn_off).ok()?.checked_add(i * 16)?;
        let (tag, val) = (u64_at(e)?, u64_at(e + 8)?);
        match tag {
            0 => break,
            1 => needed.push(val),
            5 => strtab = Some(val),
            _ => {}
        }
    }
    let strtab = usize::try_from(offset_of(strtab?)?).ok()?;
    needed
        .into_iter()
        .map(|at| {
            let start = strtab.checked_add(usize::try_from(at).ok()?)?;
            let rest = bytes.get(start..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        })
        .collect()
}
