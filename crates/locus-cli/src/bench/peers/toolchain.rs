//! Building the peers: the Debian packages each one needs (installed with `apt-get`
//! when this process is root and apt is there; otherwise the peer is skipped with a
//! one-line note naming them), then one program per kernel in `OUT/peers/`.
//!
//! | peer | packages | build |
//! |---|---|---|
//! | `openmp-gcc` | `gcc` | `gcc -O2 -Wall -ffp-contract=off -falign-loops=64 -fopenmp` |
//! | `openmp-clang` | `clang libomp-dev` | `clang -O2 -Wall -ffp-contract=off -falign-loops=64 -fopenmp` |
//! | `openmp-locus` | `gcc`, and Locus's OpenMP runtime built (`cargo build`) | as `openmp-gcc`; run on Locus's runtime |
//! | `tbb` | `g++ libtbb-dev` | `g++ -O2 -Wall -ffp-contract=off -falign-loops=64 ... -ltbb` |
//! | `starpu` | `gcc pkg-config libstarpu-dev` | `gcc -O2 -Wall -ffp-contract=off -falign-loops=64 $(pkg-config --cflags --libs starpu-1.x)` |
//! | `rayon` | (cargo) | `cargo build --release -p locus-peer-rayon` |

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{file_stem, Peer};

/// What building a peer gave.
#[derive(Debug)]
pub enum Prepared {
    /// Built: its programs are in `dir`.
    Ready {
        /// Where the programs are.
        dir: PathBuf,
        /// The command line that built them (for the report).
        build: String,
        /// Compiler warnings, one per program that had some (the sources are meant to
        /// have none).
        warnings: Vec<String>,
    },
    /// Not built because something it needs is missing; not a failure of Locus's.
    Skipped(String),
    /// The build itself failed.
    Failed(String),
}

/// A peer and what building it gave.
#[derive(Debug)]
pub struct Built {
    /// The peer.
    pub peer: Peer,
    /// Built, skipped or failed.
    pub state: Prepared,
}

impl Built {
    /// The program that runs `kernel`, and the arguments that come before the sizes.
    pub fn program(&self, kernel: &str) -> Option<(PathBuf, Vec<String>)> {
        let Prepared::Ready { dir, .. } = &self.state else {
            return None;
        };
        if !self.peer.has(kernel) {
            return None;
        }
        Some(match self.peer {
            Peer::Rayon => (dir.join("locus-peer-rayon"), vec![kernel.to_string()]),
            _ => (dir.join(file_stem(kernel)), Vec::new()),
        })
    }
}

/// The Debian packages a peer needs.
pub fn packages(peer: Peer) -> &'static [&'static str] {
    match peer {
        Peer::OpenmpGcc | Peer::OpenmpLocus => &["gcc"],
        Peer::OpenmpClang => &["clang", "libomp-dev"],
        Peer::Tbb => &["g++", "libtbb-dev"],
        Peer::Starpu => &["gcc", "pkg-config", "libstarpu-dev"],
        Peer::Rayon => &[],
        Peer::LocusC => &["gcc"],
    }
}

/// Where `peer`'s programs go: `OUT/peers/` for `openmp-gcc` (the first peer, kept
/// where it always was), `OUT/peers/NAME/` for the others.
pub fn program_dir(out: &Path, peer: Peer) -> PathBuf {
    match peer {
        Peer::OpenmpGcc => out.join("peers"),
        _ => out.join("peers").join(peer.name()),
    }
}

/// Builds every peer for `kernels` under `out`; `install` allows `apt-get install` of
/// missing packages. `note` is told, in one line each, what happens (installs, skips).
pub fn build_all(
    out: &Path,
    kernels: &[&str],
    install: bool,
    mut note: impl FnMut(&str),
) -> Vec<Built> {
    Peer::ALL
        .into_iter()
        .map(|peer| Built {
            peer,
            state: build(out, peer, kernels, install, &mut note),
        })
        .collect()
}

/// Runs `program args`, giving its output, or an error that names the program.
fn run(program: &str, args: &[&str]) -> Result<Output, String> {
    Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))
}

/// Whether `program` can be started.
fn exists(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// The packages of `wanted` that dpkg does not list as installed (none when dpkg is not
/// there: then the build says what is missing).
fn missing_packages(wanted: &[&'static str]) -> Vec<&'static str> {
    wanted
        .iter()
        .copied()
        .filter(|p| match run("dpkg-query", &["-W", "-f=${Status}", p]) {
            Ok(o) => !String::from_utf8_lossy(&o.stdout).contains("install ok installed"),
            Err(_) => false,
        })
        .collect()
}

/// Whether this process may run `apt-get install`: root, with apt-get present.
fn can_install() -> bool {
    let root = run("id", &["-u"]).is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    root && exists("apt-get")
}

/// `apt-get install -y PACKAGES`, after `apt-get update` when the first attempt fails.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    let attempt = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(|e| format!("apt-get: {e}"))
    };
    let mut out = attempt()?;
    if !out.status.success() {
        let _ = Command::new("apt-get")
            .args(["update", "-q"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
        out = attempt()?;
    }
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(stderr
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("failed")
            .trim()
            .to_string())
    }
}

/// Builds one peer.
fn build(
    out: &Path,
    peer: Peer,
    kernels: &[&str],
    install: bool,
    note: &mut impl FnMut(&str),
) -> Prepared {
    if !peer.sources().is_dir() {
        return Prepared::Skipped(format!(
            "its sources are not at {} (run from a Locus checkout)",
            peer.sources().display()
        ));
    }
    if peer == Peer::OpenmpLocus {
        if let Err(e) = crate::cmd::omp::library_dir(locus_omp::env::LIBRARY_FILE) {
            return Prepared::Skipped(e.to_string());
        }
    }
    let missing = missing_packages(packages(peer));
    if !missing.is_empty() {
        let list = missing.join(" ");
        if !install {
            return Prepared::Skipped(format!("needs the Debian packages {list}"));
        }
        if !can_install() {
            return Prepared::Skipped(format!(
                "needs the Debian packages {list} (as root: apt-get install -y {list})"
            ));
        }
        note(&format!(
            "installing {list} for the {peer} peer (apt-get install -y {list})"
        ));
        if let Err(e) = apt_install(&missing) {
            return Prepared::Skipped(format!("apt-get install -y {list} failed: {e}"));
        }
    }
    let dir = program_dir(out, peer);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return Prepared::Failed(format!("{}: {e}", dir.display()));
    }
    match peer {
        Peer::Rayon => build_rayon(&dir),
        _ => build_c(peer, &dir, kernels),
    }
}

/// The compiler and flags of a C or C++ peer (before `-o`), and the flags after the
/// source; `Err` when something it needs is missing.
fn c_command(peer: Peer) -> Result<(String, Vec<String>, Vec<String>), String> {
    let common = ["-O2", "-Wall", "-ffp-contract=off", "-falign-loops=64"].map(String::from);
    let (compiler, mut before, mut after): (&str, Vec<String>, Vec<String>) = match peer {
        Peer::OpenmpGcc | Peer::OpenmpLocus => ("gcc", vec!["-fopenmp".into()], Vec::new()),
        Peer::OpenmpClang => ("clang", vec!["-fopenmp".into()], Vec::new()),
        Peer::Tbb => ("g++", vec!["-std=c++17".into()], vec!["-ltbb".into()]),
        Peer::Starpu => {
            let module = ["starpu-1.4", "starpu-1.3"]
                .into_iter()
                .find(|m| run("pkg-config", &["--exists", m]).is_ok_and(|o| o.status.success()))
                .ok_or(
                    "pkg-config finds neither starpu-1.4 nor starpu-1.3 (Debian: libstarpu-dev)",
                )?;
            let flags = |what: &str| -> Result<Vec<String>, String> {
                let o = run("pkg-config", &[what, module])?;
                Ok(String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(String::from)
                    .collect())
            };
            ("gcc", flags("--cflags")?, flags("--libs")?)
        }
        Peer::Rayon => return Err("peers/rayon is built by cargo, not a C compiler".into()),
        Peer::LocusC => {
            let (include, library) = locus_c_library()?;
            let libs = [
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ];
            (
                "gcc",
                vec![format!("-I{}", include.display())],
                std::iter::once(library.display().to_string())
                    .chain(libs.map(String::from))
                    .collect(),
            )
        }
    };
    if !exists(compiler) {
        return Err(format!("{compiler} is not installed"));
    }
    let mut flags = common.to_vec();
    flags.append(&mut before);
    // The math library: cholesky's tiles take square roots.
    after.push("-lm".into());
    Ok((compiler.to_string(), flags, after))
}

/// Builds the C or C++ programs of `peer` for `kernels` into `dir`.
fn build_c(peer: Peer, dir: &Path, kernels: &[&str]) -> Prepared {
    let (compiler, flags, libs) = match c_command(peer) {
        Ok(c) => c,
        Err(e) => return Prepared::Skipped(e),
    };
    let ext = if peer == Peer::Tbb { "cpp" } else { "c" };
    let mut warnings = Vec::new();
    for kernel in kernels.iter().filter(|k| peer.has(k)) {
        let source = peer.sources().join(format!("{}.{ext}", file_stem(kernel)));
        let out = Command::new(&compiler)
            .args(&flags)
            .arg("-o")
            .arg(dir.join(file_stem(kernel)))
            .arg(&source)
            .args(&libs)
            .output();
        let out = match out {
            Ok(o) => o,
            Err(e) => return Prepared::Failed(format!("{compiler}: {e}")),
        };
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if !out.status.success() {
            let first: Vec<&str> = stderr.lines().take(5).collect();
            return Prepared::Failed(format!(
                "{compiler} could not build {}: {}",
                source.display(),
                first.join(" | ")
            ));
        }
        if !stderr.is_empty() {
            warnings.push(format!("{}: {stderr}", source.display()));
        }
    }
    Prepared::Ready {
        dir: dir.to_path_buf(),
        build: format!(
            "{compiler} {} -o PROGRAM SOURCE {}",
            flags.join(" "),
            libs.join(" ")
        )
        .trim_end()
        .to_string(),
        warnings,
    }
}

/// The cargo to run: the one running us when there is one, else `cargo` on the PATH.
/// Builds Locus's C API as a static library (`cargo build --release -p locus-capi`) for
/// the `locus-c` peer: its header directory and the library's path.
fn locus_c_library() -> Result<(PathBuf, PathBuf), String> {
    let cargo = cargo();
    let crate_dir = Path::new(super::SOURCES).join("../crates/locus-capi");
    let out = Command::new(&cargo)
        .args(["build", "--release", "-q", "--lib", "-p", "locus-capi"])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(crate_dir.join("Cargo.toml"))
        .output()
        .map_err(|e| format!("{cargo}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(5)
            .collect();
        return Err(format!(
            "cargo could not build crates/locus-capi: {}",
            first.join(" | ")
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let library = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "locus_capi")
        .flat_map(|m| m["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .find(|f| f.extension().is_some_and(|e| e == "a"))
        .ok_or("cargo built crates/locus-capi but named no static library")?;
    Ok((crate_dir.join("include"), library))
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Builds `peers/rayon` with cargo in release mode and copies the program into `dir`.
/// Its target directory is `peer-rayon` under the workspace's (`CARGO_TARGET_DIR` when
/// set), so that it is built once and never waits for another cargo's lock.
fn build_rayon(dir: &Path) -> Prepared {
    let cargo = cargo();
    if !exists(&cargo) {
        return Prepared::Skipped("needs cargo (https://rustup.rs) to build peers/rayon".into());
    }
    let manifest = Peer::Rayon.sources().join("Cargo.toml");
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t),
        None => Path::new(super::SOURCES).join("../target"),
    }
    .join("peer-rayon");
    let out = Command::new(&cargo)
        .args(["build", "--release", "-q", "-p", "locus-peer-rayon"])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return Prepared::Failed(format!("{cargo}: {e}")),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(5)
            .collect();
        return Prepared::Failed(format!(
            "cargo could not build peers/rayon: {}",
            first.join(" | ")
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let executable = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "locus-peer-rayon")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from));
    let Some(executable) = executable else {
        return Prepared::Failed("cargo built peers/rayon but named no executable".into());
    };
    let program = dir.join("locus-peer-rayon");
    if let Err(e) = std::fs::copy(&executable, &program) {
        return Prepared::Failed(format!(
            "{} -> {}: {e}",
            executable.display(),
            program.display()
        ));
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Prepared::Ready {
        dir: dir.to_path_buf(),
        build: "cargo build --release -p locus-peer-rayon".into(),
        warnings: if stderr.is_empty() {
            Vec::new()
        } else {
            vec![stderr]
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_that_is_not_installed_is_missing() {
        if !exists("dpkg-query") {
            println!("note: no dpkg-query here; nothing to check");
            return;
        }
        assert_eq!(
            missing_packages(&["locus-no-such-package"]),
            ["locus-no-such-package"]
        );
    }

    #[test]
    fn an_unbuilt_peer_has_no_program() {
        let b = Built {
            peer: Peer::Starpu,
            state: Prepared::Skipped("needs the Debian packages libstarpu-dev".into()),
        };
        assert!(b.program("jacobi-2d").is_none());
        assert_eq!(
            program_dir(Path::new("/out"), Peer::OpenmpGcc),
            Path::new("/out/peers")
        );
        assert_eq!(
            program_dir(Path::new("/out"), Peer::Tbb),
            Path::new("/out/peers/tbb")
        );
    }
}
