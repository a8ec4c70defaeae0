import Foundation

extension APNsConfiguration {
    /// What an operator should hear at start about production pushes, one line each: a production base URL
    /// (push or channel management) that is not Apple's, or an extra trusted CA (`LIVEVISITS_APNS_CA_FILE`),
    /// which every connection, production's included, then accepts. Both are right for a simulator and
    /// wrong in production, where they would send customers' pushes (and the provider token) to another
    /// host or let one pose as Apple's; nothing is refused, since a staging fleet may want either.
    public var productionWarnings: [String] {
        var warnings: [String] = []
        let production: [(String, String)] = [
            ("push", baseURL(for: .production)), ("channel-management", channelsBaseURL(for: .production)),
        ]
        for (kind, url) in production where !APNsConfiguration.isApple(url) {
            let host = URLComponents(string: url)?.host ?? url
            warnings.append(
                "production \(kind) requests go to \(host), not to Apple (LIVEVISITS_APNS_URL or LIVEVISITS_APNS_*PRODUCTION_URL)"
            )
        }
        if let trustedCertificates {
            warnings.append(
                "LIVEVISITS_APNS_CA_FILE adds \(trustedCertificates.count) trusted CA certificate(s) for every APNs connection, production's included"
            )
        }
        return warnings
    }

    /// Whether `url`'s host is one of Apple's push hosts (`*.push.apple.com`).
    static func isApple(_ url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return false }
        return host.hasSuffix(".push.apple.com")
    }
}
