import Glibc
import LightX
import Testing
import Transport
@_exported import TestSupport
@testable import HeadsetSimulator

extension ApplicationFirmware {
    /// Handles `request`, expecting exactly one packet back: the reply.
    mutating func reply(_ request: Packet, sourceLocation: SourceLocation = #_sourceLocation) -> Packet {
        let out = handle(request)
        #expect(out.count == 1, "expected exactly one reply, got \(out.count)", sourceLocation: sourceLocation)
        return out[0]
    }
}

/// Checks the reply rules: same opcode and param0, type Result, modules swapped, the given status; write
/// acknowledgements and failures carry no buffer.
func expectReply(_ reply: Packet, to request: Packet, _ status: Status = .ok,
                 sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(reply.status == status, "\(request.command): expected \(status), got \(reply.status)", sourceLocation: sourceLocation)
    #expect(reply.opcode == request.opcode, sourceLocation: sourceLocation)
    #expect(reply.header.param0 == request.header.param0, sourceLocation: sourceLocation)
    #expect(reply.header.type == .result, sourceLocation: sourceLocation)
    #expect(reply.header.source == request.header.destination, sourceLocation: sourceLocation)
    #expect(reply.header.destination == request.header.source, sourceLocation: sourceLocation)
    #expect(reply.header.param1 == UInt32(reply.buffer.count), sourceLocation: sourceLocation)
    if request.opcode == .write || status != .ok {
        #expect(reply.buffer.isEmpty, "\(request.command): expected an empty buffer", sourceLocation: sourceLocation)
    }
}

/// A raw request with an explicit (possibly malformed) argument.
func rawRequest(_ opcode: Opcode, _ command: Command, _ argument: [UInt8]? = nil, address: UInt32 = 0,
                destination: ModuleID = .application) -> Packet {
    // Arguments in tests are at most 256 bytes and addresses 24-bit.
    try! Packet.request(opcode, command, argument: argument, address: address, destination: destination)
}


/// A test's host of the simulated headset, on any link: sends packets, reads what comes back, keeps pushes aside.
protocol SimulatorHost {
    var pushes: [Packet] { get set }
    func send(_ packet: Packet) async throws
    /// The next packet (reply or push), or nil when none arrives within `timeout` or the link closed.
    mutating func next(timeout: Duration) async throws -> Packet?
}

extension SimulatorHost {
    /// The next non-push packet; pushes met on the way are appended to `pushes`.
    mutating func nextReply(timeout: Duration = .seconds(30)) async throws -> Packet? {
        let deadline = ContinuousClock.now + timeout
        while let p = try await next(timeout: deadline - ContinuousClock.now) {
            if p.isPush { pushes.append(p) } else { return p }
        }
        return nil
    }

    /// Sends `request` and returns the reply (a test failure when none comes within `timeout`).
    mutating func reply(to request: Packet, timeout: Duration) async throws -> Packet {
        try await send(request)
        guard let reply = try await nextReply(timeout: timeout) else {
            throw TestFailure("no reply to \(request.command) within \(timeout)")
        }
        return reply
    }
}

/// A host on a byte-stream link: frames requests, decodes everything that comes back, keeps pushes aside.
///
/// The default timeouts are for packets that must come: long, since a loaded machine can take seconds (a lost packet
/// still fails the test, just later). Checks for silence pass a short timeout of their own.
struct TestHost: SimulatorHost {
    let transport: any Transport
    var decoder = SPPStreamDecoder()
    var pushes: [Packet] = []
    private var ready: [Packet] = []

    init(_ transport: any Transport) { self.transport = transport }

    func send(_ packet: Packet) async throws {
        try await transport.send(SPPFraming.encode(packet))
    }

    /// The next packet (reply or push), or nil when none arrives within `timeout` or the link closed.
    mutating func next(timeout: Duration = .seconds(30)) async throws -> Packet? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if !ready.isEmpty { return ready.removeFirst() }
            if let p = decoder.next() { return p }
            let left = deadline - ContinuousClock.now
            guard left > .zero, let chunk = try await Self.receive(transport, timeout: left) else { return nil }
            decoder.append(chunk)
        }
    }

    /// The next push; replies met on the way are kept for `next`.
    mutating func nextPush(timeout: Duration = .seconds(30)) async throws -> Packet? {
        if let k = pushes.indices.first {
            return pushes.remove(at: k)
        }
        let deadline = ContinuousClock.now + timeout
        var skipped: [Packet] = []
        defer { ready.append(contentsOf: skipped) }
        while let p = try await next(timeout: deadline - ContinuousClock.now) {
            if p.isPush { return p }
            skipped.append(p)
        }
        return nil
    }

    /// Sends `request` and returns its reply.
    mutating func request(_ request: Packet, timeout: Duration = .seconds(30),
                          sourceLocation: SourceLocation = #_sourceLocation) async throws -> Packet {
        let reply = try await self.reply(to: request, timeout: timeout)
        #expect(reply.header.param0 == request.header.param0, sourceLocation: sourceLocation)
        return reply
    }

    /// One chunk, or nil after `timeout` (or when the link closed).
    static func receive(_ transport: any Transport, timeout: Duration) async throws -> [UInt8]? {
        try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                do {
                    return try await transport.receive()
                } catch let error as TransportError where error.code == .closed {
                    return nil
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }
}

/// A fresh temporary directory (under the test process's temporary root), emptied and removed when it goes away.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init() throws {
        path = try TestSupport.TemporaryDirectory.make("tuneup-sim-test")
    }

    /// The entries of the directory (names only).
    func entries() -> [String] { POSIX.directoryEntries(path)?.sorted() ?? [] }

    deinit {
        for name in entries() { unlink(path + "/" + name) }
        rmdir(path)
    }
}

/// Writes `text` to `path` (test setup only; blocking is fine here).
func writeFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw TestFailure("cannot create \(path)") }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
        throw TestFailure("cannot write \(path)")
    }
}

/// Reads `path` as text (test checks only).
func readFile(_ path: String) throws -> String {
    guard let bytes = try FileIO.readFile(path) else { throw TestFailure("\(path) does not exist") }
    return String(decoding: bytes, as: UTF8.self)
}
