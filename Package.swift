// swift-tools-version:6.0
import PackageDescription

// One package, Swift 6 language mode, nothing outside the toolchain.
// C libraries come from Debian through system-library targets (see Docs/architecture.md).
let package = Package(
    name: "LiveVisits",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "livevisits", targets: ["livevisits"]),
        .executable(name: "livevisits-bench", targets: ["livevisits-bench"]),
    ],
    targets: [
        // C libraries (module map + shim each).
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),

        // The one JSON reader/writer (order-keeping, byte-exact, numbers apart from booleans). Pure, no I/O.
        .target(name: "JSON"),

        // Process plumbing shared by every service: clock, logger, metrics, service group, base64url, SplitMix64.
        .target(name: "Runtime", dependencies: ["JSON"]),

        // The pure domain: events, state machine, fold, rules, push plans, aps bodies. No I/O.
        .target(name: "VisitDomain", dependencies: ["JSON"]),

        // Adapters.
        .target(name: "Postgres", dependencies: ["CLibPQ", "Runtime"]),
        .target(name: "EventStore", dependencies: ["JSON", "Postgres", "Runtime"]),
        .target(name: "VisitProjections", dependencies: ["VisitDomain", "EventStore", "Postgres", "Runtime"]),
        // HTTP/2 frames over a non-blocking OpenSSL connection, shared by the APNs client and the simulator.
        .target(name: "HTTP2TLS", dependencies: ["CNGHTTP2", "COpenSSL"]),
        .target(name: "APNs", dependencies: ["CNGHTTP2", "COpenSSL", "HTTP2TLS", "JSON", "Runtime"]),
        .target(name: "Outbox", dependencies: ["Postgres", "Runtime"]),
        // Customers' personal data sealed (AES-256-GCM) under per-customer keys, opened on the way out (§10).
        .target(name: "PersonalData", dependencies: ["COpenSSL", "JSON", "Postgres", "Runtime", "Outbox"]),
        // Retention (§10): the prune rules, `livevisits prune` and the workers' hourly pass.
        .target(name: "Retention", dependencies: ["Postgres", "Runtime"]),
        // The APNs side of the outbox: the sender over the APNs client, the fleet's provider token in PostgreSQL.
        .target(name: "OutboxAPNs", dependencies: ["Outbox", "APNs", "Postgres"]),
        .target(name: "APNsSimulator", dependencies: ["CNGHTTP2", "COpenSSL", "HTTP2TLS", "JSON", "Runtime"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "JSON", "Runtime"]),
        // The API's own tables: API keys and the first answers kept under Idempotency-Keys.
        .target(name: "APIStores", dependencies: ["Postgres"]),
        // The web console (§11): HTML, CSS and JavaScript modules embedded in the binary, served at /console/.
        .target(name: "WebConsole", dependencies: ["HTTPServer"], resources: [.embedInCode("Assets")]),
        // The write side of a visit: decide, append, read model and push intents in one transaction.
        .target(
            name: "VisitCommands",
            dependencies: [
                "VisitDomain", "EventStore", "VisitProjections", "Outbox", "Postgres", "Runtime", "PersonalData",
            ]
        ),
        .target(
            name: "HTTPAPI",
            dependencies: [
                "HTTPServer", "VisitDomain", "VisitProjections", "VisitCommands", "EventStore", "Postgres", "Outbox", "Runtime",
                "APIStores", "COpenSSL", "WebConsole", "PersonalData",
            ]
        ),

        // Executables: the product and its benchmarks. They only wire things together.
        .executableTarget(
            name: "livevisits",
            dependencies: [
                "Runtime", "VisitDomain", "Postgres", "EventStore", "VisitProjections", "VisitCommands", "APNs", "Outbox",
                "OutboxAPNs",
                "APNsSimulator", "HTTPServer", "HTTPAPI", "JSON", "PersonalData", "Retention",
            ]
        ),
        .executableTarget(
            name: "livevisits-bench",
            dependencies: [
                "Runtime", "VisitDomain", "Postgres", "EventStore", "VisitProjections", "VisitCommands", "APNs", "Outbox",
                "OutboxAPNs", "APNsSimulator", "HTTPAPI", "JSON", "PersonalData", "Retention",
            ]
        ),

        // wrk against the HTTPServer target alone (a trivial JSON route): the HTTP layer's own cost.
        .executableTarget(name: "http-server-bench", dependencies: ["HTTPServer", "Runtime"]),

        // Tests mirror the targets; TestSupport finds the project's PostgreSQL and makes scratch databases.
        .target(name: "TestSupport", dependencies: ["Postgres", "Runtime"], path: "Tests/TestSupport"),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
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
            ]
        ),
        .testTarget(
            name: "VisitCommandsTests",
            dependencies: [
                "VisitCommands", "VisitProjections", "VisitDomain", "EventStore", "Postgres", "VisitTestSupport", "TestSupport",
                "Outbox",
            ]
        ),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "APNsSimulator", "TestSupport"]),
        .testTarget(
            name: "OutboxTests",
            dependencies: ["Outbox", "OutboxAPNs", "APNs", "APNsSimulator", "TestSupport", "Retention", "EventStore"]),
        .testTarget(name: "APNsSimulatorTests", dependencies: ["APNsSimulator", "JSON", "Runtime", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "JSON", "Runtime", "TestSupport"]),
        .testTarget(
            name: "HTTPAPITests",
            dependencies: [
                "HTTPAPI", "HTTPServer", "Outbox", "OutboxAPNs", "APNs", "APNsSimulator", "VisitDomain", "VisitProjections",
                "Postgres", "Runtime",
                "APIStores", "VisitCommands", "TestSupport", "PersonalData", "Retention", "JSON", "EventStore",
            ]
        ),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "Runtime"]),
        .testTarget(name: "ScaleTests", dependencies: ["APNsSimulator", "JSON", "Postgres", "Runtime", "TestSupport"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
