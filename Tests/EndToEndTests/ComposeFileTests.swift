import Foundation
import TestSupport
import Testing

/// docker-compose.yml and the Dockerfile cannot run here (no Docker engine), so their syntax and their
/// names are checked: the four services, and only the contract's LIVEVISITS_* variables.
@Suite(.timeLimit(.minutes(10))) struct ComposeFileTests {
    static let root = TestDatabase.repositoryRoot
    static let contractVariables: Set<String> = [
        "LIVEVISITS_DATABASE_URL", "LIVEVISITS_HTTP_ADDR", "LIVEVISITS_APNS_URL", "LIVEVISITS_APNS_SANDBOX_URL",
        "LIVEVISITS_APNS_PRODUCTION_URL", "LIVEVISITS_APNS_CA_FILE", "LIVEVISITS_APNS_KEY_FILE", "LIVEVISITS_APNS_KEY_ID",
        "LIVEVISITS_APNS_TEAM_ID", "LIVEVISITS_APNS_BUNDLE_ID", "LIVEVISITS_PROJECTIONS_DIR",
    ]

    /// The compose file as JSON through PyYAML (python3 and PyYAML come from scripts/deps; the test fails
    /// naming the one that is missing).
    static func parsedCompose() async throws -> [String: Any] {
        let script = "import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"
        let python = try requireTool("/usr/bin/python3", installedBy: "Debian package python3")
        let outcome = try await Subprocess.run(python, ["-c", script, root.appendingPathComponent("docker-compose.yml").path])
        if outcome.stderr.contains("No module named 'yaml'") {
            throw MissingTool("PyYAML (python3 -c 'import yaml')", installedBy: "Debian package python3-yaml")
        }
        #expect(outcome.status == 0, "docker-compose.yml does not parse: \(outcome.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
    }

    static func variables(in text: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(text)
        while let found = rest.range(of: "LIVEVISITS_") {
            let tail = rest[found.upperBound...]
            let name = tail.prefix { $0.isUppercase || $0 == "_" }
            names.insert("LIVEVISITS_" + name)
            rest = tail.dropFirst(name.count)
        }
        return names
    }

    @Test func composeHasTheFourServicesAndTheirWiring() async throws {
        let compose = try await Self.parsedCompose()
        let services = try #require(compose["services"] as? [String: Any])
        #expect(Set(services.keys) == ["postgres", "migrate", "api", "worker"])
        let postgres = try #require(services["postgres"] as? [String: Any])
        #expect((postgres["image"] as? String)?.hasPrefix("postgres:") == true)
        #expect(postgres["healthcheck"] != nil)
        #expect((postgres["volumes"] as? [Any])?.isEmpty == false)
        let migrate = try #require(services["migrate"] as? [String: Any])
        #expect((migrate["command"] as? [String]) == ["migrate"])
        #expect(migrate["restart"] as? String == "no")
        for name in ["api", "worker"] {
            let service = try #require(services[name] as? [String: Any])
            #expect(service["build"] != nil || service["image"] != nil, "\(name) runs the image built from the Dockerfile")
            let dependsOn = try #require(service["depends_on"] as? [String: Any])
            #expect((dependsOn["migrate"] as? [String: Any])?["condition"] as? String == "service_completed_successfully")
        }
        let worker = try #require(services["worker"] as? [String: Any])
        #expect((worker["secrets"] as? [Any])?.isEmpty == false, "the APNs key is mounted as a secret")
        #expect((compose["secrets"] as? [String: Any])?["apns_key"] != nil)
        #expect(compose["volumes"] != nil)
    }

    @Test func composeAndDockerfileUseOnlyTheContractsVariables() throws {
        for file in ["docker-compose.yml", "Dockerfile"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let unknown = Self.variables(in: text).subtracting(Self.contractVariables)
            #expect(unknown.isEmpty, "\(file) uses variables outside contract §3: \(unknown.sorted())")
        }
        let compose = try String(contentsOf: Self.root.appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        #expect(Self.variables(in: compose).isSuperset(of: [
            "LIVEVISITS_DATABASE_URL", "LIVEVISITS_HTTP_ADDR", "LIVEVISITS_APNS_KEY_FILE", "LIVEVISITS_APNS_KEY_ID",
            "LIVEVISITS_APNS_TEAM_ID", "LIVEVISITS_APNS_BUNDLE_ID",
        ]))
    }

    @Test func dockerfileBuildsOnTheOfficialSwiftImageWithTheDebianPackages() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        #expect(text.contains("FROM swift:"))
        for package in ["libpq-dev", "libssl-dev", "libcurl4-openssl-dev", "libmicrohttpd-dev", "libnghttp2-dev"] {
            #expect(text.contains(package), "Dockerfile lacks \(package)")
        }
    }
}
