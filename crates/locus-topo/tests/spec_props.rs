//! Property tests of the topology spec parser: whatever `--topology` is given (arbitrary
//! text, shapes with huge or zero counts, distance lists and distance files with
//! arbitrary content), `Topology::from_spec` gives either a consistent topology or an
//! error whose message is one non-empty line; it never panics.

use std::path::PathBuf;

use locus_topo::{NodeId, Topology, MAX_CPUS, MAX_NODES};
use proptest::prelude::*;

/// The spec's outcome must be a valid topology or a one-line error.
fn check(spec: &str) -> Result<Option<Topology>, TestCaseError> {
    match Topology::from_spec(spec) {
        Ok(t) => {
            let n = t.num_nodes();
            prop_assert!((1..=MAX_NODES).contains(&n), "{spec:?}: {n} nodes");
            prop_assert!((1..=MAX_CPUS).contains(&t.num_cpus()), "{spec:?}");
            prop_assert_eq!(t.distances().len(), n);
            // Every pair of the first nodes (all of them on small topologies).
            let seen = n.min(16) as u32;
            for i in 0..seen {
                for j in 0..seen {
                    let (a, b) = (NodeId(i), NodeId(j));
                    prop_assert_eq!(t.distance(a, b), t.distance(b, a));
                    prop_assert!(t.distance(a, a) <= t.distance(a, b));
                    let cost = t.read_cost(a, b);
                    prop_assert!(cost.is_finite() && cost > 0.0, "{spec:?}: {cost}");
                }
            }
            Ok(Some(t))
        }
        Err(e) => {
            let message = e.to_string();
            prop_assert!(!message.trim().is_empty(), "{spec:?}: empty message");
            prop_assert!(
                !message.contains('\n') && !message.contains('\r'),
                "{spec:?}: {message:?} is more than one line"
            );
            Ok(None)
        }
    }
}

/// Counts as a user might type them: small, zero, at the limits, huge, negative, not
/// numbers at all.
fn count() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..6).prop_map(|n| n.to_string()),
        (0u64..2048).prop_map(|n| n.to_string()),
        Just((MAX_NODES + 1).to_string()),
        Just(MAX_CPUS.to_string()),
        Just(usize::MAX.to_string()),
        Just(u64::MAX.to_string()),
        Just("340282366920938463463374607431768211456".to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just(String::new()),
        Just(" 2 ".to_string()),
        Just("٣".to_string()),
        "[0-9a-z+ .-]{0,4}",
    ]
}

/// One distance as typed: plausible, zero, at the limits of u32, beyond them, negative,
/// or junk.
fn distance() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (1u32..40).prop_map(|d| d.to_string()),
        1 => Just("0".to_string()),
        1 => Just(u32::MAX.to_string()),
        1 => Just((u64::from(u32::MAX) + 1).to_string()),
        1 => any::<u64>().prop_map(|d| d.to_string()),
        1 => any::<i32>().prop_map(|d| d.to_string()),
        1 => "\\PC{0,3}",
    ]
}

fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![",", " ", ", ", "\n", "\t", ",,", "\r\n"])
}

/// A list of distances with mixed separators.
fn distances(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec((distance(), separator()), 0..max).prop_map(|items| {
        items
            .into_iter()
            .map(|(d, sep)| format!("{d}{sep}"))
            .collect()
    })
}

/// A symmetric matrix with the smallest entry on the diagonal, as text.
fn valid_matrix() -> impl Strategy<Value = (usize, String)> {
    (1usize..6).prop_flat_map(|n| {
        prop::collection::vec(1u32..1000, n * n).prop_map(move |raw| {
            let mut m = vec![vec![0u32; n]; n];
            for i in 0..n {
                for j in 0..n {
                    let v = raw[i.min(j) * n + i.max(j)];
                    m[i][j] = if i == j { 10 } else { 10 + v };
                }
            }
            let text = m
                .iter()
                .map(|row| row.iter().map(u32::to_string).collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
                .join(",");
            (n, text)
        })
    })
}

/// A file in the test's temporary directory, unique per case.
fn scratch_file(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("locus-topo-props-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!(
        "{tag}-{}.txt",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any text at all.
    #[test]
    fn any_text_is_a_topology_or_one_line(spec in "\\PC{0,24}|[\\s\\S]{0,12}") {
        check(&spec)?;
    }

    /// Text shaped like the grammar, with the pieces drawn from values that break
    /// naive parsers.
    #[test]
    fn shapes_with_any_counts(
        n in count(),
        c in count(),
        x in prop::sample::select(vec!["x", "X", "", "xx", "*", " x "]),
        tail in prop_oneof![
            Just(String::new()),
            Just(":".to_string()),
            distances(20).prop_map(|d| format!(":{d}")),
            "\\PC{0,8}".prop_map(|t| format!(":{t}")),
            "\\PC{0,8}".prop_map(|t| format!(":@{t}")),
            Just(":@".to_string()),
            Just(":@/nonexistent/locus\nsecond line".to_string()),
            Just(":@/".to_string()),
        ],
    ) {
        let spec = format!("{n}{x}{c}{tail}");
        if let Some(t) = check(&spec)? {
            // Accepted shapes are the ones asked for.
            if let (Ok(n), Ok(c)) = (n.trim().parse::<usize>(), c.trim().parse::<usize>()) {
                prop_assert_eq!((t.num_nodes(), t.num_cpus()), (n, n * c));
            }
        }
    }

    /// Preset names, misspelt or not.
    #[test]
    fn preset_like_names(
        name in prop::sample::select(vec!["opteron-64", "sgi-uv2000", "host", "opteron-16", "tilepro64"]),
        edit in "[a-z0-9_-]{0,3}",
        at_end in any::<bool>(),
    ) {
        let spec = if at_end { format!("{name}{edit}") } else { format!("{edit}{name}") };
        check(&spec)?;
    }

    /// Well-formed inline matrices are accepted with the distances given.
    #[test]
    fn valid_inline_matrices_are_accepted((n, text) in valid_matrix(), c in 1usize..4) {
        let t = Topology::from_spec(&format!("{n}x{c}:{text}"))
            .map_err(|e| TestCaseError::fail(format!("{n}x{c}:{text}: {e}")))?;
        prop_assert_eq!(t.num_nodes(), n);
        prop_assert_eq!(t.distance(NodeId(0), NodeId(0)), 10);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Distance files with arbitrary content (comments, junk, bytes that are not UTF-8,
    /// huge numbers), and valid matrices written row by row.
    #[test]
    fn distance_files_with_any_content(
        n in 1usize..5,
        content in prop_oneof![
            distances(30).prop_map(String::into_bytes),
            "[0-9 ,#\\n\\r\\ta-z-]{0,60}".prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..64),
            valid_matrix().prop_map(|(_, text)| text.replace(',', "\n# row\n").into_bytes()),
        ],
    ) {
        let path = scratch_file("dist");
        std::fs::write(&path, &content).unwrap();
        check(&format!("{n}x2:@{}", path.display()))?;
        check(&format!("{n}x2: @ {} ", path.display()))?;
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_directory_or_a_missing_file_is_one_line() {
    let dir = std::env::temp_dir();
    for spec in [
        format!("2x1:@{}", dir.display()),
        "2x1:@/nonexistent/locus/dist".to_string(),
        "2x1:@/nonexistent/first\nsecond".to_string(),
        "2x1:10,20\n,20,10x".to_string(),
        "a\nb".to_string(),
        "opteron\n-64".to_string(),
    ] {
        let e = Topology::from_spec(&spec).unwrap_err().to_string();
        assert!(!e.is_empty() && !e.contains('\n'), "{spec:?}: {e:?}");
    }
}
