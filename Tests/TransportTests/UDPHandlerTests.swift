import Glibc
import Synchronization
import Testing
import TestSupport
import Transport

/// `UDPSocket.handleDatagrams`: datagrams handed over on the I/O reactor's thread as they arrive (clock sync's
/// answering), each once and in order, with the sender's address and the kernel's receive time; nothing after close.
@Suite("UDP datagrams handled on the reactor")
struct UDPHandlerTests {
    @Test func everyDatagramIsHandedOverOnceInOrderUntilTheSocketCloses() async throws {
        let receiver = try UDPSocket.bind(host: "127.0.0.1", port: 0, receiveTimestamps: true)
        let sender = try UDPSocket.bind(host: "127.0.0.1", port: 0)
        defer { sender.close() }
        let received = Mutex<[UDPDatagram]>([])
        try receiver.handleDatagrams { datagram in received.withLock { $0.append(datagram) } }
        // Sent in bursts and one by one: a readiness that finds several waiting hands over every one.
        for k in 0..<3 { #expect(try sender.trySend(toHost: "127.0.0.1", port: receiver.localPort) { [UInt8(k)] }) }
        try await waitUntil("3 datagrams handled") { received.withLock { $0.count } >= 3 }
        for k in 3..<20 {
            #expect(try sender.trySend(toHost: "127.0.0.1", port: receiver.localPort) { [UInt8(k), 0xAB] })
            try await waitUntil("datagram \(k) handled") { received.withLock { $0.count } >= k + 1 }
        }
        let all = received.withLock { $0 }
        #expect(all.map { $0.bytes[0] } == (0..<20).map(UInt8.init))
        #expect(all.allSatisfy { $0.port == sender.localPort && $0.host == "127.0.0.1" && $0.receivedAt != nil })
        // Closed: no second handler can be installed, and what is sent now reaches nobody.
        receiver.close()
        #expect(throws: TransportError.self) { try receiver.handleDatagrams { _ in } }
        #expect(received.withLock { $0.count } == 20)
    }

    /// Only one receiver at a time: a handler on a socket that already has one is refused, not raced.
    @Test func aSecondHandlerIsRefused() throws {
        let socket = try UDPSocket.bind(host: "127.0.0.1", port: 0)
        defer { socket.close() }
        try socket.handleDatagrams { _ in }
        #expect(throws: TransportError.self) { try socket.handleDatagrams { _ in } }
    }
}
