import Foundation
import HTTPServer

/// The web console of contract §11: plain HTML, CSS and JavaScript modules (`Assets/`, embedded in the binary
/// by SwiftPM's `embedInCode`, so `serve` needs no files beside it), served at `/console/`. It uses only the
/// public API; the key stays in the tab's session storage.
public enum WebConsole {
    /// One file of the console.
    struct Asset: Sendable {
        let name: String
        let contentType: String
        let bytes: [UInt8]
        /// A strong validator: the FNV-1a hash of the bytes.
        let etag: String

        init(_ name: String, _ contentType: String, _ bytes: [UInt8]) {
            self.name = name
            self.contentType = contentType
            self.bytes = bytes
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            etag = "\"\(String(hash, radix: 16))\""
        }
    }

    /// Every file, by its name under `/console/` (`index.html` is also `/console/`). A new file in `Assets/` gets
    /// a row here (SwiftPM names its bytes after the file).
    static let assets: [String: Asset] = {
        let all = [
            Asset("index.html", "text/html; charset=utf-8", PackageResources.index_html),
            Asset("console.css", "text/css; charset=utf-8", PackageResources.console_css),
            Asset("app.js", "text/javascript; charset=utf-8", PackageResources.app_js),
            Asset("api.js", "text/javascript; charset=utf-8", PackageResources.api_js),
            Asset("dom.js", "text/javascript; charset=utf-8", PackageResources.dom_js),
            Asset("board.js", "text/javascript; charset=utf-8", PackageResources.board_js),
            Asset("visit.js", "text/javascript; charset=utf-8", PackageResources.visit_js),
            Asset("activity.js", "text/javascript; charset=utf-8", PackageResources.activity_js),
            Asset("ledger.js", "text/javascript; charset=utf-8", PackageResources.ledger_js),
            Asset("ops.js", "text/javascript; charset=utf-8", PackageResources.ops_js),
            Asset("transitions.js", "text/javascript; charset=utf-8", PackageResources.transitions_js),
            Asset("technician.js", "text/javascript; charset=utf-8", PackageResources.technician_js),
            Asset("exceptions.js", "text/javascript; charset=utf-8", PackageResources.exceptions_js),
            Asset("timeline.js", "text/javascript; charset=utf-8", PackageResources.timeline_js),
        ]
        return Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
    }()

    /// The console's pages may run only their own scripts and styles (no inline ones), talk only to this
    /// origin, and never be framed.
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Adds `GET /console`, `/console/` and `/console/{file}`.
    public static func addRoutes(to router: inout Router) {
        router.add(.get, "/console") { _, _ in
            var headers = HTTPHeaders()
            headers.add(name: "Location", value: "/console/")
            return HTTPResponse(status: 308, headers: headers)
        }
        router.add(.get, "/console/") { request, _ in answer(assets["index.html"], request) }
        router.add(.get, "/console/{file}") { request, params in answer(params["file"].flatMap { assets[$0] }, request) }
    }

    /// The headers of every page and file of the console and the tracking page: the Content-Security-Policy,
    /// no sniffing, no framing, no referrer.
    public static func addSecurityHeaders(to headers: inout HTTPHeaders) {
        headers.add(name: "Content-Security-Policy", value: contentSecurityPolicy)
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
    }

    /// An asset, revalidated by its ETag (cached, and a 304 while unchanged), with the console's headers.
    static func answer(_ asset: Asset?, _ request: HTTPRequest) -> HTTPResponse {
        guard let asset else { return .error(status: 404, code: "not_found", message: "no such console file") }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: asset.contentType)
        headers.add(name: "Cache-Control", value: "public, no-cache")
        headers.add(name: "ETag", value: asset.etag)
        addSecurityHeaders(to: &headers)
        if let tags = request.headers["If-None-Match"],
            tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == asset.etag })
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: headers, body: Data(asset.bytes))
    }
}
