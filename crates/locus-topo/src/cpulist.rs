//! The kernel's CPU list format (`0-3,8,10-11`), as in `cpulist` and `shared_cpu_list`.

/// Parses a kernel CPU list into sorted, deduplicated CPU numbers.
///
/// An empty (or all-blank) list is valid and gives no CPUs: a memory-only node's
/// `cpulist` is an empty line.
pub(crate) fn parse(text: &str) -> Result<Vec<usize>, String> {
    const MAX_CPU: usize = 1 << 20;
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (number(lo)?, number(hi)?),
            None => {
                let n = number(part)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(format!("range `{part}` runs backwards"));
        }
        if hi >= MAX_CPU {
            return Err(format!("CPU number {hi} is too large"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn number(s: &str) -> Result<usize, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{}` is not a CPU number", s.trim()))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn ranges_and_singles() {
        assert_eq!(parse("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("5").unwrap(), vec![5]);
        assert_eq!(parse("3,1,1-2").unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn empty_list_is_no_cpus() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("\n").unwrap().is_empty());
    }

    #[test]
    fn malformed_lists_are_errors() {
        assert!(parse("a-b").is_err());
        assert!(parse("3-1").is_err());
        assert!(parse("0-99999999").is_err());
    }
}
