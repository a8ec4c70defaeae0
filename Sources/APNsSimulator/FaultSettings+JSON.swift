import JSON

extension FaultSettings {
    /// Reads the JSON `POST /_sim/faults` takes (see the type's example). Unknown fields are refused,
    /// so a misspelt fault is a 400 naming it rather than a fault silently not injected.
    init(json: JSONValue) throws(FieldProblem) {
        let body = try JSONObjectReader(json, path: "")
        try body.rejectUnknown(allowed: [
            "clear", "failNext", "failFraction", "unregister", "latency", "dropConnection", "expireProviderTokens",
            "listener", "channelLimit", "forgetChannels",
        ])
        var listener: SimulatorListener?
        if let text = try body.optionalString("listener") {
            // The two push listeners share one plan: `pushes` names it.
            guard let given = SimulatorListener(rawValue: text), given != .sandboxPushes else {
                throw body.invalid("listener", "expected \"pushes\" or \"channels\"")
            }
            listener = given
        }
        var forget: [String]?
        if let value = body.value("forgetChannels") {
            guard let elements = value.arrayElements else {
                throw body.wrongType("forgetChannels", expected: "an array", got: value)
            }
            forget = []
            for (index, element) in elements.enumerated() {
                guard let id = element.stringValue else {
                    throw body.wrongType("forgetChannels[\(index)]", expected: "a string", got: element)
                }
                forget?.append(id)
            }
        }
        self.init(
            clear: try body.optionalBool("clear"),
            failNext: try body.optionalObject("failNext").map { object throws(FieldProblem) in
                try object.rejectUnknown(allowed: ["count", "status", "reason"])
                return Failure(
                    count: try object.optionalInteger("count"), status: try object.integer("status"),
                    reason: try object.string("reason"))
            },
            failFraction: try body.optionalObject("failFraction").map { object throws(FieldProblem) in
                try object.rejectUnknown(allowed: ["fraction", "status", "reason", "seed"])
                let seed = try object.optionalInteger("seed")
                if let seed, seed < 0 { throw object.invalid("seed", "expected a whole number ≥ 0") }
                return Fraction(
                    fraction: try object.double("fraction"), status: try object.integer("status"),
                    reason: try object.string("reason"), seed: seed.map { UInt64($0) })
            },
            unregister: try Self.unregistrations(body),
            latency: try body.optionalObject("latency").map { object throws(FieldProblem) in
                try object.rejectUnknown(allowed: ["milliseconds", "count"])
                return Latency(milliseconds: try object.integer("milliseconds"), count: try object.optionalInteger("count"))
            },
            dropConnection: try body.optionalObject("dropConnection").map { object throws(FieldProblem) in
                try object.rejectUnknown(allowed: ["afterRequests", "mode"])
                var mode = DropMode.close
                if let text = try object.optionalString("mode") {
                    guard let given = DropMode(rawValue: text) else {
                        throw object.invalid("mode", "expected \"goaway\" or \"close\"")
                    }
                    mode = given
                }
                return Drop(afterRequests: try object.integer("afterRequests"), mode: mode)
            },
            expireProviderTokens: try body.optionalBool("expireProviderTokens"), listener: listener,
            channelLimit: try body.optionalInteger("channelLimit"), forgetChannels: forget)
    }

    private static func unregistrations(_ body: JSONObjectReader) throws(FieldProblem) -> [Unregistration]? {
        guard let value = body.value("unregister") else { return nil }
        guard let elements = value.arrayElements else {
            throw body.wrongType("unregister", expected: "an array", got: value)
        }
        var result: [Unregistration] = []
        for (index, element) in elements.enumerated() {
            let object = try JSONObjectReader(element, path: body.fieldPath("unregister[\(index)]"))
            try object.rejectUnknown(allowed: ["token", "timestamp"])
            result.append(
                Unregistration(
                    token: try object.string("token"),
                    timestamp: try object.optionalInteger("timestamp").map { Int64($0) }))
        }
        return result
    }
}
