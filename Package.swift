// swift-tools-version:6.2
import PackageDescription

// One package, Swift 6 language mode, nothing outside the toolchain.
// C libraries come from Debian through system-library targets (see Docs/architecture.md).
let package = Package(
    name: "LiveVisits",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "livevisits", targets: ["livevisits"]),
        // For the benchmarks' package (Benchmarks/) only: the targets the benchmarks import, and TestSupport for
        // their tests. Not an API for anyone outside this repository.
        .library(
            name: "LiveVisitsKit",
            targets: [
                "APIStores", "APNs", "APNsSimulator", "EventStore", "HTTPAPI", "HTTPServer", "JSON", "LiveActivityLedger",
                "Outbox",
                "OutboxAPNs",
                "PersonalData",
                "Postgres", "Retention", "Runtime", "VisitCommands", "VisitDomain", "VisitProjections", "Webhooks",
            ]
        ),
        .library(name: "LiveVisitsTestSupport", targets: ["TestSupport"]),
    ],
    targets: [
        // C libraries (module map + shim each).
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // glibc's malloc.h (the allocator's settings), which Swift's Glibc module leaves out.
        .systemLibrary(name: "CMalloc"),

        // The one JSON reader/writer (order-keeping, byte-exact, numbers apart from booleans). Pure, no I/O.
        .target(name: "JSON"),

        // Process plumbing shared by every service: clock, logger, metrics, service group, base64url, SplitMix64.
        .target(name: "Runtime", dependencies: ["CMalloc", "JSON"]),

        // The pure domain: events, state machine, fold, rules, push plans, aps bodies. No I/O.
        .target(name: "VisitDomain", dependencies: ["JSON"]),

        // Adapters.
        .target(name: "Postgres", dependencies: ["CLibPQ", "Runtime"]),
        .target(name: "EventStore", dependencies: ["JSON", "Postgres", "Runtime"]),
        .target(name: "VisitProjections", dependencies: ["VisitDomain", "EventStore", "Postgres", "Runtime"]),
        // HTTP/2 frames over a non-blocking OpenSSL connection, shared by the APNs client and the simulator.
        .target(name: "HTTP2TLS", dependencies: ["CNGHTTP2", "COpenSSL"]),
        .target(name: "APNs", dependencies: ["CNGHTTP2", "COpenSSL", "HTTP2TLS", "JSON", "Runtime"]),
        // The Live Activity ledger (§13): each activity a customer's device shows, its tokens and the
        // customer's push-to-start and notification tokens; every delivery rule reads it.
        .target(name: "LiveActivityLedger", dependencies: ["Postgres", "Runtime"]),
        .target(name: "Outbox", dependencies: ["LiveActivityLedger", "Postgres", "Runtime"]),
        // Customers' personal data sealed (AES-256-GCM) under per-customer keys, opened on the way out (§10).
        .target(name: "PersonalData", dependencies: ["COpenSSL", "JSON", "Postgres", "Runtime", "Outbox"]),
        // Retention (§10): the prune rules, `livevisits prune` and the workers' hourly pass.
        .target(name: "Retention", dependencies: ["Postgres", "Runtime"]),
        // Webhooks (§14): the rows the database's triggers write, signed and POSTed over libcurl by a sender
        // loop of their own, in order per visit.
        .target(
            name: "Webhooks",
            dependencies: ["CCurl", "COpenSSL", "EventStore", "JSON", "Outbox", "PersonalData", "Postgres", "Runtime"]),
        // The APNs side of the outbox: the sender over the APNs client, the fleet's provider token in PostgreSQL.
        .target(name: "OutboxAPNs", dependencies: ["LiveActivityLedger", "Outbox", "APNs", "PersonalData", "Postgres"]),
        .target(name: "APNsSimulator", dependencies: ["CNGHTTP2", "COpenSSL", "HTTP2TLS", "JSON", "Runtime"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "JSON", "Runtime"]),
        // The API's own tables and their use cases: API keys (minting, hashing, the caller behind a key,
        // revocation) and the first answers kept under Idempotency-Keys with their writes' transactions.
        .target(
            name: "APIStores",
            dependencies: ["COpenSSL", "EventStore", "JSON", "Postgres", "Runtime", "VisitDomain", "VisitProjections"]
        ),
        // The right to be forgotten (§10): one customer's data gone from every table that holds it.
        .target(
            name: "CustomerErasure",
            dependencies: ["APIStores", "EventStore", "JSON", "PersonalData", "Postgres", "Runtime"]
        ),
        // The web console (§11): HTML, CSS and JavaScript modules embedded in the binary, served at /console/.
        .target(name: "WebConsole", dependencies: ["HTTPServer"], resources: [.embedInCode("Assets")]),
        // The write side of a visit: decide, append, read model and push intents in one transaction.
        .target(
            name: "VisitCommands",
            dependencies: [
                "VisitDomain", "EventStore", "VisitProjections", "LiveActivityLedger", "Outbox", "Postgres", "Runtime",
                "PersonalData", "JSON",
            ]
        ),
        .target(
            name: "HTTPAPI",
            dependencies: [
                "HTTPServer", "VisitDomain", "VisitProjections", "VisitCommands", "LiveActivityLedger", "Outbox", "Runtime",
                "APIStores",
                "CustomerErasure", "WebConsole", "PersonalData", "Webhooks",
            ]
        ),

        // The product's executable. It only wires things together.
        .executableTarget(
            name: "livevisits",
            dependencies: [
                "Runtime", "VisitDomain", "Postgres", "EventStore", "VisitProjections", "VisitCommands", "APNs", "Outbox",
                "OutboxAPNs", "LiveActivityLedger",
                "APNsSimulator", "HTTPServer", "HTTPAPI", "APIStores", "JSON", "PersonalData", "Retention",
                "CustomerErasure", "Webhooks",
            ]
        ),

        // Tests mirror the targets. TestSupportCore is what every suite may use without a database (eventually,
        // Gate, Subprocess, withResource); TestSupport adds the project's PostgreSQL and its scratch databases,
        // and re-exports the core.
        .target(name: "TestSupportCore", dependencies: ["Runtime"], path: "Tests/TestSupportCore"),
        .target(name: "TestSupport", dependencies: ["Postgres", "Runtime", "TestSupportCore"], path: "Tests/TestSupport"),
        .target(
            name: "OutboxTestSupport", dependencies: ["LiveActivityLedger", "Outbox", "Postgres", "Runtime", "TestSupport"],
            path: "Tests/OutboxTestSupport"),
        .testTarget(name: "TestSupportCoreTests", dependencies: ["TestSupportCore"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "Runtime", "TestSupportCore"]),
        .testTarget(name: "VisitDomainTests", dependencies: ["VisitDomain", "Runtime"], resources: [.copy("Fixtures")]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "Runtime", "TestSupport"]),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "Postgres", "TestSupport"]),
        // Visits built through the real command path, for the tests of the commands and of the projections.
        .target(
            name: "VisitTestSupport",
            dependencies: ["VisitCommands", "VisitProjections", "VisitDomain", "EventStore", "Outbox", "TestSupport"],
            path: "Tests/VisitTestSupport"
        ),
        .testTarget(
            name: "VisitProjectionsTests",
            dependencies: [
                "VisitProjections", "VisitCommands", "VisitDomain", "EventStore", "Outbox", "VisitTestSupport", "TestSupport",
                "LiveActivityLedger",
            ]
        ),
        .testTarget(
            name: "VisitCommandsTests",
            dependencies: [
                "VisitCommands", "VisitProjections", "VisitDomain", "EventStore", "Postgres", "VisitTestSupport", "TestSupport",
                "Outbox", "LiveActivityLedger",
            ]
        ),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "APNsSimulator", "TestSupportCore"]),
        .testTarget(
            name: "LiveActivityLedgerTests",
            dependencies: ["LiveActivityLedger", "Outbox", "OutboxTestSupport", "Postgres", "Runtime", "TestSupport"]),
        .testTarget(
            name: "OutboxTests",
            dependencies: [
                "LiveActivityLedger", "Outbox", "OutboxAPNs", "APNs", "APNsSimulator", "TestSupport", "OutboxTestSupport",
                "EventStore",
            ]),
        .testTarget(
            name: "RetentionTests",
            dependencies: ["Retention", "Outbox", "EventStore", "Postgres", "Runtime", "TestSupport", "OutboxTestSupport"]),
        .testTarget(name: "APNsSimulatorTests", dependencies: ["APNsSimulator", "JSON", "Runtime", "TestSupportCore"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "JSON", "Runtime", "TestSupportCore"]),
        .testTarget(
            name: "HTTPAPITests",
            dependencies: [
                "HTTPAPI", "HTTPServer", "Outbox", "OutboxAPNs", "APNs", "APNsSimulator", "VisitDomain", "VisitProjections",
                "Postgres", "Runtime",
                "APIStores", "VisitCommands", "TestSupport", "PersonalData", "Retention", "JSON", "EventStore",
                "LiveActivityLedger", "Webhooks",
            ]
        ),
        .testTarget(
            name: "PersonalDataTests",
            dependencies: ["PersonalData", "JSON", "LiveActivityLedger", "Outbox", "Postgres", "TestSupport"]),
        .testTarget(name: "APIStoresTests", dependencies: ["APIStores", "Postgres", "TestSupport"]),
        .testTarget(
            name: "CustomerErasureTests",
            dependencies: [
                "CustomerErasure", "APIStores", "EventStore", "Outbox", "PersonalData", "Postgres", "Runtime", "TestSupport",
                "VisitTestSupport", "LiveActivityLedger",
            ]
        ),
        .testTarget(
            name: "OutboxAPNsTests",
            dependencies: ["OutboxAPNs", "Outbox", "APNs", "PersonalData", "Postgres", "Runtime", "TestSupport"]),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "Runtime"]),
        .testTarget(name: "ScaleTests", dependencies: ["APNsSimulator", "JSON", "Postgres", "Runtime", "TestSupport"]),
        .testTarget(
            name: "WebhooksTests",
            dependencies: [
                "Webhooks", "HTTPServer", "Outbox", "OutboxTestSupport", "PersonalData", "EventStore", "Postgres", "Runtime",
                "JSON", "TestSupport", "Retention", "LiveActivityLedger",
            ]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "TestSupportCore"]),
    ],
    swiftLanguageModes: [.v6]
)

// Warnings are errors in the product's own code (its library and executable targets; not the tests, not the
// C modules): a warning there is a defect to fix, not noise to scroll past.
for target in package.targets where target.type == .regular || target.type == .executable {
    guard !(target.path ?? "").hasPrefix("Tests/") else { continue }
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
