import Foundation

/// What the demo needs from Debian, checked before anything starts, so a missing package is named with
/// the exact command that installs it instead of failing halfway.
enum DemoPrerequisites {
    /// A binary and the Debian package that provides it.
    struct Requirement {
        var path: String
        var package: String
    }

    static let postgresBin = "/usr/lib/postgresql/15/bin"

    static let requirements: [Requirement] = [
        Requirement(path: postgresBin + "/initdb", package: "postgresql-15"),
        Requirement(path: postgresBin + "/pg_ctl", package: "postgresql-15"),
        Requirement(path: postgresBin + "/psql", package: "postgresql-client-15"),
        Requirement(path: "/usr/bin/openssl", package: "openssl"),
    ]

    /// Throws a `CommandFailure` naming every missing package and the install command.
    static func check(fileManager: FileManager = .default) throws {
        var missing: [String] = []
        for requirement in requirements where !fileManager.isExecutableFile(atPath: requirement.path) {
            if !missing.contains(requirement.package) { missing.append(requirement.package) }
        }
        guard missing.isEmpty else {
            let sudo = getuid() == 0 ? "" : "sudo "
            throw CommandFailure(
                "missing Debian packages: \(missing.joined(separator: " ")); install them with: "
                    + "\(sudo)apt-get install -y \(missing.joined(separator: " "))")
        }
    }
}
