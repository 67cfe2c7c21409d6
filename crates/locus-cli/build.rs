//! Records the commit the binary is built from, as `LOCUS_COMMIT` (`git rev-parse
//! --short HEAD`, or `unknown` without git or outside a repository), for the reports
//! `locus bench` and `locus compare` write: they name the build that measured, whatever
//! directory they run in.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short", "HEAD"]);
    // Built again when HEAD moves: another branch checked out (HEAD), a commit on the
    // branch (the ref HEAD names, loose or packed). A worktree has its own HEAD and
    // shares the refs of the main repository.
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        let dir = PathBuf::from(dir);
        // A relative common directory is relative to where git ran.
        let common =
            PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join(common);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!(
            "cargo:rerun-if-changed={}",
            common.join("packed-refs").display()
        );
        if let Some(name) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(name).display());
        }
    }
    println!(
        "cargo:rustc-env=LOCUS_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
