#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a mutex: the project's one lock, used as `Synchronization.Mutex` is (`withLock`).
///
/// Why not `Mutex`: on Linux its contended path spins for up to a thousand `pause`s (tens of microseconds)
/// before it waits on a priority-inheritance futex. On two cores, with more runnable threads than cores, the
/// holder is often not running while the others spin (measured in `Docs/performance-journal.md`). This one
/// is glibc's default mutex: a contended `withLock` waits in the kernel at once and costs nothing while it
/// waits.
public final class Lock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only between `pthread_mutex_lock` and `_unlock`.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    public init(_ initial: Value) {
        mutex = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` on the value with the lock held; nothing else sees the value meanwhile.
    @inlinable
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
