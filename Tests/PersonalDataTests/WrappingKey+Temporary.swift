import Foundation
import PersonalData

extension WrappingKey {
    /// A new wrapping key, written to a key file in a fresh temporary folder.
    static func temporary() throws -> WrappingKey {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-pd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try WrappingKey.generate(path: folder.appendingPathComponent("personal-data.key").path)
    }
}
