import CBluetooth
import Glibc
import Logging
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
    /// Nothing here blocks a thread of the cooperative pool: the connect is non-blocking and completes on a dedicated
    /// thread, which the timeout and cancellation wake at once; SDP runs on dedicated threads. No descriptor outlives
    /// a failed or cancelled call.
    public static func connect(
        to address: BluetoothAddress, channel: UInt8?, adapter: String? = nil,
        timeout: Duration = .seconds(10), logger: Logger? = nil
    ) async throws -> any Transport {
        let display = DeviceAddress.bluetooth(address: address, channel: channel).description
        let context = "cannot connect to \(display)"
        if let channel, !(1...30).contains(channel) {
            throw TransportError(.invalidAddress, "\(context): RFCOMM channel \(channel) is out of range (1...30)")
        }
        let selector: AdapterSelector?
        do {
            selector = try adapter.map { name throws(TransportError) in try AdapterSelector(parsing: name) }
        } catch {
            throw TransportError(.invalidAddress, "\(context): \(error.message)")
        }
        return try await Timeouts.run(
            limit: timeout,
            timeoutError: TransportError(
                .timedOut, "\(context): timed out after \(timeout.shortDescription) (is the device on, in range and connectable?)"),
            discard: { transport in await transport.close() }
        ) {
            var local: bdaddr_t?
            if let selector {
                let chosen = try BluetoothAdapters.adapter(selector, context: context)
                guard chosen.isUp else {
                    throw TransportError(.notFound, "\(context): adapter \(chosen.name) is down (bring it up: hciconfig \(chosen.name) up)")
                }
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
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_BLUETOOTH, type, BTPROTO_RFCOMM)
        guard fd >= 0 else { throw BluetoothErrors.socketError(errno, context: context) }
        var handedOver = false
        defer { if !handedOver { POSIX.close(fd) } }

        if let local {
            // Binding to the adapter's address (channel 0) picks the adapter the connection leaves from.
            let source = RFCOMMSocketAddress(address: local, channel: 0)
            guard source.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0 else {
                throw BluetoothErrors.connectError(errno, address: address, channel: channel, context: context)
            }
        }
        let started = ContinuousClock.now
        let remote = RFCOMMSocketAddress(address: address.kernelAddress, channel: channel)
        if remote.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
            let e = errno
            guard e == EINPROGRESS || e == EINTR || e == EAGAIN else {
                throw BluetoothErrors.connectError(e, address: address, channel: channel, context: context)
            }
            let wake = try WakeSignal()
            defer { wake.close() }
            let outcome = try await BluetoothThread.wait(for: Int16(POLLOUT), on: fd, wake: wake, name: "tuneup-rfcomm")
            if outcome == .woken { throw CancellationError() }
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) != 0 { pending = errno }
            if pending != 0 {
                throw BluetoothErrors.connectError(pending, address: address, channel: channel, context: context)
            }
        }
        handedOver = true
        logger?.debug("connected to \(peer) in \((ContinuousClock.now - started).shortDescription)")
        return try FileDescriptorTransport(adopting: fd, peerDescription: peer, logger: logger)
    }
}
