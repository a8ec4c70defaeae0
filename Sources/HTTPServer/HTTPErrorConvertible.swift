/// An error that knows how it is answered over HTTP. `Router` renders a thrown error that conforms
/// as `{"error":{"code": httpCode, "message": httpMessage}}` (plus `"field": httpField` when it names one)
/// with `httpStatus`; anything else is logged
/// with the request id and answered 500 `internal_error`.
public protocol HTTPErrorConvertible: Error {
    /// The status to answer, for example 409.
    var httpStatus: Int { get }
    /// The stable, machine-readable code, for example `illegal_transition`.
    var httpCode: String { get }
    /// A message for humans. It must not contain secrets (keys, tokens).
    var httpMessage: String { get }
    /// The request body's field at fault (`technician.id`), when the refusal names one.
    var httpField: String? { get }
}

extension HTTPErrorConvertible {
    public var httpField: String? { nil }
}
