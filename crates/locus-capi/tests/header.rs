//! The committed `include/locus.h` is what cbindgen generates from the sources now,
//! made valid C89 ([`c89`]): a change to the C API that is not regenerated fails here.
//! `LOCUS_BLESS=1` rewrites the header instead.

use std::path::Path;

/// cbindgen's output made valid ISO C90 (`-std=c89 -pedantic`): its `#endif //
/// __cplusplus` and `} // extern "C"` comments in the C90 form, and no comma after
/// the last enumerator (C90 allows none; C99 does).
fn c89(header: &str) -> String {
    let header = header
        .replace("#endif // __cplusplus", "#endif /* __cplusplus */")
        .replace("#endif  // __cplusplus", "#endif /* __cplusplus */")
        .replace("}  // extern \"C\"", "} /* extern \"C\" */");
    let lines: Vec<&str> = header.lines().collect();
    let mut out = String::with_capacity(header.len());
    for (i, line) in lines.iter().enumerate() {
        let closes_next = lines
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('}'));
        match line.strip_suffix(',') {
            Some(last) if closes_next => out.push_str(last),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses the crate")
        .write(&mut generated);
    let generated = c89(&String::from_utf8(generated).expect("UTF-8 header"));
    let path = dir.join("include/locus.h");
    if std::env::var_os("LOCUS_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/locus.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/locus.h is stale: run `LOCUS_BLESS=1 cargo test -p locus-capi --test header` \
         and commit the result"
    );
}

#[test]
fn c89_ends_enumerator_lists_and_preprocessor_comments_the_c90_way() {
    let got = c89("enum e {\n  A = 0,\n  B = 1,\n};\n#endif // __cplusplus\n");
    assert_eq!(
        got,
        "enum e {\n  A = 0,\n  B = 1\n};\n#endif /* __cplusplus */\n"
    );
}
