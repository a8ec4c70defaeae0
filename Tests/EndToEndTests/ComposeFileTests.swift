import Foundation
import Runtime
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `docker compose up` must work on a machine without Apple credentials. There is no container engine
/// here, so the compose file is read as data (through PyYAML) and its wiring is checked name by name:
/// the services and their commands, the order they start in, and that the worker dials the simulator
/// service on the port it listens on, trusts the CA the credentials step writes into the volume both
/// mount, and signs with the key the simulator verifies. What can run outside a container does run: the
/// credentials step's own script, and the simulator serving the certificate it made, reached under the
/// service's host name as the worker reaches it.
@Suite(.timeLimit(.minutes(10)))
struct ComposeFileTests {
    static let root = TestDatabase.repositoryRoot

    @Test func servicesRunTheImageAndTheRightCommands() async throws {
        let compose = try await Compose.load()
        #expect(Set(compose.serviceNames) == ["postgres", "credentials", "migrate", "apns-sim", "api", "worker"])
        let postgres = try compose.service("postgres")
        #expect((postgres.string("image") ?? "").hasPrefix("postgres:"))
        #expect(postgres.volumes.contains { $0.target == "/var/lib/postgresql/data" }, "the database outlives its container")

        let builders = compose.serviceNames.filter { (try? compose.service($0).value("build")) != nil }
        #expect(
            builders == ["migrate"],
            "one service builds the image, the others run it (and it stays with Apple's APNs): \(builders)")
        for name in ["credentials", "migrate", "apns-sim", "api", "worker"] {
            #expect(
                try compose.service(name).string("image") == "livevisits:local", "\(name) runs the image the Dockerfile builds")
        }
        #expect(try compose.service("migrate").command == ["migrate"])
        #expect(try compose.service("api").command == ["serve", "--api-only"])
        #expect(try compose.service("worker").command == ["worker"])
        #expect(try compose.service("apns-sim").command.first == "apns-sim")
        let credentials = try compose.service("credentials")
        #expect(credentials.entrypoint.prefix(2) == ["/bin/sh", "-c"], "the credentials step is a shell script, not livevisits")
        for name in ["credentials", "migrate"] {
            #expect(try compose.service(name).string("restart") == "no", "\(name) runs once")
        }
        #expect(try compose.service("api").value("ports") as? [String] == ["127.0.0.1:8080:8080"])
        for name in compose.serviceNames {
            for port in try compose.service(name).value("ports") as? [String] ?? [] {
                #expect(port.hasPrefix("127.0.0.1:"), "\(name) publishes \(port) beyond the loopback interface")
            }
        }
        let namedVolumes = Set((compose.document["volumes"] as? [String: Any] ?? [:]).keys)
        for name in compose.serviceNames {
            for volume in try compose.service(name).volumes {
                #expect(namedVolumes.contains(volume.source), "\(name) mounts \(volume.source), which is not a declared volume")
            }
        }
        #expect(compose.document["secrets"] == nil, "nothing outside the repository is needed to start")
    }

    @Test func servicesStartInOrder() async throws {
        let compose = try await Compose.load()
        let expected: [String: [String: String]] = [
            "postgres": [:],
            "credentials": [:],
            "migrate": ["postgres": "service_healthy"],
            "apns-sim": ["credentials": "service_completed_successfully"],
            "api": [
                "migrate": "service_completed_successfully", "credentials": "service_completed_successfully",
                "apns-sim": "service_healthy",
            ],
            "worker": [
                "migrate": "service_completed_successfully", "credentials": "service_completed_successfully",
                "apns-sim": "service_healthy",
            ],
        ]
        for name in compose.serviceNames {
            let dependencies = try compose.service(name).dependencies
            #expect(dependencies == expected[name], "\(name) depends on \(dependencies)")
            for (dependency, condition) in dependencies {
                let other = try compose.service(dependency)
                switch condition {
                case "service_healthy":
                    let test = other.healthcheck
                    #expect(!test.isEmpty, "\(name) waits for \(dependency) to be healthy, which has no healthcheck")
                case "service_completed_successfully":
                    #expect(other.string("restart") == "no", "\(name) waits for \(dependency) to finish, which restarts")
                default:
                    Issue.record("\(name) → \(dependency): unexpected condition \(condition)")
                }
            }
        }
        #expect(try compose.service("api").healthcheck.contains("http://127.0.0.1:8080/readyz"))
    }

    @Test func workerReachesTheSimulatorWithTheCredentialsStepsFiles() async throws {
        let compose = try await Compose.load()
        let credentials = try compose.service("credentials")
        let simulator = try compose.service("apns-sim")
        let worker = try compose.service("worker")

        // The credentials step writes into a volume at the directory its command names, for the host name
        // its command names: the simulator's service name.
        let arguments = credentials.command
        try #require(arguments.count == 2, "credentials takes the directory and the simulator's host name: \(arguments)")
        let (directory, host) = (arguments[0], arguments[1])
        #expect(host == "apns-sim")
        let volume = try #require(credentials.volumes.first { $0.target == directory }, "credentials writes into a volume")
        #expect(!volume.readOnly)

        // The simulator listens on all interfaces at its --port, serving the certificate from that volume.
        let listen = try Self.options(simulator.command)
        #expect(listen["--host"] == "0.0.0.0", "other containers reach the simulator")
        let port = try #require(listen["--port"].flatMap(Int.init), "the simulator listens on a fixed port")
        let certificates = try #require(listen["--cert-dir"])
        #expect(certificates == directory + "/apns-sim")
        #expect(simulator.mounts(volume.source, at: directory))
        #expect(simulator.healthcheck.contains("https://localhost:\(port)/_sim/stats"))
        #expect(simulator.healthcheck.contains(certificates + "/ca.pem"))

        // The API (channel creation) and the worker dial that service, its pushes on --port and its
        // channel management on --channels-port, trust that CA, sign with the key the simulator checks
        // and wrap customers' keys with the key file the credentials step made.
        let channelsPort = try #require(listen["--channels-port"].flatMap(Int.init), "channel management on a fixed port")
        for service in [worker, try compose.service("api")] {
            let channels = try #require(service.environment["LIVEVISITS_APNS_CHANNELS_URL"].flatMap(URLComponents.init(string:)))
            #expect(channels.scheme == "https" && channels.host == host && channels.port == channelsPort)
            #expect(service.environment["LIVEVISITS_PERSONAL_DATA_KEY_FILE"] == directory + "/personal-data.key")
            #expect(service.environment["LIVEVISITS_APNS_URL"] == worker.environment["LIVEVISITS_APNS_URL"])
            #expect(service.mounts(volume.source, at: directory))
        }
        let environment = worker.environment
        let url = try #require(environment["LIVEVISITS_APNS_URL"].flatMap(URLComponents.init(string:)))
        #expect(url.scheme == "https")
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(environment["LIVEVISITS_APNS_CA_FILE"] == certificates + "/ca.pem")
        #expect(environment["LIVEVISITS_APNS_KEY_FILE"] == directory + "/AuthKey.p8")
        #expect(worker.mounts(volume.source, at: directory))
        for variable in [
            "LIVEVISITS_APNS_KEY_FILE", "LIVEVISITS_APNS_KEY_ID", "LIVEVISITS_APNS_TEAM_ID", "LIVEVISITS_APNS_BUNDLE_ID",
        ] {
            #expect(environment[variable] != nil, "the worker lacks \(variable)")
            #expect(simulator.environment[variable] == environment[variable], "the simulator checks JWTs against \(variable)")
        }
    }

    @Test func everyProcessFindsTheDatabaseAndTheAPIListensWhereItIsPublished() async throws {
        let compose = try await Compose.load()
        let postgres = try compose.service("postgres").environment
        for name in ["migrate", "api", "worker"] {
            let environment = try compose.service(name).environment
            let url = try #require(environment["LIVEVISITS_DATABASE_URL"].flatMap(URLComponents.init(string:)), "\(name)")
            #expect(url.scheme == "postgresql")
            #expect(url.host == "postgres", "\(name) names the db service")
            #expect(url.port == 5432)
            #expect(url.user == postgres["POSTGRES_USER"])
            #expect(url.password == postgres["POSTGRES_PASSWORD"])
            #expect(url.path == "/" + (postgres["POSTGRES_DB"] ?? ""))
            #expect(environment["LIVEVISITS_PROJECTIONS_DIR"] == "/app/Projections", "\(name) reads the rules the image holds")
        }
        #expect(try compose.service("api").environment["LIVEVISITS_HTTP_ADDR"] == "0.0.0.0:8080")
    }

    @Test func composeAndDockerfileUseOnlyVariablesTheProductReads() throws {
        let read = try Self.variablesRead()
        for file in ["docker-compose.yml", "Dockerfile"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let unknown = Self.variables(in: text).subtracting(read)
            #expect(unknown.isEmpty, "\(file) sets variables no code reads: \(unknown.sorted())")
        }
    }

    @Test func dockerfileBuildsTheBinaryAndHasWhatTheServicesRun() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        #expect(text.contains("FROM swift:"))
        for package in ["libpq-dev", "libssl-dev", "libmicrohttpd-dev", "libnghttp2-dev"] {
            #expect(text.contains(package), "Dockerfile lacks \(package)")
        }
        #expect(text.contains("swift build -c release --product livevisits"))
        #expect(text.contains("ENTRYPOINT [\"livevisits\"]"), "compose's commands are livevisits subcommands")
        let runtime = try #require(text.components(separatedBy: "\nFROM ").last)
        for tool in ["curl", "openssl", "ca-certificates"] {
            #expect(runtime.contains(" \(tool)"), "the runtime image lacks \(tool), which docker-compose.yml runs")
        }
        for folder in ["Migrations", "Projections"] {
            #expect(runtime.contains("COPY \(folder) ./\(folder)"))
        }
        #expect(runtime.contains("WORKDIR /app"), "migrate finds ./Migrations, the services /app/Projections")
        #expect(runtime.contains("mkdir /credentials"), "the credentials volume's mount point")
    }

    /// The credentials step as compose runs it (its entrypoint and command, `$$` read as `$`), into a
    /// folder of ours; then the simulator with its files, reached as `https://apns-sim:PORT` the way
    /// the worker reaches it, and through the simulator's own healthcheck.
    @Test func credentialsStepMakesWhatTheSimulatorServesAndTheWorkerTrusts() async throws {
        for tool in ["/usr/bin/openssl", "/usr/bin/curl", "/bin/sh", "/usr/bin/env"] {
            try #require(
                FileManager.default.isExecutableFile(atPath: tool), "\(tool) is needed (scripts/deps installs openssl and curl)")
        }
        let livevisits = try await BuiltProduct.livevisits()
        let compose = try await Compose.load()
        let credentials = try compose.service("credentials")
        let directory = try #require(credentials.command.first)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-compose-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let local = folder.appendingPathComponent("credentials").path
        func mapped(_ text: String) -> String { text.replacingOccurrences(of: directory, with: local) }

        let step = credentials.entrypoint + credentials.command.map(mapped)
        let first = try await Subprocess.run(step[0], Array(step.dropFirst()))
        #expect(first.status == 0, "credentials: \(first.stderr)")
        let key = try Data(contentsOf: URL(fileURLWithPath: local + "/AuthKey.p8"))
        let firstPersonalDataKey = try Data(contentsOf: URL(fileURLWithPath: local + "/personal-data.key"))
        #expect(String(decoding: key, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"), "a PKCS#8 .p8 like Apple's")
        let ca = local + "/apns-sim/ca.pem"
        let verified = try await Subprocess.run(
            "/usr/bin/openssl", ["verify", "-CAfile", ca, "-verify_hostname", "apns-sim", local + "/apns-sim/server.pem"])
        #expect(verified.status == 0, "the simulator's certificate is valid for apns-sim: \(verified.stdout) \(verified.stderr)")
        let again = try await Subprocess.run(step[0], Array(step.dropFirst()))
        #expect(again.status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: local + "/AuthKey.p8")) == key, "a second run keeps the key")
        let personalDataKey = try Data(contentsOf: URL(fileURLWithPath: local + "/personal-data.key"))
        #expect(personalDataKey.count == 32, "LIVEVISITS_PERSONAL_DATA_KEY_FILE holds exactly 32 bytes")
        #expect(personalDataKey == firstPersonalDataKey, "a second run keeps the personal-data key")

        // The simulator's command and environment, on loopback and a free port.
        let simulator = try compose.service("apns-sim")
        let composePort = try #require(try Self.options(simulator.command)["--port"])
        var arguments = simulator.command.map(mapped)
        if let host = arguments.firstIndex(of: "--host") { arguments[host + 1] = "127.0.0.1" }
        if let port = arguments.firstIndex(of: "--port") { arguments[port + 1] = "0" }
        if let port = arguments.firstIndex(of: "--channels-port") { arguments[port + 1] = "0" }
        let environment = simulator.environment.mapValues(mapped).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let output = folder.appendingPathComponent("apns-sim.out").path
        let process = try ChildProcess("/usr/bin/env", ["-i"] + environment + [livevisits] + arguments)
            .start(stdout: .file(output), stderr: .file(output + ".err"))
        let checked: Result<Void, any Error>
        do {
            let port = try await Self.listeningPort(printedIn: output)
            let worker = try #require(try compose.service("worker").environment["LIVEVISITS_APNS_URL"])
            let dialled = worker.replacingOccurrences(of: ":\(composePort)", with: ":\(port)")
            let asWorker = try await Subprocess.run(
                "/usr/bin/curl",
                ["-fsS", "--http2", "--cacert", ca, "--resolve", "apns-sim:\(port):127.0.0.1", dialled + "/_sim/stats"])
            #expect(asWorker.status == 0, "\(dialled) with the CA file: \(asWorker.stderr)")
            #expect(asWorker.stdout.contains("\"requestsTotal\""), "\(asWorker.stdout)")

            let health = simulator.healthcheck.map(mapped).map {
                $0.replacingOccurrences(of: "localhost:\(composePort)", with: "localhost:\(port)")
            }
            try #require(health.first == "CMD" && health.count > 1)
            let healthy = try await Subprocess.run("/usr/bin/" + health[1], Array(health.dropFirst(2)))
            #expect(healthy.status == 0, "the simulator's healthcheck: \(healthy.stderr)")
            checked = .success(())
        } catch {
            checked = .failure(error)
        }
        let status = await process.stop(SIGINT, killAfter: 30)
        try checked.get()
        #expect(status == 0, "apns-sim after SIGINT")
    }

    /// The port of the `apns-sim listening on https://127.0.0.1:PORT` line, within 30 s.
    static func listeningPort(printedIn output: String) async throws -> Int {
        let prefix = "apns-sim listening on https://127.0.0.1:"
        var port: Int?
        do {
            try await eventually("apns-sim listening", within: 30, pollingEvery: 0.05) {
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                port = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }).flatMap {
                    Int($0.dropFirst(prefix.count))
                }
                return port != nil
            }
        } catch is WaitTimedOut {
            let errors = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
            throw SimulatorDidNotStart(stderr: errors)
        }
        return port!
    }

    struct SimulatorDidNotStart: Error, CustomStringConvertible {
        let stderr: String
        var description: String { "apns-sim did not print its URL within 30 s: \(stderr)" }
    }

    // MARK: - Reading the files

    /// `--flag value` pairs of a command.
    static func options(_ command: [String]) throws -> [String: String] {
        var options: [String: String] = [:]
        var rest = command.dropFirst()[...]
        while let flag = rest.popFirst() {
            guard flag.hasPrefix("--") else { continue }
            options[flag] = rest.first.flatMap { $0.hasPrefix("--") ? nil : rest.popFirst() } ?? ""
        }
        return options
    }

    static func variables(in text: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(text)
        while let found = rest.range(of: "LIVEVISITS_") {
            let tail = rest[found.upperBound...]
            let name = tail.prefix { $0.isUppercase || $0.isNumber || $0 == "_" }
            if !name.isEmpty, !name.hasSuffix("_") { names.insert("LIVEVISITS_" + name) }
            rest = tail.dropFirst(name.count)
        }
        return names
    }

    /// Every `LIVEVISITS_*` variable named in Sources: what the product can read.
    static func variablesRead() throws -> Set<String> {
        let sources = root.appendingPathComponent("Sources")
        var names: Set<String> = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            names.formUnion(variables(in: try String(contentsOf: file, encoding: .utf8)))
        }
        return names
    }
}

/// docker-compose.yml as data. PyYAML (Debian `python3-yaml`, installed by `scripts/deps`) reads it, so
/// anchors and merge keys resolve as compose resolves them; without it the test fails and says so.
struct Compose {
    let document: [String: Any]

    /// Loads the file and interpolates every string as compose does with nothing set in the shell:
    /// `$$` is a `$`, `${NAME:-default}` its default; any other variable is an error (the file must
    /// start as it is).
    static let interpolating = #"""
        import json, re, sys, yaml
        pattern = re.compile(r"\$\$|\$\{(\w+):-([^}]*)\}|\$\{?(\w+)\}?")
        def substitute(match):
            if match.group(0) == "$$": return "$"
            if match.group(1): return match.group(2)
            sys.exit("docker-compose.yml needs the variable %s from the shell" % match.group(3))
        def walk(value):
            if isinstance(value, dict): return {key: walk(item) for key, item in value.items()}
            if isinstance(value, list): return [walk(item) for item in value]
            if isinstance(value, str): return pattern.sub(substitute, value)
            return value
        print(json.dumps(walk(yaml.safe_load(open(sys.argv[1])))))
        """#

    static func load() async throws -> Compose {
        let python = "/usr/bin/python3"
        try #require(
            FileManager.default.isExecutableFile(atPath: python), "python3 is needed to read docker-compose.yml (scripts/deps)")
        let outcome = try await Subprocess.run(
            python, ["-c", interpolating, ComposeFileTests.root.appendingPathComponent("docker-compose.yml").path])
        try #require(
            !outcome.stderr.contains("No module named 'yaml'"),
            "PyYAML (Debian python3-yaml) is needed to read docker-compose.yml; scripts/deps installs it")
        try #require(outcome.status == 0, "docker-compose.yml does not parse: \(outcome.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        return Compose(document: try #require(document, "docker-compose.yml is not a mapping"))
    }

    var serviceNames: [String] { (document["services"] as? [String: Any] ?? [:]).keys.sorted() }

    func service(_ name: String) throws -> Service {
        let services = try #require(document["services"] as? [String: Any], "docker-compose.yml has no services")
        return Service(name: name, definition: try #require(services[name] as? [String: Any], "no service \(name)"))
    }

    struct Service {
        let name: String
        let definition: [String: Any]

        func value(_ key: String) -> Any? { definition[key] }
        func string(_ key: String) -> String? { definition[key] as? String }
        var command: [String] { definition["command"] as? [String] ?? [] }
        var entrypoint: [String] { definition["entrypoint"] as? [String] ?? [] }
        var healthcheck: [String] { (definition["healthcheck"] as? [String: Any])?["test"] as? [String] ?? [] }

        /// The environment as the process sees it (numbers and booleans as compose writes them).
        var environment: [String: String] {
            (definition["environment"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
        }

        /// `depends_on` as service → condition.
        var dependencies: [String: String] {
            (definition["depends_on"] as? [String: Any] ?? [:]).mapValues {
                ($0 as? [String: Any])?["condition"] as? String ?? ""
            }
        }

        /// Short-syntax volumes, `source:target[:ro]`.
        var volumes: [(source: String, target: String, readOnly: Bool)] {
            (definition["volumes"] as? [String] ?? []).map { entry in
                let parts = entry.split(separator: ":").map(String.init)
                return (parts.first ?? "", parts.count > 1 ? parts[1] : "", parts.count > 2 && parts[2] == "ro")
            }
        }

        func mounts(_ volume: String, at target: String) -> Bool {
            volumes.contains { $0.source == volume && $0.target == target }
        }
    }
}
