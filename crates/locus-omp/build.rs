//! Builds `libgomp.so.1`, the small shared object that gives gcc-compiled programs the
//! versioned symbols of GNU libgomp (README, "Symbol versions").
//!
//! rustc links a cdylib with an anonymous version script of its own, and GNU ld refuses
//! to combine it with the named version nodes (`GOMP_1.0`, `OMP_3.0`, ...) that ld.so
//! checks a gcc-compiled program against. So the Rust runtime is built as the ordinary
//! cdylib `liblocus_omp.so`, exporting one unversioned `lomp_*` function per entry point,
//! and this script assembles `libgomp.so.1` from `symbols.txt`: one two-instruction
//! trampoline per (symbol, version), bound to its version by `.symver`, that jumps to the
//! Rust function (every register and stack argument passes through untouched, varargs
//! included) or, for a construct Locus does not run, to `lomp_refuse` with the
//! construct's name. The shim names `liblocus_omp.so` as a needed library (linked against
//! an empty stand-in of that soname, since the real one does not exist before this crate
//! is compiled).
//!
//! The shim is copied to `target/<profile>/omp/`, and finds the runtime in
//! `target/<profile>/deps/` or, installed, beside itself (`RUNPATH $ORIGIN/../deps:$ORIGIN`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One line of `symbols.txt`.
struct Symbol {
    name: String,
    version: String,
    default: bool,
    /// `None`: implemented by `lomp_<name>` (`lomp_<name>_1` for a hidden version);
    /// `Some(construct)`: refused, naming the construct.
    refused: Option<String>,
}

fn parse(text: &str) -> Vec<Symbol> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next().expect("symbol name").to_string();
            let version = words.next().expect("symbol version").to_string();
            let rest: Vec<&str> = words.collect();
            let default = !rest.contains(&"hidden");
            let kind = rest
                .iter()
                .position(|w| *w == "impl" || w.starts_with("refuse:"))
                .map(|i| rest[i..].join(" "))
                .expect("symbol kind");
            let refused = kind.strip_prefix("refuse:").map(str::to_string);
            Symbol {
                name,
                version,
                default,
                refused,
            }
        })
        .collect()
}

/// Version nodes in the order of GNU libgomp's map, each inheriting the previous one of
/// its family.
fn nodes(symbols: &[Symbol]) -> Vec<String> {
    let mut all: Vec<String> = symbols.iter().map(|s| s.version.clone()).collect();
    all.sort_by_key(|v| {
        let (family, number) = v.rsplit_once('_').expect("FAMILY_N.N");
        let parts: Vec<u32> = number.split('.').map(|p| p.parse().unwrap_or(0)).collect();
        (family.to_string(), parts)
    });
    all.dedup();
    all
}

fn main() {
    println!("cargo:rerun-if-changed=symbols.txt");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if arch != "x86_64" || os != "linux" {
        println!(
            "cargo:warning=libgomp.so.1 is built for x86_64 Linux only; skipped on {arch}-{os}"
        );
        return;
    }
    let symbols = parse(&std::fs::read_to_string("symbols.txt").expect("symbols.txt"));

    let mut asm = String::from("    .text\n");
    for (i, s) in symbols.iter().enumerate() {
        let tramp = format!("lomp_tramp_{i}");
        writeln!(
            asm,
            "    .globl {tramp}\n    .type {tramp}, @function\n{tramp}:"
        )
        .unwrap();
        match &s.refused {
            None => {
                let target = if s.default {
                    format!("lomp_{}", s.name)
                } else {
                    format!("lomp_{}_1", s.name)
                };
                writeln!(asm, "    jmp {target}@PLT").unwrap();
            }
            Some(construct) => {
                writeln!(
                    asm,
                    "    leaq .Llomp_name_{i}(%rip), %rdi\n    jmp lomp_refuse@PLT\n    \
                     .section .rodata\n.Llomp_name_{i}:\n    .asciz \"{construct} ({})\"\n    .text",
                    s.name
                )
                .unwrap();
            }
        }
        let at = if s.default { "@@" } else { "@" };
        writeln!(
            asm,
            "    .size {tramp}, .-{tramp}\n    .symver {tramp}, {}{at}{}",
            s.name, s.version
        )
        .unwrap();
    }
    asm.push_str("    .section .note.GNU-stack,\"\",@progbits\n");

    let mut map = String::new();
    let order = nodes(&symbols);
    for (k, node) in order.iter().enumerate() {
        let family = node.rsplit_once('_').unwrap().0;
        let parent = order[..k]
            .iter()
            .rev()
            .find(|p| p.rsplit_once('_').unwrap().0 == family);
        let local = if k == 0 { " local: *;" } else { "" };
        match parent {
            Some(p) => writeln!(map, "{node} {{{local} }} {p};").unwrap(),
            None => writeln!(map, "{node} {{{local} }};").unwrap(),
        }
    }

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    std::fs::write(out.join("shim.s"), asm).unwrap();
    std::fs::write(out.join("libgomp.map"), map).unwrap();
    std::fs::write(out.join("stub.c"), "").unwrap();
    let stub_dir = out.join("stub");
    std::fs::create_dir_all(&stub_dir).unwrap();
    run(Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(stub_dir.join("liblocus_omp.so"))
        .arg(out.join("stub.c"))
        .arg("-Wl,-soname,liblocus_omp.so"));
    let shim = out.join("libgomp.so.1");
    run(Command::new(&cc)
        .args(["-shared", "-fPIC", "-nostartfiles", "-o"])
        .arg(&shim)
        .arg(out.join("shim.s"))
        .arg("-Wl,-soname,libgomp.so.1")
        .arg(format!(
            "-Wl,--version-script={}",
            out.join("libgomp.map").display()
        ))
        .arg("-Wl,--no-as-needed")
        .arg(format!("-L{}", stub_dir.display()))
        .arg("-llocus_omp")
        .arg("-Wl,-rpath,$ORIGIN/../deps:$ORIGIN")
        .arg("-Wl,-z,now"));
    // target/<profile>/build/locus-omp-<hash>/out -> target/<profile>/omp/: a directory
    // holding only the shim, which `locus omp` puts on LD_LIBRARY_PATH; the shim finds
    // the runtime in target/<profile>/deps/, where cargo always writes the cdylib (it
    // copies it up to target/<profile>/ only when this crate itself is built).
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let dir = profile_dir.join("omp");
        std::fs::create_dir_all(&dir).unwrap();
        copy_if_changed(&shim, &dir.join("libgomp.so.1"));
    }
    println!("cargo:rustc-env=LOCUS_OMP_SHIM={}", shim.display());
}

fn run(cmd: &mut Command) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler ({cmd:?}): {e}"));
    assert!(status.success(), "{cmd:?} failed: {status}");
}

fn copy_if_changed(from: &Path, to: &Path) {
    let new = std::fs::read(from).unwrap();
    if std::fs::read(to).ok().as_deref() != Some(&new[..]) {
        let tmp = to.with_extension("tmp");
        std::fs::write(&tmp, &new).unwrap();
        std::fs::rename(&tmp, to).unwrap();
    }
}
