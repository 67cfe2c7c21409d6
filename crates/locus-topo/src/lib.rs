//! NUMA topology model for Locus: nodes, CPUs, cost matrix, sysfs/hwloc backends, specs and presets.
