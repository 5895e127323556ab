import Synchronization
import Testing
import TestSupport
import Transport
@testable import Simulator

/// A made-up device family, to prove `SimulatedDeviceServer` serves any `SimulatedDevice`: it answers every chunk it
/// receives with `N:` and the chunk, N counting the chunks answered over all links of the device.
actor EchoCounter: SimulatedDevice {
    nonisolated let deviceDescription = "echo counter"
    private(set) var answered = 0
    private(set) var linksServed = 0
    private(set) var shutDownCount = 0

    func serve(_ link: any Transport) async {
        linksServed += 1
        while let chunk = try? await link.receive() {
            answered += 1
            do { try await link.send(Array("\(answered):".utf8) + chunk) } catch { break }
        }
        await link.close()
    }

    func shutdown() async { shutDownCount += 1 }
}

/// Counts calls, from any task.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

@Suite struct DeviceServerTests {
    /// Sends `text` and reads until as many bytes as `expected` came back (a byte stream may split them).
    func exchange(_ link: any Transport, _ text: String, expecting expected: String) async throws {
        try await link.send(Array(text.utf8))
        var received: [UInt8] = []
        while received.count < expected.utf8.count { received += try await link.receive() }
        #expect(String(decoding: received, as: UTF8.self) == expected)
    }

    @Test func servesAMadeUpDeviceOverTCPAndInProcessWithTheSameServer() async throws {
        try await withTimeLimit {
            let device = EchoCounter()
            let closed = Counter()
            let server = try SimulatedDeviceServer(devices: [device]) { closed.increment() }
            let tcp = try await TCPListener.bind(host: "127.0.0.1", port: 0)
            let memory = InProcessListener(name: "echo")
            try server.attach(tcp, toDevice: 0)
            try server.attach(memory, toDevice: 0)
            #expect(server.endpoints == [tcp.endpoint, "memory:echo"])

            guard case .tcp(let host, let port) = try DeviceAddress(parsing: server.endpoints[0]) else {
                Issue.record("not a TCP endpoint: \(server.endpoints[0])")
                return
            }
            let overTCP = try await TCPTransport.connect(host: host, port: port)
            let inProcess = try memory.connect()
            try await exchange(overTCP, "ping", expecting: "1:ping")
            try await exchange(inProcess, "pong", expecting: "2:pong")
            let second = try memory.connect()
            try await exchange(second, "again", expecting: "3:again")
            #expect(await device.linksServed == 3)

            await server.shutdown()
            #expect(await device.shutDownCount == 1)
            #expect(closed.count == 1, "afterShutdown runs once the devices stopped")
            // Every link the server served has ended: the clients see them closed.
            for client in [overTCP, inProcess, second] {
                await #expect(throws: TransportError.self) { _ = try await client.receive() }
            }
            #expect(throws: TransportError.self) { _ = try memory.connect() }
        }
    }

    @Test func servesALinkMadeElsewhere() async throws {
        try await withTimeLimit {
            let device = EchoCounter()
            let server = try SimulatedDeviceServer(devices: [device])
            let (client, served) = InMemoryTransport.pair()
            let serving = try server.serve(link: served, onDevice: 0)
            try await exchange(client, "x", expecting: "1:x")
            await client.close()
            await serving.value
            #expect(await device.linksServed == 1)
            await server.shutdown()
        }
    }

    @Test func refusesBadDeviceCountsAndIndices() async throws {
        #expect(throws: SimulatorError.self) { _ = try SimulatedDeviceServer<EchoCounter>(devices: []) }
        let tooMany = (0...SimulatedDeviceServer<EchoCounter>.maxDevices).map { _ in EchoCounter() }
        #expect(throws: SimulatorError.self) { _ = try SimulatedDeviceServer(devices: tooMany) }
        let server = try SimulatedDeviceServer(devices: [EchoCounter()])
        let listener = InProcessListener()
        let error = #expect(throws: SimulatorError.self) { try server.attach(listener, toDevice: 1) }
        #expect(error?.message == "there is no device 1; this simulator has devices 0...0")
        listener.close()
        await server.shutdown()
    }

    @Test func aCancelledAcceptOnTheInProcessListenerReturnsAtOnce() async throws {
        try await withTimeLimit {
            let listener = InProcessListener()
            let accepting = Task { try await listener.accept() }
            try await waitUntil("the accept waits") { listener.hasPendingAccept }
            accepting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await accepting.value }
            // A link opened later is still accepted, and a close ends a pending accept.
            let client = try listener.connect()
            let accepted = try await listener.accept()
            try await client.send([7])
            #expect(try await accepted.receive() == [7])
            let pending = Task { try await listener.accept() }
            listener.close()
            await #expect(throws: TransportError.self) { _ = try await pending.value }
        }
    }
}
