//! The CPUs this process may run on (`sched_getaffinity`).

use crate::error::TopoError;

/// The OS numbers of the CPUs in this process's affinity mask, ascending.
pub fn allowed_cpus() -> Result<Vec<usize>, TopoError> {
    // SAFETY: `cpu_set_t` is a plain bit array for which all-zero is a valid value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` and we pass its exact size; pid 0
    // is the calling thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(TopoError::Affinity(std::sync::Arc::new(
            std::io::Error::last_os_error(),
        )));
    }
    let bits = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is initialised and `cpu < bits`, the number of CPUs it can hold.
    Ok((0..bits)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_may_run_somewhere() {
        let cpus = super::allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }
}
