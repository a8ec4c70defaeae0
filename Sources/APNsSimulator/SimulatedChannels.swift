import Foundation

/// The broadcast channels the simulated APNs holds for the app: their ids in creation order and the
/// limit on how many there may be. Kept under `SimulatorCore`'s lock.
struct SimulatedChannels: Sendable {
    /// Apple's limit per app and environment.
    static let appleLimit = 10_000

    private(set) var ids: [String] = []
    private var storagePolicy: [String: Int] = [:]
    var limit = SimulatedChannels.appleLimit

    func contains(_ id: String) -> Bool { storagePolicy[id] != nil }

    func policy(of id: String) -> Int? { storagePolicy[id] }

    /// A new channel's id (base64 of 16 random bytes, as Apple's look), or nil at the limit.
    mutating func create(storagePolicy policy: Int) -> String? {
        guard ids.count < limit else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in bytes.indices { bytes[i] = UInt8.random(in: .min ... .max) }
        let id = Data(bytes).base64EncodedString()
        ids.append(id)
        storagePolicy[id] = policy
        return id
    }

    /// Removes a channel; false when it was not there.
    @discardableResult
    mutating func remove(_ id: String) -> Bool {
        guard storagePolicy.removeValue(forKey: id) != nil else { return false }
        ids.removeAll { $0 == id }
        return true
    }
}
