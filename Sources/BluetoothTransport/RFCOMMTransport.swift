import CBluetooth
import Glibc
import Logging
import Support
import Transport

/// RFCOMM client connections: a byte stream to a Bluetooth device (SPP framing goes above it, as on any stream).
///
/// Connections are `FileDescriptorTransport`s over non-blocking RFCOMM sockets (framing `.byteStream`); their
/// `peerDescription` is `bt:AA:BB:CC:DD:EE:FF:CHANNEL` with the channel actually used.
public enum RFCOMMTransport {
    /// Connects to RFCOMM `channel` on `address`; with no channel, the channel of the device's Serial Port service
    /// (UUID 0x1101), found through SDP first.
    ///
    /// - Parameters:
    ///   - address: the remote device.
    ///   - channel: RFCOMM channel 1...30, or nil to look the SPP channel up with SDP.
    ///   - adapter: the local adapter to connect from, `hciN` or its address (nil: the kernel picks a route, i.e. the
    ///     first adapter that is up). The lookup and the connection both leave from it.
    ///   - timeout: limit for the whole operation (adapter lookup, SDP, paging and the RFCOMM connect).
    ///   - logger: connection progress at `.debug`, and the transport's traffic at `.trace`.
    /// - Returns: the connected transport, which owns the socket.
    /// - Throws: `TransportError` with a one-line message "cannot connect to bt:…: REASON":
    ///   `.unsupported` (no AF_BLUETOOTH in this kernel: "no Bluetooth support in this kernel (AF_BLUETOOTH
    ///   unavailable)"), `.invalidAddress` (bad adapter name or channel), `.notFound` (adapter absent or down; device
    ///   not in range or not connectable; no SPP service), `.connectionRefused` ("no service on RFCOMM channel N", or
    ///   no SDP server), `.timedOut`, `.permissionDenied`, `.busy`, `.io` — or `CancellationError`.
    ///
    /// Nothing here blocks a thread of the cooperative pool: the connect is non-blocking and its completion is waited
    /// for on the I/O reactor, which the timeout and cancellation end at once; SDP's blocking library calls run on the
    /// blocking executor. No descriptor outlives a failed or cancelled call.
    public static func connect(
        to address: BluetoothAddress, channel: UInt8?, adapter: String? = nil,
        timeout: Duration = .seconds(10), logger: Logger? = nil
    ) async throws -> any Transport {
        let display = DeviceAddress.bluetooth(address: address, channel: channel).description
        let context = "cannot connect to \(display)"
        if let channel, !(1...30).contains(channel) {
            throw TransportError(.invalidAddress, "\(context): RFCOMM channel \(channel) is out of range (1...30)")
        }
        let selector = try BluetoothConnect.selector(adapter, context: context)
        return try await withDeadline(
            timeout,
            late: { TransportError(
                .timedOut, "\(context): timed out after \(timeout.shortDescription) (is the device on, in range and connectable?)") },
            discard: { transport in await transport.close() }
        ) {
            var local: bdaddr_t?
            if let selector {
                let chosen = try BluetoothConnect.upAdapter(selector, context: context)
                local = chosen.address.kernelAddress
                logger?.debug("connecting to \(display) from \(chosen.name) (\(chosen.address))")
            }
            let resolved: UInt8
            if let channel {
                resolved = channel
            } else {
                resolved = try await SDP.findSerialPortChannel(on: address, from: local, context: context, logger: logger)
            }
            return try await open(address, channel: resolved, from: local, context: context, logger: logger)
        }
    }

    /// Creates the socket, binds it to `local` (when given), connects without blocking and adopts the descriptor.
    static func open(
        _ address: BluetoothAddress, channel: UInt8, from local: bdaddr_t?, context: String, logger: Logger?
    ) async throws -> any Transport {
        let peer = DeviceAddress.bluetooth(address: address, channel: channel).description
        let started = ContinuousClock.now
        // Binding to the adapter's address (channel 0) picks the adapter the connection leaves from.
        let source = local.map { RFCOMMSocketAddress(address: $0, channel: 0) }
        let remote = RFCOMMSocketAddress(address: address.kernelAddress, channel: channel)
        let fd = try await BluetoothConnect.connectedSocket(
            type: Int32(SOCK_STREAM.rawValue), proto: BTPROTO_RFCOMM,
            bind: source.map { source in { fd in source.withSockaddr { Glibc.bind(fd, $0, $1) } } },
            connect: { fd in remote.withSockaddr { Glibc.connect(fd, $0, $1) } },
            socketFailure: { BluetoothErrors.socketError($0, context: context) },
            failure: { BluetoothErrors.connectError($0, address: address, channel: channel, context: context) })
        logger?.debug("connected to \(peer) in \((ContinuousClock.now - started).shortDescription)")
        return try FileDescriptorTransport(adopting: fd, peerDescription: peer, logger: logger)
    }
}
