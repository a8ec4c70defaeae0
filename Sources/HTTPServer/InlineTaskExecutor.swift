#if canImport(Glibc)
    import Glibc
#endif

/// The executor preference of handler tasks: a job runs on the thread that enqueues it, at once.
///
/// Without it, every request costs two hops through Swift's global pool — libmicrohttpd's thread starts
/// the handler's task there, and the thread that answers the handler's wait (a database connection's
/// thread, the group-commit runner) resumes it there again — each hop a queue push and often a futex
/// wake-up on a 2-core machine. With it, the handler runs on libmicrohttpd's thread until its first
/// real wait, and after that on whichever thread ends the wait, which then hands the answer back to
/// libmicrohttpd itself. This is the event-loop preference swift-nio gives its channel handlers, for an
/// event loop (libmicrohttpd's) that cannot run Swift jobs.
///
/// It is safe because nothing in this code base resumes a continuation while holding a lock (the house
/// rule: act on what a lock returned after releasing it), so a job run in place never runs under one.
/// A job enqueued while the same thread is already running one of this executor's jobs (a handler that
/// resumes another handler's wait) is queued and run when the current one returns, so stacks stay flat.
/// A handler task is cancelled inside `deferringJobs`, so that what the cancellation resumes runs after it.
/// Handlers must not block their thread (the rule for every async function anyway): blocking C calls
/// belong on threads their adapters own, as the database pool does.
public final class InlineTaskExecutor: TaskExecutor {
    /// One executor serves every server: it has no state beyond the per-thread trampoline.
    public static let shared = InlineTaskExecutor()

    private init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if let trampoline = Trampoline.current {
            trampoline.jobs.append(job)
            return
        }
        withTrampoline { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }

    /// Runs `body` with the jobs it enqueues on this executor held back until it has returned (then they
    /// run here, in order). For code that may resume a handler from inside the Swift runtime: above all
    /// `Task.cancel()`, whose cancellation handlers (a withdrawn wait, `Task.sleep`) run under the task's
    /// status-record lock — a handler resumed in place there would run, and free its own records, under it.
    public static func deferringJobs(_ body: () -> Void) {
        if Trampoline.current != nil {
            body()  // an outer trampoline of this thread runs the jobs once its own job returns
            return
        }
        shared.withTrampoline(body)
    }

    /// Runs `body` with a fresh trampoline on this thread, then every job queued on it meanwhile (and by them).
    private func withTrampoline(_ body: () -> Void) {
        let trampoline = Trampoline()
        Trampoline.current = trampoline
        defer { Trampoline.current = nil }
        body()
        var next = 0
        while next < trampoline.jobs.count {
            let job = trampoline.jobs[next]
            next += 1
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// The jobs enqueued on one thread while it runs one of this executor's jobs.
    private final class Trampoline {
        var jobs: [UnownedJob] = []

        /// The running thread's trampoline: a pthread key, since Swift has no thread-local storage.
        static var current: Trampoline? {
            get {
                guard let raw = pthread_getspecific(key) else { return nil }
                return Unmanaged<Trampoline>.fromOpaque(raw).takeUnretainedValue()
            }
            set {
                if let old = pthread_getspecific(key) { Unmanaged<Trampoline>.fromOpaque(old).release() }
                pthread_setspecific(key, newValue.map { Unmanaged.passRetained($0).toOpaque() })
            }
        }

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            pthread_key_create(&key, nil)
            return key
        }()
    }
}
