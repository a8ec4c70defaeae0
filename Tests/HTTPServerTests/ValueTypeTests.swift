import Foundation
import HTTPServer
import Testing

@Suite(.timeLimit(.minutes(2))) struct ValueTypeTests {
    @Test func listenAddressesParse() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(try ListenAddress(parsing: "[::1]:0") == ListenAddress(host: "::1", port: 0))
        #expect(try ListenAddress(parsing: "localhost:80") == ListenAddress(host: "127.0.0.1", port: 80))
        #expect(try ListenAddress(parsing: ":9000") == ListenAddress(host: "0.0.0.0", port: 9000))
        #expect(try ListenAddress(parsing: "*:9000").host == "0.0.0.0")
        #expect(try ListenAddress(parsing: "[::1]:8080").description == "[::1]:8080")
        for bad in [
            "", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "example.com:80",
            "::1:80", "[::1]80", "[::1", "1.2.3.4:8o",
        ] {
            #expect(throws: HTTPServerError.self, "\(bad)") { try ListenAddress(parsing: bad) }
        }
    }

    @Test func configurationReadsTheListenAddressFromTheEnvironment() throws {
        #expect(try HTTPServerConfiguration(environment: [:]).listenAddress.description == "127.0.0.1:8080")
        #expect(
            try HTTPServerConfiguration(environment: ["LIVEVISITS_HTTP_ADDR": "0.0.0.0:9090"]).listenAddress
                == ListenAddress(host: "0.0.0.0", port: 9090))
        #expect(throws: HTTPServerError.self) {
            try HTTPServerConfiguration(environment: ["LIVEVISITS_HTTP_ADDR": "nonsense"])
        }
    }

    @Test func headersAreCaseInsensitive() {
        var headers: HTTPHeaders = ["Content-Type": "application/json", "X-A": "1"]
        headers.add(name: "x-a", value: "2")
        #expect(headers["content-type"] == "application/json")
        #expect(headers["X-a"] == "1")
        #expect(headers.values(for: "X-A") == ["1", "2"])
        headers.replaceOrAdd(name: "X-A", value: "3")
        #expect(headers.values(for: "x-a") == ["3"])
        headers.remove(name: "CONTENT-TYPE")
        #expect(!headers.contains("Content-Type"))
        #expect(!"\(HTTPHeaders([("Authorization", "Bearer secret")]))".contains("secret"))
    }

    @Test func requestDecodesPathAndQueryHelpers() {
        let request = HTTPRequest(
            method: .get, rawPath: "/a/b%20c/%E2%9C%93",
            queryItems: [HTTPQueryItem(name: "limit", value: "5"), HTTPQueryItem(name: "flag", value: nil)])
        #expect(request.pathSegments == ["a", "b c", "✓"])
        #expect(request.queryValue("limit") == "5")
        #expect(request.queryValue("flag") == nil)
        #expect(HTTPRequest(method: .get, rawPath: "/").pathSegments == [])
    }

    @Test func errorShapeIsTheContracts() throws {
        let response = HTTPResponse.error(status: 413, code: "payload_too_large", message: #"a "quoted" / message"#)
        #expect(response.status == 413)
        #expect(response.headers["content-type"] == "application/json")
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"error":{"code":"payload_too_large","message":"a \"quoted\" / message"}}"#)
    }

    @Test func requestIDs() {
        let a = RequestID.generate()
        #expect(a.count == 16)
        #expect(a != RequestID.generate())
        #expect(RequestID.isAcceptable(a))
        #expect(RequestID.isAcceptable("req-1.a_B"))
        #expect(!RequestID.isAcceptable(""))
        #expect(!RequestID.isAcceptable("a b"))
        #expect(!RequestID.isAcceptable("x\r\nSet-Cookie: y"))
        #expect(!RequestID.isAcceptable(String(repeating: "a", count: 65)))
    }

    @Test func configurationIsValidated() {
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(configuration: .test { $0.threadCount = 0 }) { _ in HTTPResponse() }
        }
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(configuration: .test { $0.maxHeaderBytes = 100 }) { _ in HTTPResponse() }
        }
    }

    @Test func bindingABusyPortFails() throws {
        let first = try HTTPServer(configuration: .test()) { _ in HTTPResponse() }
        let taken = first.address.port
        #expect(taken != 0)
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(configuration: .test { $0.listenAddress = ListenAddress(host: "127.0.0.1", port: taken) }) {
                _ in HTTPResponse()
            }
        }
    }
}
