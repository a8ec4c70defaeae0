import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The demo's HTTP client: the calls a dispatcher console, a technician app and a customer's iPhone make
/// against the public API (URLSession, JSON bodies, bearer keys).
struct DemoClient: Sendable {
    var baseURL: String

    /// Sends one request and returns the decoded JSON object (empty for a 204). Any status other than
    /// `expect` is a `CommandFailure` naming the route and the API's error code.
    @discardableResult
    func send(
        _ method: String, _ path: String, key: String, body: [String: Any]? = nil, expect: Int
    ) async throws -> [String: Any] {
        guard let url = URL(string: baseURL + path) else { throw CommandFailure("bad URL \(baseURL + path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
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
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        guard status == expect else {
            let error = object["error"] as? [String: Any]
            let code = error?["code"] as? String ?? "-"
            let message = error?["message"] as? String ?? ""
            throw CommandFailure("\(method) \(path) answered \(status) \(code) \(message) (expected \(expect))")
        }
        return object
    }
}
