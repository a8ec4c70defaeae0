import CMalloc

/// glibc's allocator setting for a long-running server process.
///
/// By default glibc raises its mmap threshold each time a large block is freed, after which blocks of that size
/// come from its arenas and their memory stays with the process. Answers of several megabytes (a fleet's day
/// by technician, tens of thousands of visits) then left the API process at 175–209 MB after a busy hour's
/// first minutes; with blocks from 256 KiB on always mapped and unmapped, 116 MB (`Docs/performance.md`).
/// Capping the arenas as well saved 10 MB more but cost the pipeline about 15 % of its events a second, so
/// they keep glibc's default. An operator's own malloc tuning in the environment wins: then nothing is set.
public enum MallocTuning {
    /// The block size from which glibc maps memory of its own, returned to the system when freed.
    public static let mmapThreshold = 256 * 1024

    /// The threshold to set, or nil when the environment tunes malloc itself (`GLIBC_TUNABLES`,
    /// `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`).
    public static func threshold(environment: [String: String]) -> Int? {
        let operators = ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"]
        guard !operators.contains(where: { environment[$0] != nil }) else { return nil }
        return mmapThreshold
    }

    /// Applies `threshold`; true when glibc took it (false when nothing was set).
    @discardableResult
    public static func apply(environment: [String: String]) -> Bool {
        guard let threshold = threshold(environment: environment) else { return false }
        return mallopt(M_MMAP_THRESHOLD, Int32(threshold)) == 1
    }
}
