import CShims
import Glibc
import Logging
import Synchronization
import Testing
@testable import Transport

@Suite struct FileDescriptorTransportTests {
    func socketPair() throws -> (FileDescriptorTransport, FileDescriptorTransport) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw TransportError(.io, "socketpair failed")
        }
        return (try FileDescriptorTransport(adopting: fds[0], peerDescription: "unix:a"),
                try FileDescriptorTransport(adopting: fds[1], peerDescription: "unix:b"))
    }

    @Test func adoptingAnInvalidDescriptorFails() async {
        let error = await expectTransportError(.io) { _ = try FileDescriptorTransport(adopting: 987_654, peerDescription: "x") }
        #expect(error?.message == "x: cannot use descriptor 987654: bad file descriptor")
    }

    @Test func largeTransfersOverASocketPair() async throws {
        try await withTimeLimit {
            let (a, b) = try socketPair()
            let payload = pattern(2_000_000, seed: 77)
            async let received = receiveExactly(payload.count, from: b)
            try await a.send(payload)
            #expect(try await received == payload)
            // Chunks are at most 64 KiB.
            try await a.send(pattern(200_000))
            var sizes: [Int] = []
            var total = 0
            while total < 200_000 {
                let chunk = try await b.receive()
                sizes.append(chunk.count)
                total += chunk.count
            }
            #expect(sizes.allSatisfy { $0 <= 65_536 })
            await a.close()
            await b.close()
        }
    }

    @Test func sendToAVanishedPeerIsClosedNotSIGPIPE() async throws {
        try await withTimeLimit {
            let (a, b) = try socketPair()
            await b.close()
            await expectTransportError(.closed) { try await a.send([1, 2, 3]) }
            await a.close()
        }
    }

    @Test func ptyMasterWhoseSlaveClosedReportsClosed() async throws {
        try await withTimeLimit {
            let master = tuneup_posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
            #expect(master >= 0)
            #expect(tuneup_grantpt(master) == 0 && tuneup_unlockpt(master) == 0)
            var name = [CChar](repeating: 0, count: 64)
            #expect(tuneup_ptsname_r(master, &name, name.count) == 0)
            let path = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let slave = open(path, O_RDWR | O_NOCTTY)
            #expect(slave >= 0)
            let transport = try FileDescriptorTransport(adopting: master, peerDescription: "pty")
            let pending = try await receiveThatWaits(on: transport) { transport.hasPendingReceive }
            close(slave)
            let error = await expectTransportError(.closed) { _ = try await pending.value }
            #expect(error?.message == "pty: the other end hung up")
            await transport.close()
        }
    }

    @Test func closeReleasesTheDescriptorExactlyOnce() async throws {
        let (a, b) = try socketPair()
        guard let fd = a.descriptor, let identity = DescriptorIdentity(fd) else {
            Issue.record("no descriptor")
            return
        }
        await a.close()
        await a.close()
        #expect(a.descriptor == nil)
        #expect(!identity.isStillOpen)
        await b.close()
    }

    @Test func traceLoggingShowsBytesInHex() async throws {
        try await withTimeLimit {
            let sink = LogSink()
            var logger = Logger(label: "test") { _ in SinkHandler(sink: sink) }
            logger.logLevel = .trace
            var fds: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            let a = try FileDescriptorTransport(adopting: fds[0], peerDescription: "unix:a", logger: logger)
            let b = try FileDescriptorTransport(adopting: fds[1], peerDescription: "unix:b", logger: logger)
            try await a.send([0xDE, 0xAD, 0x00, 0x0F])
            #expect(try await b.receive() == [0xDE, 0xAD, 0x00, 0x0F])
            #expect(sink.lines.contains("unix:a sent 4 bytes: de ad 00 0f"))
            #expect(sink.lines.contains("unix:b received 4 bytes: de ad 00 0f"))
            // At the default level nothing is logged.
            let quiet = LogSink()
            let silent = Logger(label: "quiet") { _ in SinkHandler(sink: quiet) }
            let (c, d) = try socketPair()
            let e = try FileDescriptorTransport(adopting: dup(c.descriptor ?? -1), peerDescription: "q", logger: silent)
            try await e.send([1])
            #expect(try await d.receive() == [1])
            #expect(quiet.lines.isEmpty)
            for t in [a, b, c, d, e] { await t.close() }
        }
    }

    @Test func hexDumpIsBounded() {
        #expect(hexDump([0x00, 0xff, 0x10]) == "00 ff 10")
        #expect(hexDump([UInt8](repeating: 1, count: 600), limit: 2) == "01 01 …(+598 bytes)")
        #expect(hexDump([]) == "")
    }
}

/// Collects log messages.
final class LogSink: Sendable {
    private let storage = Mutex<[String]>([])
    var lines: [String] { storage.withLock { $0 } }
    func append(_ line: String) { storage.withLock { $0.append(line) } }
}

/// A log handler writing into a `LogSink`; default level `.info`.
struct SinkHandler: LogHandler {
    let sink: LogSink
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        sink.append(event.message.description)
    }
}
