// swift-tools-version:6.0
import PackageDescription

// The benchmarks, a package of their own beside the product's (the one at the repository root), which they
// build on through its LiveVisitsKit library. Swift 6 language mode, nothing outside the toolchain. Run them
// from the repository root (they read Migrations/ and Projections/ there): `scripts/bench <benchmark> …`.
let package = Package(
    name: "LiveVisitsBenchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "livevisits-bench", targets: ["livevisits-bench"]),
        .executable(name: "http-server-bench", targets: ["http-server-bench"]),
    ],
    dependencies: [
        // Named, so that the product references below hold whatever the checkout's directory is called.
        .package(name: "LiveVisits", path: "..")
    ],
    targets: [
        // Every benchmark of the product, one command each. The `livevisits` some of them start is built next to
        // this binary (where they look for it) through the dependency on the executable product.
        .executableTarget(
            name: "livevisits-bench",
            dependencies: [
                "CEpoll",
                .product(name: "LiveVisitsKit", package: "LiveVisits"),
                .product(name: "livevisits", package: "LiveVisits"),
            ]
        ),
        // epoll for the load loop (Glibc's module does not bring it to Swift).
        .target(name: "CEpoll"),

        // wrk against the HTTPServer target alone (a trivial JSON route): the HTTP layer's own cost.
        .executableTarget(
            name: "http-server-bench",
            dependencies: [.product(name: "LiveVisitsKit", package: "LiveVisits")]
        ),

        // The benchmark commands run small, against the project's PostgreSQL cluster (scripts/pg).
        .testTarget(
            name: "BenchmarkTests",
            dependencies: [.product(name: "LiveVisitsTestSupport", package: "LiveVisits")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
