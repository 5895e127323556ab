import CBluetooth
import Support
import Glibc
import Logging
import Synchronization
import Transport

/// A listening RFCOMM socket that accepts connections as `Transport`s: the server side of `bt:` links (the
/// simulated headset's `--rfcomm CHANNEL [--adapter hciN]`).
///
/// Contract:
/// - `bind` listens on `channel` (1...30; 0 picks a free channel) of one adapter, or of every adapter when none is
///   named. `endpoint` is `bt:ADAPTERADDR:CHANNEL` with the channel actually bound; without a named adapter the
///   address is that of the first adapter that is up (00:00:00:00:00:00 when none is).
/// - With `registerSPP`, an SPP service record (UUID 0x1101, RFCOMM `channel`) is registered with the local SDP server
///   (bluetoothd started with `--compat`, socket /run/sdp) so that clients can find the channel through SDP. When no
///   SDP server is reachable the listener still works, and says so in one `.notice` log line (clients must then name
///   the channel). The record is removed on `close()`, and in any case when the process ends (it is tied to the
///   session with bluetoothd).
/// - `accept()` waits on the I/O reactor (no thread of its own, nothing blocking a cooperative-pool thread), is
///   cancellable (a connection arriving later stays queued for the next `accept()`), and may be called from several
///   tasks. Accepted connections are non-blocking `FileDescriptorTransport`s (`.byteStream`) with
///   `peerDescription` `bt:PEERADDR`.
/// - `close()` is idempotent and makes pending and later `accept()` calls throw `TransportError(.closed)`; accepted
///   connections stay open. The socket is released once no `accept()` is still waking up.
public final class RFCOMMListener: TransportListener, Sendable {
    /// Where clients reach this listener: `bt:ADAPTERADDR:CHANNEL`.
    public let endpoint: String
    /// The RFCOMM channel bound (the free one picked when 0 was asked for).
    public let channel: UInt8
    /// Whether an SPP record for this channel is registered with the local SDP server.
    public var isServiceRecordRegistered: Bool { registration != nil }

    private let listening: ListeningSocket
    private let registration: SDPRegistration?
    private let logger: Logger?

    init(adoptingListeningSocket fd: Int32, endpoint: String, channel: UInt8, registration: SDPRegistration?, logger: Logger?) {
        self.listening = ListeningSocket(adopting: fd)
        self.endpoint = endpoint
        self.channel = channel
        self.registration = registration
        self.logger = logger
    }

    deinit { close() }

    /// Listens for RFCOMM connections.
    ///
    /// - Parameters:
    ///   - adapter: `hciN` or the adapter's address; nil listens on every adapter (BDADDR_ANY).
    ///   - channel: 1...30, or 0 for any free channel.
    ///   - registerSPP: register an SPP record for the channel with the local SDP server when one is reachable.
    ///   - serviceName: the record's service name.
    ///   - backlog: listen(2) backlog.
    ///   - logger: `.debug` for listening/accepting, `.notice` when no SDP server is reachable, `.warning` when the
    ///     adapter cannot be connected to (down, or page scan off), `.trace` for the traffic of accepted connections.
    /// - Throws: `TransportError` "cannot listen on bt:…: REASON": `.unsupported` ("no Bluetooth support in this kernel
    ///   (AF_BLUETOOTH unavailable)"), `.invalidAddress` (bad adapter or channel), `.notFound` (no such adapter),
    ///   `.busy` (channel in use), `.permissionDenied`, `.io` — or `CancellationError` (the socket is then closed and a
    ///   record registered meanwhile removed).
    public static func bind(
        adapter: String?, channel: UInt8, registerSPP: Bool = true, serviceName: String = "Tuneup Headset",
        backlog: Int32 = 8, logger: Logger? = nil
    ) async throws -> RFCOMMListener {
        let requested = "bt:\(adapter ?? "any"):\(channel)"
        var context = "cannot listen on \(requested)"
        guard channel <= 30 else {
            throw TransportError(.invalidAddress, "\(context): RFCOMM channel \(channel) is out of range (1...30, or 0 for any free channel)")
        }
        let selector: AdapterSelector?
        do {
            selector = try adapter.map { name throws(TransportError) in try AdapterSelector(parsing: name) }
        } catch {
            throw TransportError(.invalidAddress, "\(context): \(error.message)")
        }

        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_BLUETOOTH, type, BTPROTO_RFCOMM)
        guard fd >= 0 else { throw BluetoothErrors.socketError(errno, context: context) }
        var handedOver = false
        defer { if !handedOver { POSIX.close(fd) } }

        var chosen: BluetoothAdapter?
        if let selector {
            chosen = try BluetoothAdapters.adapter(selector, context: context)
        }
        let local = chosen?.address.kernelAddress ?? BluetoothAddress.anyKernelAddress
        let shown = chosen ?? BluetoothAdapters.defaultAdapter()
        context = "cannot listen on bt:\(shown.map { $0.address.description } ?? "00:00:00:00:00:00"):\(channel)"
        guard RFCOMMSocketAddress(address: local, channel: channel).withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0,
              listen(fd, backlog) == 0 else {
            throw listenError(errno, channel: channel, adapter: chosen, context: context)
        }
        let bound = boundChannel(fd) ?? channel
        let address = shown?.address.description ?? "00:00:00:00:00:00"
        let endpoint = "bt:\(address):\(bound)"
        logger?.debug("listening on \(endpoint) (RFCOMM\(chosen.map { ", adapter \($0.name)" } ?? ", every adapter"))")
        if let chosen {
            if !chosen.isUp {
                logger?.warning("adapter \(chosen.name) is down: nobody can connect until it is up (hciconfig \(chosen.name) up)")
            } else if !chosen.isConnectable {
                logger?.warning("adapter \(chosen.name) does not page-scan: nobody can connect (hciconfig \(chosen.name) piscan)")
            }
        }

        var registration: SDPRegistration?
        if registerSPP {
            registration = try await registerRecord(channel: bound, serviceName: serviceName, endpoint: endpoint, logger: logger)
        }
        handedOver = true
        return RFCOMMListener(adoptingListeningSocket: fd, endpoint: endpoint, channel: bound, registration: registration, logger: logger)
    }

    /// The channel the kernel bound (getsockname), nil if it cannot tell.
    private static func boundChannel(_ fd: Int32) -> UInt8? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutableBytes(of: &storage) { raw -> UInt8? in
            guard let base = raw.baseAddress,
                  getsockname(fd, base.assumingMemoryBound(to: sockaddr.self), &length) == 0 else { return nil }
            return RFCOMMSocketAddress(UnsafeRawBufferPointer(rebasing: raw[..<min(Int(length), raw.count)]))?.channel
        }
    }

    private static func listenError(_ e: Int32, channel: UInt8, adapter: BluetoothAdapter?, context: String) -> TransportError {
        switch e {
        case EADDRINUSE:
            let on = adapter.map { " on \($0.name)" } ?? ""
            return TransportError(.busy, "\(context): RFCOMM channel \(channel) is already in use\(on)", errno: e)
        case EACCES, EPERM:
            return TransportError(.permissionDenied, "\(context): permission denied", errno: e)
        case EADDRNOTAVAIL, ENODEV:
            return TransportError(.notFound, "\(context): the adapter is not available", errno: e)
        case EAFNOSUPPORT:
            return TransportError(.unsupported, "\(context): \(BluetoothErrors.noKernelSupport)", errno: e)
        default:
            return TransportError(.io, "\(context): \(POSIX.describe(e))", errno: e)
        }
    }

    /// Registers the SPP record on a dedicated thread; nil (after a log line) when there is no SDP server. Throws only
    /// `CancellationError` (a registration that completes afterwards is undone).
    private static func registerRecord(channel: UInt8, serviceName: String, endpoint: String, logger: Logger?) async throws -> SDPRegistration? {
        guard let record = SDP.makeSerialPortRecord(
            channel: channel, name: serviceName, provider: "Tuneup", description: "LightX over the Serial Port Profile") else {
            logger?.notice("cannot build an SPP service record (out of memory): clients must name the channel (\(endpoint))")
            return nil
        }
        let result: Result<SDPRegistration, Int32Error>
        do {
            result = try await Blocking.run("tuneup-sdp-reg", discard: { (r: Result<SDPRegistration, Int32Error>) in
                if case .success(let registration) = r { registration.unregister() }
            }) { SDP.register(record) }
        } catch let error as TransportError {
            logger?.notice("SPP record not registered (\(error)): clients must name the channel (\(endpoint))")
            return nil
        }
        switch result {
        case .success(let registration):
            logger?.debug("registered the SPP record (handle 0x\(String(registration.record.handle, radix: 16))) for RFCOMM channel \(channel)")
            return registration
        case .failure(let e):
            let why: String
            switch e.code {
            case ENOENT, ECONNREFUSED:
                why = "no SDP server is reachable (bluetoothd --compat provides /run/sdp)"
            case EACCES, EPERM:
                why = "the SDP server's socket /run/sdp is not accessible (permission denied)"
            default:
                why = "the SDP server refused the record (\(POSIX.describe(e.code)))"
            }
            logger?.notice("SPP record not registered: \(why); clients must name the channel (\(endpoint))")
            return nil
        }
    }

    private var closedError: TransportError {
        TransportError(.closed, "the listener on \(endpoint) is closed")
    }

    /// The number of `accept()` calls waiting for a connection on the reactor now (for tests and diagnostics).
    var pendingAccepts: Int { listening.pendingWaits }

    /// Waits for the next connection. Throws `.closed` after `close()`, `CancellationError` when cancelled, `.io` for
    /// resource exhaustion.
    public func accept() async throws -> any Transport {
        while true {
            try Task.checkCancellation()
            let next = try listening.acceptNext(endpoint: endpoint, closedError: closedError) { address in
                RFCOMMSocketAddress(address).flatMap { BluetoothAddress(kernelAddress: $0.address) }.map { "bt:\($0)" } ?? "bt:unknown"
            }
            guard let (fd, peer) = next else {
                _ = try await listening.waitReadable(closedError: closedError)
                continue
            }
            logger?.debug("accepted \(peer) on \(endpoint)")
            return try FileDescriptorTransport(adopting: fd, peerDescription: peer, logger: logger)
        }
    }

    /// Stops listening: wakes pending `accept()`s (they throw `.closed`), releases the socket, and removes the SPP
    /// record (on a dedicated thread: it is a round trip to bluetoothd). Idempotent.
    public func close() {
        guard listening.close() else { return }
        if let registration {
            do {
                try DedicatedThread.spawn(name: "tuneup-sdp-unreg") { registration.unregister() }
            } catch {
                registration.session.close()  // bluetoothd drops the record with the session
            }
        }
        logger?.debug("stopped listening on \(endpoint)")
    }
}
