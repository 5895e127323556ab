/// Something that hands out incoming links: a TCP listener, a pseudo-terminal, an RFCOMM listener, a USB gadget.
/// Servers (the simulator) accept from any of them the same way.
public protocol TransportListener: Sendable {
    /// Where clients reach this listener, in `DeviceAddress` syntax where there is one (`tcp:127.0.0.1:4100`,
    /// `serial:/dev/pts/3`, `bt:00:AA:01:00:00:00:3`, `usb:1209:0001:SERIAL`).
    var endpoint: String { get }
    /// Waits for the next link. Throws `TransportError(.closed)` after `close()`, or `CancellationError`.
    func accept() async throws -> any Transport
    /// Stops accepting; idempotent.
    func close()
}

extension TCPListener: TransportListener {
    public var endpoint: String { boundAddress.description }
}

extension PseudoTerminal: TransportListener {
    public var endpoint: String { "serial:" + slavePath }
}
