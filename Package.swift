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
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),

        // Process plumbing shared by every service: clock, logger, metrics, service group.
        .target(name: "Runtime"),

        // The pure domain: events, state machine, fold, rules, push plans, aps bodies. No I/O.
        .target(name: "VisitDomain"),

        // Adapters.
        .target(name: "Postgres", dependencies: ["CLibPQ", "Runtime"]),
        .target(name: "EventStore", dependencies: ["Postgres", "Runtime"]),
        .target(name: "VisitProjections", dependencies: ["VisitDomain", "EventStore", "Postgres", "Runtime"]),
        .target(name: "APNs", dependencies: ["COpenSSL", "CCurl", "Runtime"]),
        .target(name: "Outbox", dependencies: ["Postgres", "Runtime"]),
        // The APNs side of the outbox: the sender over the APNs client, the fleet's provider token in PostgreSQL.
        .target(name: "OutboxAPNs", dependencies: ["Outbox", "APNs", "Postgres"]),
        .target(name: "APNsSimulator", dependencies: ["CNGHTTP2", "COpenSSL", "Runtime"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "Runtime"]),
        // The write side of a visit: decide, append, read model and push intents in one transaction.
        .target(
            name: "VisitCommands",
            dependencies: ["VisitDomain", "EventStore", "VisitProjections", "Outbox", "Postgres", "Runtime"]
        ),
        .target(
            name: "HTTPAPI",
            dependencies: [
                "HTTPServer", "VisitDomain", "VisitProjections", "VisitCommands", "EventStore", "Postgres", "Outbox", "Runtime",
                "COpenSSL",
            ]
        ),

        // Executables: the product and its benchmarks. They only wire things together.
        .executableTarget(
            name: "livevisits",
            dependencies: [
                "Runtime", "VisitDomain", "Postgres", "EventStore", "VisitProjections", "APNs", "Outbox", "OutboxAPNs",
                "APNsSimulator", "HTTPServer", "HTTPAPI",
            ]
        ),
        .executableTarget(
            name: "livevisits-bench",
            dependencies: [
                "Runtime", "VisitDomain", "Postgres", "EventStore", "VisitProjections", "VisitCommands", "APNs", "Outbox",
                "OutboxAPNs", "APNsSimulator", "HTTPAPI",
            ]
        ),

        // wrk against the HTTPServer target alone (a trivial JSON route): the HTTP layer's own cost.
        .executableTarget(name: "http-server-bench", dependencies: ["HTTPServer", "Runtime"]),

        // Tests mirror the targets; TestSupport finds the project's PostgreSQL and makes scratch databases.
        .target(name: "TestSupport", dependencies: ["Postgres", "Runtime"], path: "Tests/TestSupport"),
        .testTarget(name: "VisitDomainTests", dependencies: ["VisitDomain"], resources: [.copy("Fixtures")]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "Runtime", "TestSupport"]),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "Postgres", "TestSupport"]),
        .testTarget(
            name: "VisitProjectionsTests",
            dependencies: ["VisitProjections", "VisitCommands", "VisitDomain", "EventStore", "TestSupport"]
        ),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "APNsSimulator", "TestSupport"]),
        .testTarget(name: "OutboxTests", dependencies: ["Outbox", "OutboxAPNs", "APNs", "APNsSimulator", "TestSupport"]),
        .testTarget(name: "APNsSimulatorTests", dependencies: ["APNsSimulator", "Runtime"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "Runtime"]),
        .testTarget(
            name: "HTTPAPITests",
            dependencies: [
                "HTTPAPI", "HTTPServer", "Outbox", "OutboxAPNs", "APNs", "APNsSimulator", "VisitDomain", "VisitProjections", "Postgres", "Runtime",
                "TestSupport",
            ]
        ),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
