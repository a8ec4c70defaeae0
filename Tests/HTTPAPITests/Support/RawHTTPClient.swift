import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP/1.1 answer as the socket carried it.
struct RawResponse: Sendable {
    let status: Int
    let headers: [(String, String)]
    let body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (nil when it is not one).
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// `error.code` of an error answer.
    var errorCode: String? {
        (json?["error"] as? [String: Any])?["code"] as? String
    }
}

struct RawHTTPError: Error, CustomStringConvertible {
    let description: String
}

/// A deliberately small HTTP/1.1 client over a plain TCP socket: one request per connection
/// (`Connection: close`), arbitrary bytes allowed in the body and the path, so tests can send
/// what no well-behaved client library would (bad UTF-8, truncated bodies, lying Content-Length).
struct RawHTTPClient: Sendable {
    let port: UInt16
    /// The loopback address the client's socket is bound to (any of 127.0.0.0/8): the peer the server sees.
    var source = "127.0.0.1"

    /// Sends `method path` with the given headers and body; `Content-Length` is added unless present.
    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) async throws
        -> RawResponse
    {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        if body != nil, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            head += "Content-Type: application/json\r\n"
        }
        head += "\r\n"
        return try await exchange(Array(head.utf8) + (body ?? []))
    }

    /// Writes raw bytes (a whole request, possibly broken) and reads the answer until the server closes.
    /// With `shutdownWrite`, the client half-closes after writing (a truncated upload ends there).
    func exchange(_ bytes: [UInt8], shutdownWrite: Bool = false) async throws -> RawResponse {
        let port = self.port
        let source = self.source
        return try await onOwnThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
            defer { close(fd) }
            if source != "127.0.0.1" {
                var local = sockaddr_in()
                local.sin_family = sa_family_t(AF_INET)
                local.sin_addr.s_addr = inet_addr(source)
                let bound = withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard bound == 0 else { throw RawHTTPError(description: "bind \(source): errno \(errno)") }
            }
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw RawHTTPError(description: "connect: errno \(errno)") }
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }  // the server may answer (413) and close before reading everything
                offset += n
            }
            if shutdownWrite { shutdown(fd, Int32(SHUT_WR)) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                received += buffer[0..<n]
            }
            return try RawHTTPClient.parse(received)
        }
    }

    static func parse(_ bytes: [UInt8]) throws -> RawResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            throw RawHTTPError(description: "no HTTP answer (\(bytes.count) bytes)")
        }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RawHTTPError(description: "bad status line \(lines[0])")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var body = Array(bytes[(end + 4)...])
        if headers.contains(where: { $0.0.lowercased() == "transfer-encoding" && $0.1.lowercased().contains("chunked") }) {
            body = dechunk(body)
        } else if let length = headers.first(where: { $0.0.lowercased() == "content-length" }).flatMap({ Int($0.1) }),
            length <= body.count
        {
            body = Array(body[0..<length])
        }
        return RawResponse(status: status, headers: headers, body: body)
    }

    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard let lineEnd = (i..<max(i, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[i..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16)
            else { break }
            if size == 0 { break }
            let start = lineEnd + 2
            out += bytes[start..<min(bytes.count, start + size)]
            i = start + size + 2
        }
        return out
    }
}
