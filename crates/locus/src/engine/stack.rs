//! How deep bodies may nest on a thread's stack.
//!
//! A body waiting for its children runs other tasks meanwhile, on its own thread's
//! stack (a worker of `threads`, the one thread of a simulated run), so waits nest
//! there. Before starting a task in such a wait, an engine asks [`StackGuard::admit`]:
//! with too little stack left the task's run fails with [`Error::StackExhausted`], and
//! the task, like every task of a failed run, is drained without its body.

use crate::error::Error;
use crate::graph::Task;

/// The lowest stack address at which a thread still starts a nested task.
#[derive(Clone, Copy, Debug)]
pub struct StackGuard {
    floor: usize,
    bytes: usize,
}

impl StackGuard {
    /// The guard of the calling thread, called near the top of its stack of `bytes`:
    /// it keeps a quarter of the stack, between 64 KiB and 1 MiB, for the frames of a
    /// body and of the runtime calls it makes before it nests again.
    #[inline]
    pub fn here(bytes: usize) -> StackGuard {
        let reserve = (bytes / 4).clamp(64 << 10, 1 << 20);
        StackGuard {
            floor: stack_address().saturating_sub(bytes.saturating_sub(reserve)),
            bytes,
        }
    }

    /// The guard of a thread whose stack is not known: it admits every task.
    pub fn unknown() -> StackGuard {
        StackGuard { floor: 0, bytes: 0 }
    }

    /// Before worker `worker` starts `task` nested in a wait: fails the task's run when
    /// the stack is too deep (the task then drains unrun).
    #[inline]
    pub fn admit(&self, task: &Task, worker: usize) {
        if stack_address() < self.floor && !task.run.is_failed() {
            task.run.fail(Error::StackExhausted {
                task: task.name.to_string(),
                worker,
                stack_bytes: self.bytes,
            });
        }
    }
}

/// The address of the caller's stack frame, about: the stack pointer, give or take
/// the frame.
#[inline(always)]
fn stack_address() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads the stack pointer into a register; no memory is touched.
        unsafe {
            std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let marker = 0u8;
        std::hint::black_box(&marker) as *const u8 as usize
    }
}
