import Foundation
import Synchronization

/// The project's executables as the tests run them: built from the current sources once per test process
/// (the first caller builds, the others wait for that build), never an old binary left in `.build`.
public enum BuiltProduct {
    /// The builds started, by package directory and product.
    private static let builds = Mutex<[String: Task<String, any Error>]>([:])

    /// Builds `product` (`swift build --product`) of the package in `package`, a directory relative to the
    /// repository root (the product's own package by default; `Benchmarks` for the benchmarks), once per
    /// process and returns the executable's path; a failed build throws with the compiler's output.
    public static func path(_ product: String, package: String = ".") async throws -> String {
        let key = "\(package)/\(product)"
        let build = builds.withLock { builds in
            if let running = builds[key] { return running }
            let task = Task { try await buildNow(product, package: package) }
            builds[key] = task
            return task
        }
        return try await build.value
    }

    /// `livevisits`, built.
    public static func livevisits() async throws -> String { try await path("livevisits") }

    private static func buildNow(_ product: String, package: String) async throws -> String {
        let packagePath = TestDatabase.repositoryRoot.appendingPathComponent(package).standardizedFileURL.path
        // `swift test` holds the lock on the package's .build while the tests run; this build only adds the
        // product's own objects and links it, which the running test binary does not read.
        let common = ["swift", "build", "--package-path", packagePath, "--product", product, "--ignore-lock"]
        let built = try await Subprocess.run("/usr/bin/env", common)
        guard built.status == 0 else {
            throw BuildFailed(product: product, output: (built.stdout + built.stderr).suffix(4000).description)
        }
        let binPath = try await Subprocess.run("/usr/bin/env", common + ["--show-bin-path"])
        let directory = binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard binPath.status == 0, !directory.isEmpty else {
            throw BuildFailed(product: product, output: "swift build --show-bin-path: \(binPath.stderr)")
        }
        let path = URL(fileURLWithPath: directory).appendingPathComponent(product).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BuildFailed(product: product, output: "no executable at \(path)")
        }
        return path
    }

    public struct BuildFailed: Error, CustomStringConvertible {
        public let product: String
        public let output: String
        public var description: String { "swift build --product \(product) failed:\n\(output)" }
    }
}
