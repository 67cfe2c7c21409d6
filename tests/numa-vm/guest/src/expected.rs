//! The topology the guest was booted with, as `run.sh` hands it over.
//!
//! `run.sh` builds QEMU's NUMA options and these values from the same table and puts
//! them on the kernel command line; the kernel passes parameters it does not know to
//! init as environment variables, and init passes them on to this binary:
//!
//! - `LOCUS_VM_NODES`: number of NUMA nodes, e.g. `4`;
//! - `LOCUS_VM_CPUS_PER_NODE`: CPUs of each node, numbered node by node, e.g. `2`;
//! - `LOCUS_VM_NODE_MIB`: memory of each node in MiB, e.g. `512`;
//! - `LOCUS_VM_DISTANCES`: the full distance matrix, rows separated by `/` and
//!   entries by `,`, e.g. `10,16/16,10`.

/// The topology the guest is expected to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Number of NUMA nodes.
    pub nodes: usize,
    /// CPUs of each node; node `n` holds CPUs `n * cpus_per_node ..`.
    pub cpus_per_node: usize,
    /// Memory of each node in MiB.
    pub node_mib: u64,
    /// `distances[i][j]`: the firmware distance from node `i` to node `j`.
    pub distances: Vec<Vec<u32>>,
}

impl Expected {
    /// Reads the expected topology from the environment.
    pub fn from_env() -> Result<Expected, String> {
        let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
        let nodes = var("LOCUS_VM_NODES")?;
        let cpus_per_node = var("LOCUS_VM_CPUS_PER_NODE")?;
        let node_mib = var("LOCUS_VM_NODE_MIB")?;
        let text = var("LOCUS_VM_DISTANCES")?;
        Expected::parse(&nodes, &cpus_per_node, &node_mib, &text)
    }

    /// Parses the four values as they appear in the environment.
    pub fn parse(
        nodes: &str,
        cpus_per_node: &str,
        node_mib: &str,
        distances: &str,
    ) -> Result<Expected, String> {
        let number = |name: &str, text: &str| -> Result<u64, String> {
            text.trim()
                .parse::<u64>()
                .map_err(|_| format!("{name} is not a number: {text:?}"))
        };
        let nodes = number("LOCUS_VM_NODES", nodes)? as usize;
        let cpus_per_node = number("LOCUS_VM_CPUS_PER_NODE", cpus_per_node)? as usize;
        let node_mib = number("LOCUS_VM_NODE_MIB", node_mib)?;
        let distances = distances
            .split('/')
            .map(|row| {
                row.split(',')
                    .map(|d| {
                        d.trim()
                            .parse::<u32>()
                            .map_err(|_| format!("bad distance {d:?} in LOCUS_VM_DISTANCES"))
                    })
                    .collect::<Result<Vec<u32>, String>>()
            })
            .collect::<Result<Vec<Vec<u32>>, String>>()?;
        if distances.len() != nodes || distances.iter().any(|row| row.len() != nodes) {
            return Err(format!(
                "LOCUS_VM_DISTANCES is not a {nodes}x{nodes} matrix"
            ));
        }
        Ok(Expected {
            nodes,
            cpus_per_node,
            node_mib,
            distances,
        })
    }

    /// The CPUs node `node` is expected to hold.
    pub fn cpus_of(&self, node: usize) -> Vec<usize> {
        (node * self.cpus_per_node..(node + 1) * self.cpus_per_node).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_two_node_table() {
        let e = Expected::parse("2", "3", "256", "10,20/20,10").unwrap();
        assert_eq!(e.nodes, 2);
        assert_eq!(e.cpus_of(1), vec![3, 4, 5]);
        assert_eq!(e.distances, vec![vec![10, 20], vec![20, 10]]);
    }

    #[test]
    fn rejects_a_matrix_of_the_wrong_shape() {
        assert!(Expected::parse("2", "1", "256", "10,20").is_err());
        assert!(Expected::parse("2", "1", "256", "10,20/20").is_err());
        assert!(Expected::parse("x", "1", "256", "10").is_err());
    }
}
