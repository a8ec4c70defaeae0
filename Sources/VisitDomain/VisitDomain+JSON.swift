// The domain reads and writes JSON with the project's one JSON target; its documents (`JSONValue`,
// `JSONObjectReader`, `FieldProblem`) are part of the domain's API, so importers of VisitDomain see them.
@_exported import JSON
