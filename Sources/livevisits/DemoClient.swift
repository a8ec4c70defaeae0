import Foundation
import JSON

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The demo's HTTP client: the calls a dispatcher console, a technician app and a customer's iPhone make
/// against the public API (URLSession, JSON bodies written and read by the one JSON type, bearer keys).
struct DemoClient: Sendable {
    var baseURL: String

    /// Sends one request and returns the answer's JSON (`null` for a 204). Any status other than
    /// `expect` is a `CommandFailure` naming the route and the API's error code.
    @discardableResult
    func send(
        _ method: String, _ path: String, key: String, body: JSONValue? = nil, expect: Int
    ) async throws -> JSONValue {
        guard let url = URL(string: baseURL + path) else { throw CommandFailure("bad URL \(baseURL + path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = Data(body.serialized())
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw CommandFailure("\(method) \(path): \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let answer = (try? JSONValue.parse(data)) ?? .null
        guard status == expect else {
            let code = answer["error"]?["code"]?.stringValue ?? "-"
            let message = answer["error"]?["message"]?.stringValue ?? ""
            throw CommandFailure("\(method) \(path) answered \(status) \(code) \(message) (expected \(expect))")
        }
        return answer
    }
}
