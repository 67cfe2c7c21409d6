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
    /// `impl=FUNC`: the runtime function, when it is not `lomp_<name>`.
    target: Option<String>,
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
                .position(|w| w.starts_with("impl") || w.starts_with("refuse:"))
                .map(|i| rest[i..].join(" "))
                .expect("symbol kind");
            let refused = kind.strip_prefix("refuse:").map(str::to_string);
            let target = kind.strip_prefix("impl=").map(str::to_string);
            Symbol {
                name,
                version,
                default,
                refused,
                target,
            }
        })
        .collect()
}

/// The family of a version node (`GOMP` of `GOMP_4.0`; a node without a number, such
/// as libomp's `VERSION`, is its own family).
fn family(node: &str) -> &str {
    node.rsplit_once('_').map_or(node, |(f, _)| f)
}

/// Version nodes in the order of GNU libgomp's map, each inheriting the previous one of
/// its family.
fn nodes(symbols: &[Symbol]) -> Vec<String> {
    let mut all: Vec<String> = symbols.iter().map(|s| s.version.clone()).collect();
    all.sort_by_key(|v| {
        let number = v.rsplit_once('_').map_or("", |(_, n)| n);
        let parts: Vec<u32> = number.split('.').map(|p| p.parse().unwrap_or(0)).collect();
        (family(v).to_string(), parts)
    });
    all.dedup();
    all
}

/// One shared object of trampolines: its soname, the symbol list it is built from, a C
/// file compiled into it (entry points the trampolines cannot express) and the global
/// names that file defines.
struct Shim {
    soname: &'static str,
    symbols: &'static str,
    c_file: Option<&'static str>,
    c_globals: &'static [&'static str],
    /// Other names the shim is copied to in `target/<profile>/omp/`.
    aliases: &'static [&'static str],
}

const SHIMS: [Shim; 2] = [
    Shim {
        soname: "libgomp.so.1",
        symbols: "symbols.txt",
        c_file: None,
        c_globals: &[],
        aliases: &[],
    },
    Shim {
        soname: "libomp.so.5",
        symbols: "symbols-kmp.txt",
        c_file: Some("src/kmp_shim.c"),
        c_globals: &[
            "__kmpc_fork_call",
            "omp_null_allocator",
            "omp_default_mem_alloc",
            "omp_large_cap_mem_alloc",
            "omp_const_mem_alloc",
            "omp_high_bw_mem_alloc",
            "omp_low_lat_mem_alloc",
            "omp_cgroup_mem_alloc",
            "omp_pteam_mem_alloc",
            "omp_thread_mem_alloc",
            "omp_default_mem_space",
            "omp_large_cap_mem_space",
            "omp_const_mem_space",
            "omp_high_bw_mem_space",
            "omp_low_lat_mem_space",
        ],
        aliases: &["libomp.so"],
    },
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if arch != "x86_64" || os != "linux" {
        println!(
            "cargo:warning=libgomp.so.1 and libomp.so.5 are built for x86_64 Linux only; skipped on {arch}-{os}"
        );
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    std::fs::write(out.join("stub.c"), "").unwrap();
    let stub_dir = out.join("stub");
    std::fs::create_dir_all(&stub_dir).unwrap();
    run(Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(stub_dir.join("liblocus_omp.so"))
        .arg(out.join("stub.c"))
        .arg("-Wl,-soname,liblocus_omp.so"));
    for shim in &SHIMS {
        build_shim(shim, &cc, &out, &stub_dir);
    }
}

/// Assembles one shim in `out` and copies it (and its aliases) to `target/<profile>/omp/`.
fn build_shim(shim: &Shim, cc: &str, out: &Path, stub_dir: &Path) {
    println!("cargo:rerun-if-changed={}", shim.symbols);
    if let Some(c) = shim.c_file {
        println!("cargo:rerun-if-changed={c}");
    }
    let symbols = parse(&std::fs::read_to_string(shim.symbols).expect("symbol list"));
    let tag = shim.soname.replace('.', "_");

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
                let target = match &s.target {
                    Some(t) => t.clone(),
                    None if s.default => format!("lomp_{}", s.name),
                    None => format!("lomp_{}_1", s.name),
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
        let parent = order[..k].iter().rev().find(|p| family(p) == family(node));
        // A node that names globals (the C file's) hides every other name: the
        // trampolines' names bound to it are listed too.
        let globals: String = if k == 0 && !shim.c_globals.is_empty() {
            let bound = symbols
                .iter()
                .filter(|s| &s.version == node)
                .map(|s| s.name.as_str());
            let all: Vec<&str> = shim.c_globals.iter().copied().chain(bound).collect();
            format!(" global: {};", all.join("; "))
        } else {
            String::new()
        };
        let local = if k == 0 { " local: *;" } else { "" };
        match parent {
            Some(p) => writeln!(map, "{node} {{{globals}{local} }} {p};").unwrap(),
            None => writeln!(map, "{node} {{{globals}{local} }};").unwrap(),
        }
    }

    let asm_file = out.join(format!("{tag}.s"));
    let map_file = out.join(format!("{tag}.map"));
    std::fs::write(&asm_file, asm).unwrap();
    std::fs::write(&map_file, map).unwrap();
    let built = out.join(shim.soname);
    let mut cmd = Command::new(cc);
    cmd.args(["-shared", "-fPIC", "-O2", "-nostartfiles", "-o"])
        .arg(&built)
        .arg(&asm_file);
    if let Some(c) = shim.c_file {
        cmd.arg(c);
    }
    run(cmd
        .arg(format!("-Wl,-soname,{}", shim.soname))
        .arg(format!("-Wl,--version-script={}", map_file.display()))
        .arg("-Wl,--no-as-needed")
        .arg(format!("-L{}", stub_dir.display()))
        .arg("-llocus_omp")
        .arg("-Wl,-rpath,$ORIGIN/../deps:$ORIGIN")
        .arg("-Wl,-z,now"));
    // target/<profile>/build/locus-omp-<hash>/out -> target/<profile>/omp/: a directory
    // holding only the shims, which `locus omp` puts on LD_LIBRARY_PATH; a shim finds
    // the runtime in target/<profile>/deps/, where cargo always writes the cdylib (it
    // copies it up to target/<profile>/ only when this crate itself is built).
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let dir = profile_dir.join("omp");
        std::fs::create_dir_all(&dir).unwrap();
        for name in std::iter::once(&shim.soname).chain(shim.aliases) {
            copy_if_changed(&built, &dir.join(name));
        }
    }
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
