import Foundation
import Testing

/// `GET /console/` (contract §11): the console's files come out of the binary with a CSP that allows no inline
/// script or style and no framing, revalidated by ETag; the API's answers are never cached.
@Suite(.timeLimit(.minutes(2))) struct ConsoleRouteTests {
    @Test func servesTheConsoleWithItsSecurityHeaders() async throws {
        try await withAPIServer { api in
            let page = try await api.call("GET", "/console/", key: nil)
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.text.contains("data-testid=\"signin-key\""))
            let csp = try #require(page.header("Content-Security-Policy"))
            #expect(csp.contains("frame-ancestors 'none'"))
            #expect(csp.contains("script-src 'self'"))
            #expect(!csp.contains("unsafe-inline"))
            #expect(page.header("Cache-Control")?.contains("no-store") == false)
            let etag = try #require(page.header("ETag"))

            let again = try await api.call("GET", "/console/", key: nil, headers: [("If-None-Match", etag)])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)

            let script = try await api.call("GET", "/console/app.js", key: nil)
            #expect(script.status == 200)
            #expect(script.header("Content-Type")?.hasPrefix("text/javascript") == true)
            #expect(try await api.call("GET", "/console/nope.js", key: nil).status == 404)
            #expect(try await api.call("GET", "/console", key: nil).header("Location") == "/console/")
            #expect(try await api.call("GET", "/v1/visits", key: api.dispatcher).header("Cache-Control") == "no-store")
        }
    }

    /// Every script of the console.
    static let scripts = [
        "app.js", "api.js", "dom.js", "board.js", "visit.js", "activity.js", "ledger.js", "ops.js", "transitions.js",
        "technician.js", "exceptions.js", "timeline.js",
    ]

    /// The whole console (page, style and every script) weighs under 150 KB, uncompressed.
    @Test func thePageWeighsUnder150KB() async throws {
        try await withAPIServer { api in
            var bytes = 0
            for file in ["index.html", "console.css"] + Self.scripts {
                let answer = try await api.call("GET", "/console/\(file)", key: nil)
                #expect(answer.status == 200, "\(file)")
                bytes += answer.text.utf8.count
            }
            #expect(bytes < 150_000, "the console weighs \(bytes) bytes")
        }
    }

    /// No page of the console puts HTML together from strings: user text goes in through textContent.
    @Test func theScriptsNeverWriteHTML() async throws {
        try await withAPIServer { api in
            for file in Self.scripts {
                let script = try await api.call("GET", "/console/\(file)", key: nil)
                #expect(script.status == 200, "\(file)")
                for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "localStorage", "eval("] {
                    #expect(!script.text.contains(sink), "\(file) uses \(sink)")
                }
            }
        }
    }
}
