import Foundation
import HTTPServer

/// The tracking page (`GET /track/<token>`): the visit's Live Activity card for a customer without the app,
/// drawn by `track.js` from `/track/<token>/state`. Its script and style are served at `/tracking/{file}`; the
/// page has the console's Content-Security-Policy and sends no referrer, so the token in its address goes
/// nowhere but to its own state call.
public enum TrackingPage {
    /// The page's files, by name under `/tracking/`.
    static let assets: [String: WebConsole.Asset] = {
        let all = [
            WebConsole.Asset("track.js", "text/javascript; charset=utf-8", PackageResources.track_js),
            WebConsole.Asset("track.css", "text/css; charset=utf-8", PackageResources.track_css),
        ]
        return Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
    }()

    /// The page of a link that answers.
    static let page = WebConsole.Asset("track.html", "text/html; charset=utf-8", PackageResources.track_html)
    /// The page of a link that does not: unknown, revoked or lapsed alike.
    static let gone = WebConsole.Asset("track-gone.html", "text/html; charset=utf-8", PackageResources.track_gone_html)

    /// Adds `GET /tracking/{file}` (the page's script and style).
    public static func addRoutes(to router: inout Router) {
        router.add(.get, "/tracking/{file}") { request, params in
            WebConsole.answer(params["file"].flatMap { assets[$0] }, request)
        }
    }

    /// The page for a link: 200 with the page when it answers, else 404 with one saying the link has expired
    /// or is not valid. Never cached: whether a link answers changes.
    public static func answer(found: Bool) -> HTTPResponse {
        let asset = found ? page : gone
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: asset.contentType)
        headers.add(name: "Cache-Control", value: "no-store")
        WebConsole.addSecurityHeaders(to: &headers)
        return HTTPResponse(status: found ? 200 : 404, headers: headers, body: Data(asset.bytes))
    }
}
