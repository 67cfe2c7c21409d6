//! What the guest kernel says about its NUMA nodes, read from `/sys/devices/system/node`.

use std::fs;

const NODE_DIR: &str = "/sys/devices/system/node";

/// Reads a sysfs file of the node directory, e.g. `online` or `node2/distance`.
pub fn read(relative: &str) -> Result<String, String> {
    let path = format!("{NODE_DIR}/{relative}");
    fs::read_to_string(&path)
        .map(|text| text.trim().to_string())
        .map_err(|e| format!("cannot read {path}: {e}"))
}

/// Parses a kernel list such as `0-3,8,10-11` into its members.
pub fn parse_list(text: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let number = |s: &str| {
            s.parse::<usize>()
                .map_err(|_| format!("bad list entry {part:?} in {text:?}"))
        };
        match part.split_once('-') {
            Some((lo, hi)) => out.extend(number(lo)?..=number(hi)?),
            None => out.push(number(part)?),
        }
    }
    Ok(out)
}

/// The online NUMA nodes.
pub fn online_nodes() -> Result<Vec<usize>, String> {
    parse_list(&read("online")?)
}

/// The CPUs of `node`.
pub fn cpus_of(node: usize) -> Result<Vec<usize>, String> {
    parse_list(&read(&format!("node{node}/cpulist"))?)
}

/// The distance row of `node`: its distance to every node, in node order.
pub fn distances_of(node: usize) -> Result<Vec<u32>, String> {
    let text = read(&format!("node{node}/distance"))?;
    text.split_whitespace()
        .map(|d| {
            d.parse::<u32>()
                .map_err(|_| format!("bad distance {d:?} for node {node}"))
        })
        .collect()
}

/// `MemTotal` of `node` in KiB, from `nodeN/meminfo`.
pub fn mem_total_kib(node: usize) -> Result<u64, String> {
    let text = read(&format!("node{node}/meminfo"))?;
    text.lines()
        .find_map(|line| {
            let (_, rest) = line.split_once("MemTotal:")?;
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .ok_or_else(|| format!("no MemTotal in node{node}/meminfo"))
}

#[cfg(test)]
mod tests {
    use super::parse_list;

    #[test]
    fn parses_ranges_and_singles() {
        assert_eq!(
            parse_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_list("").unwrap(), Vec::<usize>::new());
        assert!(parse_list("0-x").is_err());
    }
}
