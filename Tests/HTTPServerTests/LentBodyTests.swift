import CMicroHTTPD
import Foundation
import Synchronization
import Testing

@testable import HTTPServer

/// A large body is lent to MHD (`HTTPServer.response(sending:)`), not copied: MHD keeps it alive after every
/// other reference is gone, and lets it go when the response is destroyed.
@Suite struct LentBodyTests {
    /// A body whose storage reports when it is freed.
    final class Freed: Sendable {
        private let flag = Atomic(false)
        var done: Bool { flag.load(ordering: .sequentiallyConsistent) }
        func free() { flag.store(true, ordering: .sequentiallyConsistent) }
    }

    func body(count: Int, freed: Freed) -> Data {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 1)
        bytes.initializeMemory(as: UInt8.self, repeating: 7, count: count)
        return Data(
            bytesNoCopy: bytes, count: count,
            deallocator: .custom { pointer, _ in
                pointer.deallocate()
                freed.free()
            })
    }

    @Test func aLargeBodyLivesUntilItsResponseIsDestroyed() throws {
        let freed = Freed()
        var made: OpaquePointer?
        do {
            made = HTTPServer.response(sending: body(count: HTTPServer.lentBodyBytes, freed: freed))
        }
        let response = try #require(made)
        #expect(!freed.done, "freed while MHD still holds it")
        MHD_destroy_response(response)
        #expect(freed.done, "kept after its response was destroyed")
    }

    @Test func aSmallBodyIsCopiedAndNotKept() throws {
        let freed = Freed()
        var made: OpaquePointer?
        do {
            made = HTTPServer.response(sending: body(count: HTTPServer.lentBodyBytes - 1, freed: freed))
        }
        let response = try #require(made)
        #expect(freed.done, "a copied body was kept")
        MHD_destroy_response(response)
    }
}
