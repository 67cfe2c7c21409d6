//! Check results: one line per check, counts for the closing summary line.

/// What a check found: `Ok(detail)` when it holds, `Err(detail)` when it does not.
pub type Outcome = Result<String, String>;

/// Counts passed and failed checks and prints one line for each.
#[derive(Debug, Default)]
pub struct Report {
    passed: usize,
    failed: usize,
}

impl Report {
    /// Records the outcome of the check `name` and prints `ok name: detail` or
    /// `FAIL name: detail`.
    pub fn record(&mut self, name: &str, outcome: Outcome) {
        match outcome {
            Ok(detail) => {
                self.passed += 1;
                println!("ok {name}: {detail}");
            }
            Err(detail) => {
                self.failed += 1;
                println!("FAIL {name}: {detail}");
            }
        }
    }

    /// Number of checks that held.
    pub fn passed(&self) -> usize {
        self.passed
    }

    /// Number of checks that did not hold.
    pub fn failed(&self) -> usize {
        self.failed
    }
}
