import Foundation

/// A tool a test needs is not installed: the test fails naming it (and what installs it) instead of
/// passing without having run.
public struct MissingTool: Error, CustomStringConvertible {
    public let tool: String
    public let installedBy: String
    public init(_ tool: String, installedBy: String) {
        self.tool = tool
        self.installedBy = installedBy
    }
    public var description: String { "\(tool) is not installed (scripts/deps installs it: \(installedBy))" }
}

/// Returns `path` when it is an executable file; throws `MissingTool` otherwise.
@discardableResult
public func requireTool(_ path: String, installedBy package: String) throws -> String {
    guard FileManager.default.isExecutableFile(atPath: path) else { throw MissingTool(path, installedBy: package) }
    return path
}
