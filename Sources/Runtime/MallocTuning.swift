import CMalloc

/// glibc's allocator settings for a long-running server process.
///
/// By default glibc keeps up to eight arenas per core and raises its mmap threshold each time a large block
/// is freed, after which blocks of that size come from the arenas and their memory stays with the process.
/// Answers of several megabytes (a fleet's day by technician, tens of thousands of visits) then left the API
/// process at 175–209 MB after a busy hour's first minutes; with at most one arena per core (two at least) and
/// large blocks always mapped and unmapped, 106–111 MB, at no measured cost in CPU (`Docs/performance.md`).
/// An operator's own malloc tuning in the environment wins: then nothing is set.
public enum MallocTuning {
    /// The block size from which glibc maps memory of its own, returned to the system when freed.
    public static let mmapThreshold = 256 * 1024

    /// The arenas and threshold to set, or nil when the environment tunes malloc itself (`GLIBC_TUNABLES`,
    /// `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`).
    public static func settings(environment: [String: String], cores: Int) -> (arenas: Int, mmapThreshold: Int)? {
        let operators = ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"]
        guard !operators.contains(where: { environment[$0] != nil }) else { return nil }
        return (max(2, cores), mmapThreshold)
    }

    /// Applies `settings`; true when glibc took them (false when nothing was set).
    @discardableResult
    public static func apply(environment: [String: String], cores: Int) -> Bool {
        guard let settings = settings(environment: environment, cores: cores) else { return false }
        let arenas = mallopt(M_ARENA_MAX, Int32(settings.arenas))
        let threshold = mallopt(M_MMAP_THRESHOLD, Int32(settings.mmapThreshold))
        return arenas == 1 && threshold == 1
    }
}
