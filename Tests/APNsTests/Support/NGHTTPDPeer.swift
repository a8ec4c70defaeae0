import Foundation
import Runtime
import TestSupportCore

#if canImport(Glibc)
    import Glibc
#endif

/// `nghttpd` (Debian `nghttp2-server`) as an independent HTTP/2 TLS peer: it echoes POST bodies with
/// 200 and logs every frame it receives, which lets a test read the exact headers the client sent.
final class NGHTTPDPeer {
    static let path = "/usr/sbin/nghttpd"

    let directory: String
    let port: UInt16
    private let process: RunningChild
    var caFile: String { directory + "/cert.pem" }
    var url: String { "https://127.0.0.1:\(port)" }

    init(maximumConcurrentStreams: Int = 100, verbose: Bool = true) throws {
        try requireTool(Self.path, installedBy: "Debian package nghttp2-server")
        directory = try OpenSSLTool.scratchDirectory()
        try OpenSSLTool.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        try FileManager.default.createDirectory(atPath: directory + "/htdocs", withIntermediateDirectories: true)
        port = try Self.freePort()
        let log = directory + "/frames.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process = try ChildProcess(
            Self.path,
            [
                verbose ? "-v" : "--echo-upload", "--echo-upload", "-m", String(maximumConcurrentStreams), "-d",
                directory + "/htdocs", String(port),
                directory + "/key.pem", directory + "/cert.pem",
            ]
        ).start(stdout: .file(log), stderr: .file(log + ".err"))
        try Self.waitUntilListening(port)
    }

    /// Everything nghttpd logged so far.
    var frames: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/frames.log") ?? Data(), as: UTF8.self)
    }

    func stop() {
        if process.isRunning {
            process.signal(SIGKILL)
            _ = process.waitBlocking()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func freePort() throws -> UInt16 {
        guard let port = LoopbackPort.bindable() else { throw OpenSSLTool.Failure(description: "no free port") }
        return port
    }

    static func waitUntilListening(_ port: UInt16) throws {
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return }
            usleep(25_000)
        }
        throw OpenSSLTool.Failure(description: "nghttpd did not start listening on \(port)")
    }
}
