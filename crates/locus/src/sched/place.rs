//! Where a task that just became ready goes.
//!
//! When a worker satisfies a task's last dependence it *activates* the task (paper 1
//! section 2.1). The policy returns a [`Placement`]; the engine carries it out. The
//! runtime core keeps every activated task on the activating worker's own deque, the
//! behaviour of `ws`, `dsa-base` and `dfa`.

/// The decision for a ready task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Placement {
    /// Push onto the activating worker's own deque.
    Local,
    /// Transfer to worker `w` through its mailbox (kept local if the mailbox is full).
    Worker(usize),
}

/// The activation policy of a configuration.
#[derive(Clone, Debug, Default)]
pub struct ReadyPolicy {
    _private: (),
}

impl ReadyPolicy {
    /// The policy that keeps every ready task with its activating worker.
    pub fn keep_local() -> Self {
        ReadyPolicy { _private: () }
    }

    /// Decides where a task activated by worker `activator` goes.
    pub fn place(&self, _activator: usize) -> Placement {
        Placement::Local
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_local_keeps_every_task() {
        let p = ReadyPolicy::keep_local();
        for w in 0..8 {
            assert_eq!(p.place(w), Placement::Local);
        }
    }
}
