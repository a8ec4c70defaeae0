/// What a connection should do with a complete request.
struct ResponsePlan: Sendable {
    enum Action: Sendable, Equatable {
        /// Answer with status, extra headers and body.
        case answer(status: Int, headers: [(String, String)], body: [UInt8])
        /// Drop the connection without answering.
        case drop(FaultSettings.DropMode)

        static func == (a: Action, b: Action) -> Bool {
            switch (a, b) {
            case (.answer(let s1, let h1, let b1), .answer(let s2, let h2, let b2)):
                s1 == s2 && b1 == b2 && h1.count == h2.count && zip(h1, h2).allSatisfy { $0 == $1 }
            case (.drop(let m1), .drop(let m2)): m1 == m2
            default: false
            }
        }
    }
    var action: Action
    /// Seconds to wait before acting.
    var delay: Double
    /// The record to store once the answer is written (or abandoned); nil for control requests.
    var record: SimulatedDelivery?
}
