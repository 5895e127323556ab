import Glibc
import Testing
import Transport

/// Kernel receive timestamps on UDP sockets (`receiveTimestamps`, clock sync of protocol version 4).
@Suite("UDP receive timestamps")
struct UDPTimestampTests {
    static func monotonic() -> UInt64 { monotonicNanoseconds() }

    /// On loopback the kernel takes a datagram in during the sender's `sendto`: its receive time, converted to
    /// CLOCK_MONOTONIC, lies between a clock read before the send and one after it — however late it is read.
    /// (Right after the first timestamping socket of the system opens, the kernel turns stamping on in the
    /// background, and until then stamps a datagram when it is read: the test waits for stamping to be on.)
    @Test func aDatagramsReceiveTimeLiesBetweenTheReadsAroundItsSend() async throws {
        let receiver = try UDPSocket.bind(host: "127.0.0.1", port: 0, receiveTimestamps: true)
        let sender = try UDPSocket.bind(host: "127.0.0.1", port: 0)
        defer { receiver.close(); sender.close() }
        /// One datagram: whether its receive time lies within the reads around its send, and a description.
        func exchange(_ k: Int) async throws -> (inside: Bool, description: String) {
            let before = Self.monotonic()
            #expect(try sender.trySend(toHost: "127.0.0.1", port: receiver.localPort) { [UInt8(k % 256)] })
            let after = Self.monotonic()
            let datagram = try await receiver.receive()
            let readAt = Self.monotonic()
            #expect(datagram.bytes == [UInt8(k % 256)] && datagram.port == sender.localPort)
            let at = try #require(datagram.receivedAt)
            // Whenever the kernel stamped it: not before it was sent, not after it was read.
            #expect(before <= at && at <= readAt, "received at \(at), sent at \(before), read at \(readAt)")
            return (before <= at && at <= after, "received at \(at), sent within \(before)...\(after)")
        }
        var attempts = 0
        while try await !exchange(attempts).inside {
            attempts += 1
            try #require(attempts < 1000, "no datagram was stamped during its send")
        }
        for k in 0..<5 {
            let (inside, description) = try await exchange(k)
            #expect(inside, "\(description)")
        }
    }

    /// Without `receiveTimestamps` a datagram has no receive time; `trySend` calls its builder just before sending.
    @Test func withoutTimestampsThereIsNoReceiveTime() async throws {
        let receiver = try UDPSocket.bind(host: "127.0.0.1", port: 0)
        let sender = try UDPSocket.bind(host: "127.0.0.1", port: 0)
        defer { receiver.close(); sender.close() }
        var built = 0
        #expect(try sender.trySend(toHost: "127.0.0.1", port: receiver.localPort) { built += 1; return [7] })
        #expect(built == 1)
        let datagram = try await receiver.receive()
        #expect(datagram.bytes == [7] && datagram.receivedAt == nil)
        sender.close()
        #expect(throws: TransportError.self) { try sender.trySend(toHost: "127.0.0.1", port: receiver.localPort) { [7] } }
    }
}
