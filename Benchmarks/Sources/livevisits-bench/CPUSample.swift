import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// CPU seconds used so far by the processes a benchmark cares about, read from `/proc` and `getrusage`:
/// one process by pid, this process, its reaped children (wrk, once it has exited), and every PostgreSQL
/// process on the machine. The difference of two samples over a run, divided by the operations of the run,
/// is the CPU each operation cost each party — a figure that holds still far better than a rate on a
/// shared 2-core machine.
struct CPUSample {
    var process: Double
    /// Context switches of the process's threads so far (voluntary and not).
    var switches: Double
    var this: Double
    var children: Double
    var postgres: Double

    static func take(process pid: Int32) -> CPUSample {
        CPUSample(
            process: seconds(pid: pid), switches: contextSwitches(pid: pid), this: rusage(RUSAGE_SELF.rawValue),
            children: rusage(RUSAGE_CHILDREN.rawValue), postgres: postgresSeconds())
    }

    /// CPU seconds of this process's reaped children (pgbench, once it has exited).
    static func children() -> Double { rusage(RUSAGE_CHILDREN.rawValue) }

    /// CPU seconds (user + system) this process has used so far.
    static func thisProcess() -> Double { rusage(RUSAGE_SELF.rawValue) }

    static func - (a: CPUSample, b: CPUSample) -> CPUSample {
        CPUSample(
            process: a.process - b.process, switches: a.switches - b.switches, this: a.this - b.this,
            children: a.children - b.children, postgres: a.postgres - b.postgres)
    }

    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// utime + stime of one process (fields 14 and 15 of /proc/PID/stat, after the parenthesised name).
    static func seconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// The context switches of every thread of a process (`/proc/PID/task/*/status`).
    static func contextSwitches(pid: Int32) -> Double {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return 0 }
        var total = 0.0
        for thread in threads {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8) else {
                continue
            }
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                total += line.split(separator: "\t").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            }
        }
        return total
    }

    private static func rusage(_ who: __rusage_who_t) -> Double {
        var usage = Glibc.rusage()
        getrusage(who, &usage)
        func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return s(usage.ru_utime) + s(usage.ru_stime)
    }

    /// CPU seconds of one PostgreSQL cluster only (not the other clusters on a shared machine): its
    /// postmaster, its live children and the children it has reaped (backends that have exited).
    /// `postmaster` is the parent of any of its backends (`postmaster(ofBackend:)`).
    static func clusterSeconds(postmaster: Int32) -> Double {
        var total = stat(pid: postmaster).map { $0.cpu + $0.reapedChildren } ?? 0
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return total }
        for entry in entries {
            guard let pid = Int32(entry), let s = stat(pid: pid), s.parent == postmaster else { continue }
            total += s.cpu
        }
        return total
    }

    /// The postmaster of a backend (`SELECT pg_backend_pid()`), on this machine.
    static func postmaster(ofBackend pid: Int32) -> Int32? { stat(pid: pid)?.parent }

    /// Fields of /proc/PID/stat after the parenthesised name: state, ppid (1), …, utime (11), stime (12),
    /// cutime (13), cstime (14).
    private static func stat(pid: Int32) -> (parent: Int32, cpu: Double, reapedChildren: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let f = text[text.index(after: close)...].split(separator: " ")
        guard f.count > 14, let parent = Int32(f[1]), let u = Double(f[11]), let s = Double(f[12]), let cu = Double(f[13]),
            let cs = Double(f[14])
        else { return nil }
        return (parent, (u + s) / ticksPerSecond, (cu + cs) / ticksPerSecond)
    }

    /// Peak resident memory of a process in MB (VmHWM), 0 when it is gone.
    static func peakMegabytes(pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kb = line.split(separator: " ").compactMap({ Double($0) }).first
        else { return 0 }
        return kb / 1024
    }

    /// Every process named `postgres` (the cluster's backends and background processes).
    private static func postgresSeconds() -> Double {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry),
                let name = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                name.hasPrefix("postgres")
            else { continue }
            total += seconds(pid: pid)
        }
        return total
    }
}
