#if canImport(CMalloc)
import CMalloc
import Glibc
#endif

/// glibc's allocator settings for the `spout` process (Linux only; nothing elsewhere).
///
/// A stream allocates a 32 KiB buffer for each chunk on its producer's thread and frees it on
/// an event loop once written. With glibc's defaults the arena hands its free top back to the
/// kernel as soon as more than 128 KiB is free (a few chunks written at once), so the next
/// chunks land on fresh pages: one `/salaries` stream took 27,888 page faults, about 3 % of
/// its CPU in the kernel (zeroing, memory-cgroup charges). Keeping up to 2 MiB free at each
/// arena's top ends them (0 faults); the allocation threshold for `mmap` is fixed at 1 MiB,
/// half of it, as glibc sets the pair itself when it adjusts them.
///
/// Contract: applied once, first thing in `main`; left alone when the environment sets
/// glibc's malloc tunables (`GLIBC_TUNABLES`, `MALLOC_TRIM_THRESHOLD_`,
/// `MALLOC_MMAP_THRESHOLD_`): an operator's explicit choice wins.
enum MallocTuning {
    static let trimThreshold: Int32 = 2 << 20
    static let mmapThreshold: Int32 = 1 << 20

    static func apply() {
        #if canImport(CMalloc)
        for name in ["GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"] where getenv(name) != nil {
            return
        }
        _ = mallopt(M_TRIM_THRESHOLD, Self.trimThreshold)
        _ = mallopt(M_MMAP_THRESHOLD, Self.mmapThreshold)
        #endif
    }
}
