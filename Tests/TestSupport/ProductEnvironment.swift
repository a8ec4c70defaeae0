import Foundation

/// The environment a `livevisits` process started by a test runs with: this process's, plus the database,
/// the project's migrations and projections, an APNs endpoint (URLs, CA file) with the signing key and the
/// ids the tests' simulators trust, and errors-only logging.
public func productEnvironment(
    databaseURL: String, apnsURL: String, channelsURL: String, caFile: String, keyFile: String, bundleID: String
) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["LIVEVISITS_DATABASE_URL"] = databaseURL
    environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
    environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
    environment["LIVEVISITS_APNS_URL"] = apnsURL
    environment["LIVEVISITS_APNS_CHANNELS_URL"] = channelsURL
    environment["LIVEVISITS_APNS_CA_FILE"] = caFile
    environment["LIVEVISITS_APNS_KEY_FILE"] = keyFile
    environment["LIVEVISITS_APNS_KEY_ID"] = "KEY1234567"
    environment["LIVEVISITS_APNS_TEAM_ID"] = "TEAM123456"
    environment["LIVEVISITS_APNS_BUNDLE_ID"] = bundleID
    environment["LIVEVISITS_LOG_LEVEL"] = "error"
    // Tests drive hundreds of requests a second with one key: the rate limit has tests of its own.
    environment["LIVEVISITS_RATE_LIMIT"] = "1000000"
    return environment
}
