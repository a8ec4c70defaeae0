extension JSONObjectReader {
    /// `technician`: `{"id","name","avatarSymbol","vanDescription"}`, all required; `id` an id (`IdGrammar`).
    func technician(_ key: String) throws(VisitInputError) -> Technician {
        let object = try VisitInputError.reading { () throws(FieldProblem) in
            let object = try self.object(key)
            try object.rejectUnknown(allowed: ["id", "name", "avatarSymbol", "vanDescription"])
            return object
        }
        let id = try object.id("id")
        return try VisitInputError.reading { () throws(FieldProblem) in
            Technician(
                id: id,
                name: try object.text("name", maxBytes: VisitInputLimits.nameBytes),
                avatarSymbol: try object.text("avatarSymbol", maxBytes: VisitInputLimits.nameBytes),
                vanDescription: try object.text("vanDescription", maxBytes: VisitInputLimits.textBytes))
        }
    }

    /// `arrivalWindow`: `{"start","end"}` whole epoch seconds with `end >= start`.
    func optionalArrivalWindow(_ key: String) throws(FieldProblem) -> ArrivalWindow? {
        guard let object = try optionalObject(key) else { return nil }
        try object.rejectUnknown(allowed: ["start", "end"])
        let start = try object.epoch("start")
        let end = try object.epoch("end")
        guard end >= start else { throw object.invalid("end", "before \(object.fieldPath("start"))") }
        return ArrivalWindow(start: start, end: end)
    }

    func epoch(_ key: String) throws(FieldProblem) -> Int {
        let value = try integer(key)
        guard (0...VisitInputLimits.maximumEpoch).contains(value) else {
            throw invalid(key, "expected epoch seconds between 0 and \(VisitInputLimits.maximumEpoch)")
        }
        return value
    }

    /// `kilometresAway`: a number in `0...maximumKilometres`.
    func optionalKilometres(_ key: String) throws(FieldProblem) -> Double? {
        guard let kilometres = try optionalDouble(key) else { return nil }
        guard kilometres >= 0 else { throw invalid(key, "must not be negative") }
        guard kilometres <= VisitInputLimits.maximumKilometres else {
            throw invalid(key, "must be at most \(Int(VisitInputLimits.maximumKilometres))")
        }
        return kilometres
    }

    func arrivalUpdate() throws(FieldProblem) -> ArrivalUpdate {
        ArrivalUpdate(
            kilometresAway: try optionalKilometres("kilometresAway"),
            arrivalWindow: try optionalArrivalWindow("arrivalWindow"))
    }
}
