//! Where pinned host memory lands. The kernel places a page on the NUMA node
//! of the CPU that first touches it, and `cuMemHostAlloc` touches it on the
//! calling thread; so, as nvbandwidth does (it sets the thread's affinity to
//! NVML's CPU affinity of the GPU before allocating), the allocating thread
//! is bound to the GPU's CPUs for the allocation and restored after. Only
//! this thread's affinity changes, and only for that call: nothing on the
//! machine does.

/// The CPUs and NUMA node a GPU's host memory belongs on (from the topology:
/// the device's `local_cpulist`, else its node's CPUs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostHome {
    pub node: i32,
    pub cpus: Vec<u32>,
}

/// Runs `f` with the calling thread bound to those of `cpus` it may use, and
/// restores its affinity after. `true` with the result when it was bound;
/// `false` when none of `cpus` is allowed to this thread (a container's
/// cpuset, a topology read from another machine), and `f` ran unbound.
pub fn on_cpus<T>(cpus: &[u32], f: impl FnOnce() -> T) -> (T, bool) {
    // SAFETY: cpu_set_t is plain bits; zeroed is the empty set.
    let mut saved: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: pid 0 is the calling thread; writes `size` bytes into `saved`.
    if unsafe { libc::sched_getaffinity(0, size, &mut saved) } != 0 {
        return (f(), false);
    }
    // SAFETY: as above.
    let mut wanted: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let mut any = false;
    for &cpu in cpus.iter().filter(|c| (**c as usize) < libc::CPU_SETSIZE as usize) {
        // SAFETY: the index is below CPU_SETSIZE (filtered above).
        if unsafe { libc::CPU_ISSET(cpu as usize, &saved) } {
            // SAFETY: as above.
            unsafe { libc::CPU_SET(cpu as usize, &mut wanted) };
            any = true;
        }
    }
    // SAFETY: pid 0 is the calling thread; `wanted` holds allowed CPUs only.
    if !any || unsafe { libc::sched_setaffinity(0, size, &wanted) } != 0 {
        return (f(), false);
    }
    let out = f();
    // SAFETY: restores the mask read above, on the same thread.
    let _ = unsafe { libc::sched_setaffinity(0, size, &saved) };
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_for_the_call_and_restores() {
        let before = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (inside, bound) = on_cpus(&[0], || std::thread::available_parallelism().map_or(1, |n| n.get()));
        // CPU 0 may be outside this test's cpuset; then nothing changed.
        if bound {
            assert_eq!(inside, 1);
        }
        assert_eq!(std::thread::available_parallelism().map_or(1, |n| n.get()), before);
        let (_, bound) = on_cpus(&[u32::MAX], || ());
        assert!(!bound);
    }
}
