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

    /// The page of a link that does not answer: 404, saying the link has expired or is not valid (in no
    /// visit's language: there is no visit to take it from). Never cached: whether a link answers changes.
    public static func notFound() -> HTTPResponse { answer(status: 404, gone.bytes, contentType: gone.contentType) }

    /// The page of a link that answers, in its visit's language: `<html lang>` (and `dir`) say which, and the
    /// labels the script draws with travel in the page as a JSON data block (`#labels`; data, not script, so
    /// the Content-Security-Policy stays the console's).
    ///
    /// - Parameters:
    ///   - language: the visit's language tag (`LanguageTag.text`); nil: English.
    ///   - rightToLeft: whether the language is written right to left.
    ///   - labels: the labels' JSON (`TrackingPageLabels.json`, serialized).
    public static func found(language: String?, rightToLeft: Bool, labels: String) -> HTTPResponse {
        // The tag's characters are letters, digits and hyphens (`LanguageTag`): safe in an attribute. A `<` in
        // a label would end the data block early; `\u003c` is the same string to the JSON reader.
        let data = labels.replacingOccurrences(of: "<", with: "\\u003c")
        var html = String(decoding: page.bytes, as: UTF8.self)
        html = html.replacingOccurrences(
            of: "<html lang=\"en\">", with: "<html lang=\"\(language ?? "en")\" dir=\"\(rightToLeft ? "rtl" : "ltr")\">")
        html = html.replacingOccurrences(
            of: "</head>", with: "<script type=\"application/json\" id=\"labels\">\(data)</script>\n</head>")
        return answer(status: 200, Array(html.utf8), contentType: page.contentType)
    }

    private static func answer(status: Int, _ bytes: [UInt8], contentType: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Cache-Control", value: "no-store")
        WebConsole.addSecurityHeaders(to: &headers)
        return HTTPResponse(status: status, headers: headers, body: Data(bytes))
    }
}
