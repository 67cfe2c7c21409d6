//! The repository explains itself: its code and docs cite only what a reader of the
//! repository can open (`docs/architecture.md`, `docs/guide.md`, `docs/papers.md`, a
//! module, a README, or a paper by authors and title), and the relative links of its
//! markdown files (README.md, docs/*.md and the READMEs beside the code) point at files
//! that exist, and at headings that exist.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The root of the repository (this crate is `crates/locus-cli`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// Every file under `dir` whose name ends with one of `extensions`, skipping build
/// output (`target`) and hidden directories (`.git`).
fn files_under(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("a readable directory entry");
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().expect("a file type");
        if kind.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files_under(&path, extensions, out);
            }
        } else if kind.is_file() && extensions.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// Phrases that cite documents outside the repository. They are spelled in pieces so
/// that this file does not match itself.
fn forbidden_phrases() -> Vec<String> {
    vec![
        ["DES", "IGN section"].concat(),
        ["DES", "IGN.md"].concat(),
        ["STY", "LE rule"].concat(),
        ["STY", "LE.md"].concat(),
        ["../", "shared"].concat(),
    ]
}

/// Lines of `text` that contain a forbidden phrase, as `path:line: phrase`.
fn citations_outside_the_repository(path: &Path, text: &str, phrases: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for phrase in phrases {
            if line.contains(phrase.as_str()) {
                found.push(format!("{}:{}: {phrase}", path.display(), i + 1));
            }
        }
    }
    found
}

#[test]
fn code_and_docs_cite_only_what_the_repository_holds() {
    let root = repo_root();
    let mut files = Vec::new();
    files_under(
        &root,
        &[".rs", ".md", ".toml", ".sh", ".c", ".h", ".cpp"],
        &mut files,
    );
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("crates/locus/src/lib.rs")),
        "the scan must see the sources (root: {})",
        root.display()
    );
    let phrases = forbidden_phrases();
    let mut offenders = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue; // not UTF-8: not a source or a document
        };
        offenders.extend(citations_outside_the_repository(
            file.strip_prefix(&root).unwrap_or(file),
            &text,
            &phrases,
        ));
    }
    assert!(
        offenders.is_empty(),
        "these lines cite documents that are not in the repository; cite docs/architecture.md, \
         docs/guide.md, docs/papers.md, a module or a README instead:\n{}",
        offenders.join("\n")
    );
}

/// The anchor GitHub gives a heading: lower case, spaces to `-`, punctuation other than
/// `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of the headings of a markdown text (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `line` without its inline code spans, which may show link syntax as code.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// The destinations of the links of a markdown text, outside code: inline links
/// `[text](dest)` (and images) and reference definitions `[name]: dest`.
fn link_destinations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let dest = after[..end].split_whitespace().next().unwrap_or("");
            out.push((i + 1, dest.to_string()));
            rest = &after[end..];
        }
        let trimmed = line.trim_start();
        if let (Some(stripped), Some(close)) = (trimmed.strip_prefix('['), trimmed.find("]:")) {
            if close > 0 && !stripped.starts_with('^') {
                let dest = trimmed[close + 2..].split_whitespace().next().unwrap_or("");
                out.push((i + 1, dest.to_string()));
            }
        }
    }
    out
}

/// Broken relative links of the markdown file `path`, as `path:line: dest (why)`.
fn broken_links(root: &Path, path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shown = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let mut broken = Vec::new();
    for (line, dest) in link_destinations(&text) {
        if dest.is_empty() || dest.contains("://") || dest.starts_with("mailto:") {
            continue;
        }
        let (file, fragment) = match dest.split_once('#') {
            Some((file, fragment)) => (file, Some(fragment)),
            None => (dest.as_str(), None),
        };
        let target = if file.is_empty() {
            path.to_path_buf()
        } else {
            path.parent().expect("a file has a parent").join(file)
        };
        if !target.exists() {
            broken.push(format!("{shown}:{line}: {dest} (no such file)"));
            continue;
        }
        if let (Some(fragment), true) = (fragment, target.extension().is_some_and(|e| e == "md")) {
            let headings = anchors(&fs::read_to_string(&target).unwrap_or_default());
            if !headings.contains(fragment) {
                broken.push(format!("{shown}:{line}: {dest} (no such heading)"));
            }
        }
    }
    broken
}

/// Checks README.md, docs/*.md and every other markdown file of the repository.
#[test]
fn relative_links_of_readme_and_docs_point_at_what_exists() {
    let root = repo_root();
    let mut files = Vec::new();
    files_under(&root, &[".md"], &mut files);
    files.sort();
    assert!(
        files.contains(&root.join("README.md")),
        "README.md is missing"
    );
    for doc in ["architecture.md", "guide.md", "papers.md"] {
        assert!(
            files.contains(&root.join("docs").join(doc)),
            "docs/{doc} is missing"
        );
    }
    let mut broken = Vec::new();
    for file in &files {
        broken.extend(broken_links(&root, file));
    }
    assert!(
        broken.is_empty(),
        "broken relative links:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_checker_sees_links_and_headings() {
    let text = "# Reading the report\n\nSee [the guide](guide.md#choosing-a-configuration) \
                and `[not a link](nowhere.md)`.\n```\n[code](x.md)\n```\n[ref]: other.md\n";
    let dests: Vec<String> = link_destinations(text)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(dests, ["guide.md#choosing-a-configuration", "other.md"]);
    assert!(anchors(text).contains("reading-the-report"));
    assert_eq!(slug(" `locus bench`"), "locus-bench");
    assert_eq!(
        slug("A task's life: from `spawn` to a worker"),
        "a-tasks-life-from-spawn-to-a-worker"
    );
}

/// The README's synopsis and the guide name every suite of `locus bench` and every
/// preset topology.
#[test]
fn synopsis_lists_every_suite_and_preset() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let guide = std::fs::read_to_string(root.join("docs/guide.md")).unwrap();
    assert!(readme.contains("--suite quick|paper|home|twisted"));
    assert!(guide.contains("--suite quick|paper|home|twisted"));
    for preset in locus_topo::PRESET_NAMES {
        let named = format!("`{preset}`");
        assert!(readme.contains(&named), "README: {preset}");
        assert!(guide.contains(&named), "guide: {preset}");
    }
}
