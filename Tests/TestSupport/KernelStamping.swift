import Transport

/// The kernel's receive timestamps on loopback, once they are on.
///
/// Right after the first timestamping socket of the system opens, the kernel turns stamping on in the background and
/// until then stamps a datagram when it is read, not when it arrives. A test that compares a receive time with clock
/// reads around the send first waits here until a datagram is stamped during its send.
public enum KernelStamping {
    public struct NotOn: Error, CustomStringConvertible {
        public var description: String { "the kernel stamped none of 1000 datagrams during its send" }
    }

    /// Returns once a loopback datagram's kernel receive time lies between clock reads around its `sendto`.
    public static func waitUntilOn() async throws {
        let receiver = try UDPSocket.bind(host: "127.0.0.1", port: 0, receiveTimestamps: true)
        let sender = try UDPSocket.bind(host: "127.0.0.1", port: 0)
        defer { receiver.close(); sender.close() }
        for _ in 0..<1000 {
            let before = monotonicNanoseconds()
            guard try sender.trySend(toHost: "127.0.0.1", port: receiver.localPort, { [0] }) else { continue }
            let after = monotonicNanoseconds()
            if let at = try await receiver.receive().receivedAt, before <= at, at <= after { return }
        }
        throw NotOn()
    }
}
