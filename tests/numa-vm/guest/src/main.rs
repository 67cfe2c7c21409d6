//! Placement checks that run inside a kernel with several NUMA nodes.
//!
//! `tests/numa-vm/run.sh` boots a guest kernel with four emulated NUMA nodes and runs
//! this binary as part of its init. Each check group lives in its own module and
//! records one line per check (`ok name: detail` / `FAIL name: detail`); the binary
//! ends with the summary line `N passed, N failed` and exits non-zero when any check
//! failed or none ran. See `tests/numa-vm/README.md` for what each check means.

mod expected;
mod mapping;
mod memory;
mod pages;
mod pinned;
mod placement;
mod pools;
mod report;
mod runtime;
mod sysfs;
mod topology;

use report::Report;

fn main() {
    let mut report = Report::default();

    // Check groups, in order: each one is a module with a `run(&mut Report)`.
    // Groups that exercise the runtime (task graphs under each scheduling
    // configuration) are added here as further modules.
    topology::run(&mut report);
    placement::run(&mut report);
    pools::run(&mut report);
    runtime::run(&mut report);
    memory::run(&mut report);

    println!("{} passed, {} failed", report.passed(), report.failed());
    let clean = report.failed() == 0 && report.passed() > 0;
    std::process::exit(if clean { 0 } else { 1 });
}
