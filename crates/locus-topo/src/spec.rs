//! Topology specs: the strings `--topology` accepts.
//!
//! | spec | meaning |
//! |---|---|
//! | `host` | the machine this process runs on ([`Topology::host`]) |
//! | `NxC` | `N` nodes of `C` CPUs, distance 10 local and 20 remote |
//! | `NxC:d1,d2,...` | the same with a full `N*N` distance matrix, row-major |
//! | `NxC:@FILE` | the same with the matrix read from `FILE` |
//! | `opteron-64`, `sgi-uv2000`, `tilepro64` | a [`preset`] of a machine from paper 1 or 4 |
//!
//! A distance file holds `N*N` integers separated by spaces, commas or newlines (one
//! row per line reads best, as in the kernel's `node*/distance` files); text from `#`
//! to the end of a line is a comment. A synthetic topology's cost factors are the
//! distance ratios `distance(i, j) / distance(i, i)`.

use std::path::Path;

use crate::error::TopoError;
use crate::preset::{self, PRESET_NAMES};
use crate::topology::{Parts, Source, Topology, MAX_CPUS, MAX_NODES};

/// Parses a spec (see the module documentation).
pub(crate) fn from_spec(spec: &str) -> Result<Topology, TopoError> {
    let spec = spec.trim();
    // Messages are one line: control characters of the spec are shown escaped.
    let malformed = |reason: &str| TopoError::MalformedSpec {
        spec: one_line(spec),
        reason: one_line(reason),
    };
    if spec.is_empty() {
        return Err(malformed(
            "empty; expected `host`, `NxC`, `NxC:d,...`, `NxC:@FILE` or a preset name",
        ));
    }
    if spec == "host" {
        return Topology::host();
    }
    if PRESET_NAMES.contains(&spec) {
        return preset::preset(spec);
    }
    if !spec.starts_with(|c: char| c.is_ascii_digit()) {
        if spec
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return preset::preset(spec);
        }
        return Err(malformed(
            "expected `host`, `NxC`, `NxC:d,...`, `NxC:@FILE` or a preset name",
        ));
    }

    let (shape, distances) = match spec.split_once(':') {
        Some((shape, rest)) => (shape, Some(rest)),
        None => (spec, None),
    };
    let (n, c) = shape
        .split_once(['x', 'X'])
        .ok_or_else(|| malformed("expected `NxC`, e.g. `4x8` for 4 nodes of 8 CPUs"))?;
    let n = count(n).ok_or_else(|| malformed(&format!("`{n}` is not a number of nodes")))?;
    let c = count(c).ok_or_else(|| malformed(&format!("`{c}` is not a number of CPUs")))?;
    check_shape(n, c)?;
    let distances = match distances {
        None => default_distances(n),
        Some(text) => {
            let text = text.trim();
            let values = match text.strip_prefix('@') {
                Some(path) if path.trim().is_empty() => {
                    return Err(malformed("`@` names no distance file"))
                }
                Some(path) if path.chars().any(breaks_line) => {
                    return Err(malformed(
                        "the distance file's name has a control character",
                    ))
                }
                Some(path) => read_distance_file(Path::new(path.trim()))?,
                None => parse_numbers(text).map_err(|reason| malformed(&reason))?,
            };
            square(values, n)?
        }
    };
    synthetic_parts(spec, n, c, distances)
}

/// `nodes` nodes of `cpus_per_node` CPUs, distance 10 local and 20 remote.
pub(crate) fn synthetic(nodes: usize, cpus_per_node: usize) -> Result<Topology, TopoError> {
    check_shape(nodes, cpus_per_node)?;
    synthetic_parts(
        &format!("{nodes}x{cpus_per_node}"),
        nodes,
        cpus_per_node,
        default_distances(nodes),
    )
}

fn synthetic_parts(
    name: &str,
    n: usize,
    c: usize,
    distances: Vec<Vec<u32>>,
) -> Result<Topology, TopoError> {
    Topology::build(Parts {
        name: name.to_string(),
        source: Source::Synthetic,
        node_cpus: (0..n).map(|i| (i * c..(i + 1) * c).collect()).collect(),
        pinned: false,
        memory: vec![0; n],
        os_nodes: None,
        cache_groups: None,
        distances,
        costs: None,
    })
}

/// Whether `c` would break a one-line message: a control character or a Unicode line
/// or paragraph separator.
fn breaks_line(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// `text` with the characters that would break a one-line message escaped (`\n`).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if breaks_line(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn count(s: &str) -> Option<usize> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Saturate rather than fail on huge numbers, so the limit check names them.
    Some(s.parse().unwrap_or(usize::MAX))
}

fn check_shape(n: usize, c: usize) -> Result<(), TopoError> {
    if n == 0 {
        return Err(TopoError::NoNodes);
    }
    if c == 0 {
        return Err(TopoError::NoCpus);
    }
    if n > MAX_NODES {
        return Err(TopoError::TooLarge {
            what: "the number of nodes",
            value: n,
            limit: MAX_NODES,
        });
    }
    let total = n.saturating_mul(c);
    if total > MAX_CPUS {
        return Err(TopoError::TooLarge {
            what: "the number of CPUs",
            value: total,
            limit: MAX_CPUS,
        });
    }
    Ok(())
}

fn default_distances(n: usize) -> Vec<Vec<u32>> {
    (0..n)
        .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
        .collect()
}

/// Parses integers separated by commas and/or whitespace.
pub(crate) fn parse_numbers(text: &str) -> Result<Vec<u32>, String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u32>()
                .map_err(|_| format!("distance `{}` is not a non-negative integer", one_line(s)))
        })
        .collect()
}

/// The largest distance file read (16 MiB): a matrix of [`MAX_NODES`] nodes squared,
/// each distance of at most 10 digits, takes 11 MiB. A file is read up to this much,
/// so that a larger one (or an endless pipe) costs no more before it is refused.
const MAX_DISTANCE_FILE: u64 = 16 << 20;

fn read_distance_file(path: &Path) -> Result<Vec<u32>, TopoError> {
    use std::io::Read;
    let io = |source: std::io::Error| TopoError::Io {
        path: path.to_path_buf(),
        source: std::sync::Arc::new(source),
    };
    let mut text = String::new();
    let file = std::fs::File::open(path).map_err(io)?;
    let kind = file.metadata().map_err(io)?.file_type();
    {
        use std::os::unix::fs::FileTypeExt;
        // A device (`/dev/zero`) or a directory is no distance file; a pipe may be.
        if !(kind.is_file() || kind.is_fifo()) {
            return Err(TopoError::Parse {
                path: path.to_path_buf(),
                reason: "not a regular file (a directory, a device or a socket)".into(),
            });
        }
    }
    file.take(MAX_DISTANCE_FILE + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > MAX_DISTANCE_FILE {
        return Err(TopoError::Parse {
            path: path.to_path_buf(),
            reason: format!(
                "larger than {} MiB: a matrix of at most {MAX_NODES} x {MAX_NODES} distances \
                 is far smaller",
                MAX_DISTANCE_FILE >> 20
            ),
        });
    }
    let body: String = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    parse_numbers(&body).map_err(|reason| TopoError::Parse {
        path: path.to_path_buf(),
        reason,
    })
}

fn square(values: Vec<u32>, n: usize) -> Result<Vec<Vec<u32>>, TopoError> {
    if values.len() != n * n {
        return Err(TopoError::NotSquare {
            nodes: n,
            expected: n * n,
            got: values.len(),
        });
    }
    Ok(values.chunks(n).map(<[u32]>::to_vec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{CpuId, NodeId};

    #[test]
    fn plain_shape() {
        let t = from_spec("4x2").unwrap();
        assert_eq!((t.num_nodes(), t.num_cpus(), t.name()), (4, 8, "4x2"));
        assert_eq!(t.node_of_cpu(CpuId(5)), NodeId(2));
        assert_eq!(t.nodes()[3].cpus, [CpuId(6), CpuId(7)]);
        assert_eq!(t.distance(NodeId(1), NodeId(1)), 10);
        assert_eq!(t.distance(NodeId(1), NodeId(2)), 20);
        assert_eq!(t.write_cost(NodeId(1), NodeId(2)), 2.0);
        assert_eq!(t.os_cpu(CpuId(0)), None);
        assert!(t.is_virtual());
        assert_eq!(t.cache_groups().len(), 4);
        assert_eq!(from_spec(" 2X3 ").unwrap().num_cpus(), 6);
    }

    #[test]
    fn inline_distances() {
        let t = from_spec("2x1:10,15,15,10").unwrap();
        assert_eq!(t.distance(NodeId(0), NodeId(1)), 15);
        assert_eq!(t.read_cost(NodeId(0), NodeId(1)), 1.5);
        let t = from_spec("2x1: 10 21 21 10").unwrap();
        assert_eq!(t.distance(NodeId(1), NodeId(0)), 21);
    }

    #[test]
    fn distance_file() {
        let dir = std::env::temp_dir().join(format!("locus-topo-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dist.txt");
        std::fs::write(&path, "# two sockets\n10 12 20\n12 10 20\n20 20 10\n").unwrap();
        let t = from_spec(&format!("3x2:@{}", path.display())).unwrap();
        assert_eq!(t.distance(NodeId(0), NodeId(1)), 12);
        assert_eq!(t.distance(NodeId(2), NodeId(0)), 20);
        let missing = from_spec("3x2:@/nonexistent/locus").unwrap_err();
        assert!(matches!(missing, TopoError::Io { .. }), "{missing}");
        // A device (`/dev/zero`) is refused unread; a larger file is read only as far
        // as the limit.
        let endless = from_spec("3x2:@/dev/zero").unwrap_err();
        assert!(
            endless.to_string().contains("not a regular file"),
            "{endless}"
        );
        let large = dir.join("large.txt");
        std::fs::File::create(&large)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let large = from_spec(&format!("3x2:@{}", large.display())).unwrap_err();
        assert!(large.to_string().contains("larger than 16 MiB"), "{large}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn presets_by_spec() {
        assert_eq!(from_spec("opteron-64").unwrap().num_cpus(), 64);
        assert_eq!(from_spec("sgi-uv2000").unwrap().num_nodes(), 24);
        assert!(matches!(
            from_spec("nehalem"),
            Err(TopoError::UnknownPreset { .. })
        ));
    }

    #[test]
    fn malformed_specs_are_errors() {
        for spec in [
            "",
            "4",
            "4x",
            "x4",
            "4x2x",
            "-1x2",
            "4x2:",
            "4y2",
            "a b",
            "4x2:1,2,x",
        ] {
            let err = from_spec(spec).unwrap_err();
            assert!(!err.to_string().is_empty(), "{spec}");
        }
        assert!(matches!(from_spec("0x3"), Err(TopoError::NoNodes)));
        assert!(matches!(from_spec("3x0"), Err(TopoError::NoCpus)));
        assert!(matches!(
            from_spec("99999999999999999999999x2"),
            Err(TopoError::TooLarge { .. })
        ));
        assert!(matches!(
            from_spec("1000x1000"),
            Err(TopoError::TooLarge { .. })
        ));
    }

    #[test]
    fn distance_matrix_validation() {
        let err = from_spec("2x1:10,20,20").unwrap_err();
        assert!(
            matches!(
                err,
                TopoError::NotSquare {
                    expected: 4,
                    got: 3,
                    ..
                }
            ),
            "{err}"
        );
        let err = from_spec("2x1:10,20,30,10").unwrap_err();
        assert!(matches!(err, TopoError::Asymmetric { .. }), "{err}");
        assert!(err.to_string().contains("asymmetric"));
        let err = from_spec("2x1:10,5,5,10").unwrap_err();
        assert!(
            matches!(err, TopoError::LocalNotSmallest { node: 0, .. }),
            "{err}"
        );
        let err = from_spec("2x1:0,20,20,10").unwrap_err();
        assert!(matches!(err, TopoError::ZeroDistance { .. }), "{err}");
    }

    #[test]
    fn synthetic_constructor() {
        let t = synthetic(3, 4).unwrap();
        assert_eq!((t.name(), t.num_cpus()), ("3x4", 12));
        assert!(matches!(synthetic(0, 4), Err(TopoError::NoNodes)));
        assert!(matches!(synthetic(2, 0), Err(TopoError::NoCpus)));
    }
}
