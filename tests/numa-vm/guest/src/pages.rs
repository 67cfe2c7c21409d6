//! Where the kernel says the pages of a range are, through Locus's own query
//! (`locus_mem::placement::query_nodes`, i.e. `move_pages` without targets).

use locus_mem::placement::{self, PageStatus};

/// The node of every page of `(addr, len)`; an error names the pages that have none
/// (never touched, or a query error).
pub fn nodes_of(addr: *const u8, len: usize) -> Result<Vec<usize>, String> {
    let statuses = placement::query_nodes(addr, len).map_err(|e| e.to_string())?;
    let missing: Vec<(usize, PageStatus)> = statuses
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node().is_none())
        .map(|(i, s)| (i, *s))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} of {} pages have no node, first {:?}",
            missing.len(),
            statuses.len(),
            &missing[..missing.len().min(4)]
        ));
    }
    Ok(statuses.iter().filter_map(|s| s.node()).collect())
}

/// Pages per node, index = node; nodes beyond `nodes` are counted in the last slot
/// plus one.
pub fn histogram(page_nodes: &[usize], nodes: usize) -> Vec<usize> {
    let mut counts = vec![0; nodes + 1];
    for &n in page_nodes {
        counts[n.min(nodes)] += 1;
    }
    if counts[nodes] == 0 {
        counts.pop();
    }
    counts
}

/// Checks that every page of `(addr, len)` is on `want`; returns the number of pages.
pub fn all_on(addr: *const u8, len: usize, want: usize, nodes: usize) -> Result<usize, String> {
    let got = nodes_of(addr, len)?;
    let on = got.iter().filter(|&&n| n == want).count();
    if on == got.len() {
        Ok(on)
    } else {
        Err(format!(
            "{on}/{} pages on node {want}, pages per node {:?}",
            got.len(),
            histogram(&got, nodes)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::histogram;

    #[test]
    fn histogram_counts_out_of_range_nodes_apart() {
        assert_eq!(histogram(&[0, 1, 1, 3], 4), vec![1, 2, 0, 1]);
        assert_eq!(histogram(&[0, 7], 2), vec![1, 0, 1]);
    }
}
