import CLibUSB
import LightX
import Logging
import Support
import Synchronization
import Transport

/// A LightX headset on USB: raw LightX packets over HID feature reports on endpoint 0 (design contract "LightX over
/// HID feature reports", sheet §1.7), through libusb.
///
/// Contract (in addition to `Transport`'s):
/// - `framing` is `.packets`. `send(_:)` takes exactly one raw packet (header + buffer, as `RawPacketCodec.encode`
///   makes it) and performs SET_REPORT 0xF1 (only when the buffer flag is set and param1 > 0) then SET_REPORT 0xF0.
///   Concurrent sends are serialised. A malformed packet (shorter than a header, buffer length ≠ param1, over 256
///   buffer bytes) is refused with `.io` before anything is sent.
/// - `receive()` returns one raw packet per call. It polls GET_REPORT 0xF0 (then 0xF1 for an announced buffer) per
///   `PollSchedule` while requests are outstanding (counted from `send`, one fewer per reply that is not a push and
///   not Pending), and every `Options.idlePollInterval` otherwise, for pushes. A count that sees no reply for 10 s
///   is dropped (the device lost those requests; the session's own timeouts report them).
/// - All control transfers are asynchronous libusb transfers in the process's one libusb context, whose events one
///   thread handles for every open device; nothing blocks Swift's cooperative pool.
/// - Cancellation: a `receive()` sleeping between polls throws `CancellationError` at once. A control transfer already
///   in flight is allowed to finish (normally 1-5 ms, at most `controlTimeout`) instead of being unlinked halfway,
///   which would tear the request or lose a reply the device has already dequeued; then the call throws
///   `CancellationError`, except that a packet the device handed over is returned (or kept for the next `receive()`),
///   and a `send` whose header report went out returns normally (the packet was delivered and counts as outstanding).
///   No further transfer is started for a cancelled task.
/// - Errors are one-line `TransportError`s: `.closed` "device unplugged" (LIBUSB_ERROR_NO_DEVICE, or a transfer
///   error after which the device left the bus within `unplugGrace`; every later call fails the same way), `.io` "the device stalled report 0xF0 (GET_REPORT)" (a stall), `.io` "short report
///   0xF0: got 5 of 14 bytes" / "short report 0xF1: ...", `.timedOut` when a control transfer takes longer than
///   `Options.controlTimeout`.
/// - The kernel's HID driver is detached from interface 0 while the transport is open and re-attached by `close()`
///   (or when the transport is deinitialised without `close()`). `HIDRawTransport` reaches the same device without
///   detaching it; both carry the reports through one implementation of this contract (`FeatureReportLink`).
public final class USBHIDTransport: Transport {
    /// How the transport finds the device and polls it.
    public struct Options: Sendable, Hashable {
        /// Fixed interval before every reply poll (the vendor's host uses 50 ms); nil: adaptive (`PollSchedule`).
        public var pollInterval: Duration?
        /// How often to poll for pushes while no request is outstanding; nil or zero: never.
        public var idlePollInterval: Duration?
        /// Limit for each control transfer.
        public var controlTimeout: Duration
        /// How long `open` keeps rescanning (a fresh libusb context every `rescanInterval`) until a matching device
        /// appears; zero: fail at once with `.notFound`. Used when reconnecting after re-enumeration.
        public var wait: Duration
        /// The known headsets, for partner product ids (application ↔ bootloader).
        public var knownDevices: USBKnownDevices

        /// Creates options; the defaults are adaptive polling, idle polling every 250 ms, 2 s per control transfer,
        /// no waiting, and the simulator's ids only.
        public init(pollInterval: Duration? = nil, idlePollInterval: Duration? = .milliseconds(250),
                    controlTimeout: Duration = .seconds(2), wait: Duration = .zero,
                    knownDevices: USBKnownDevices = .standard) {
            self.pollInterval = pollInterval
            self.idlePollInterval = idlePollInterval
            self.controlTimeout = controlTimeout
            self.wait = wait
            self.knownDevices = knownDevices
        }
    }

    /// Time between scans while waiting for a device.
    public static let rescanInterval: Duration = .milliseconds(50)
    /// How long a failing `libusb_open` (a device still enumerating) is retried.
    public static let openRetryWindow: Duration = .seconds(1)

    /// See `Transport.peerDescription`: the address as it was opened, e.g. `usb:1209:0001`.
    public let peerDescription: String
    /// Always `.packets`.
    public let framing: LinkFraming = .packets
    /// Where the opened device is.
    public let location: USBDeviceLocation
    /// The options the transport was opened with.
    public let options: Options

    private let connection: USBConnection
    /// LightX in feature reports (shared with `HIDRawTransport`); its channel is `LibUSBReportChannel`.
    private let link: FeatureReportLink

    private init(connection: USBConnection, location: USBDeviceLocation, deviceNumber: UInt8, peer: String, options: Options,
                 logger: Logger?) {
        self.connection = connection
        self.location = location
        self.peerDescription = peer
        self.options = options
        let channel = LibUSBReportChannel(connection: connection, location: location, deviceNumber: deviceNumber, peer: peer,
                                          controlTimeout: options.controlTimeout)
        self.link = FeatureReportLink(peer: peer, channel: channel, pollInterval: options.pollInterval,
                                      idlePollInterval: options.idlePollInterval, logger: logger)
    }

    deinit {
        link.wakeForGood()
        connection.shutdown()
    }

    /// Opens the device `address` names (`usb:VID:PID[:SERIAL]` or `usb:BUS-PORT[.PORT...]`; see `USBDeviceFilter`),
    /// detaches the kernel HID driver from interface 0 and claims it.
    ///
    /// Each attempt scans with a fresh libusb context on a dedicated thread. A device that fails to open for a moment
    /// (still enumerating) is retried for up to `openRetryWindow`; with `options.wait` > 0, scans repeat every
    /// `rescanInterval` until the device appears or the wait is over.
    ///
    /// - Throws: `TransportError` — `.notFound` saying what was looked for, `.invalidAddress` for a non-USB address or
    ///   several matching devices (listed), `.permissionDenied` pointing at tools/udev/, `.busy` when another program
    ///   holds the interface, `.unsupported` when libusb cannot start or the device's interface 0 is not HID — or
    ///   `CancellationError`.
    public static func open(_ address: DeviceAddress, options: Options = Options(), logger: Logger? = nil) async throws -> USBHIDTransport {
        let filter = try USBDeviceFilter(address: address, known: options.knownDevices)
        let peer = address.description
        let clock = ContinuousClock()
        let waitDeadline = clock.now + max(.zero, options.wait)
        var retryDeadline: ContinuousClock.Instant?
        while true {
            try Task.checkCancellation()
            let retryAccess = options.wait > .zero
            let attempt = try await Blocking.run("tuneup-usb-open", discard: { $0.discard(peer: peer, logger: logger) }) {
                USBOpen.attempt(filter: filter, peer: peer, retryAccess: retryAccess, logger: logger)
            }
            switch attempt {
            case .opened(let opened):
                let connection = try USBConnection(opened, peer: peer, logger: logger)
                return USBHIDTransport(connection: connection, location: opened.location, deviceNumber: opened.address, peer: peer,
                                       options: options, logger: logger)
            case .notFound(let seen):
                guard clock.now < waitDeadline else { throw filter.notFoundError(seen: seen, waited: options.wait) }
            case .retry(let error):
                let deadline = retryDeadline ?? clock.now + openRetryWindow
                retryDeadline = deadline
                guard clock.now < max(deadline, waitDeadline) else { throw error }
                logger?.debug("\(peer): \(error.message); retrying")
            case .failed(let error):
                throw error
            }
            try await Task.sleep(for: rescanInterval)
        }
    }

    // MARK: Sending and receiving

    /// See `Transport.send(_:)`, `Transport.receive()` and the type's contract (`FeatureReportLink`'s, as
    /// `HIDRawTransport`'s). `outstandingRequests`: the requests sent and not yet answered (diagnostics and tests).
    public func send(_ bytes: [UInt8]) async throws { try await link.send(bytes) }
    public func receive() async throws -> [UInt8] { try await link.receive() }
    public var outstandingRequests: Int { link.outstandingRequests }

    // MARK: Closing

    /// See `Transport.close()`: fails pending calls with `.closed`, cancels their transfers, then releases the
    /// interface, re-attaches the kernel driver and closes the device (waiting for all of it, off the pool).
    public func close() async {
        await link.close { await connection.shutdownAndWait() }
    }
}

/// The libusb side of `FeatureReportLink`: one asynchronous control transfer per report, in the process's libusb
/// context. Internal.
struct LibUSBReportChannel: FeatureReportChannel {
    let connection: USBConnection
    let location: USBDeviceLocation
    /// The device number the device had when opened (a re-enumerated device gets another).
    let deviceNumber: UInt8
    let peer: String
    let controlTimeout: Duration

    /// How long a failed transfer waits to see whether the device was unplugged.
    static let unplugGrace: Duration = .milliseconds(500)

    func setReport(_ report: [UInt8], id: UInt8) async throws {
        _ = try await transfer(.setReport(report))
    }

    func getReport(_ id: UInt8, length: Int) async throws -> [UInt8] {
        try await transfer(.getReport(id, length: length))
    }

    private func closedError() -> TransportError {
        TransportError(.closed, "\(peer) is closed")
    }

    /// One control transfer: IN data (or empty for OUT), or a `TransportError`/`CancellationError`.
    private func transfer(_ request: ControlRequest) async throws -> [UInt8] {
        let outcome = await connection.perform(request, timeout: controlTimeout)
        switch outcome {
        case let .completed(data, transferred):
            if !request.isIn && transferred < request.data.count {
                throw TransportError(.io, "\(peer): \(request.label) sent only \(transferred) of \(request.data.count) bytes")
            }
            return data
        case .cancelled:
            if connection.isStopping { throw closedError() }
            throw CancellationError()
        case .notSubmitted(let code):
            guard let code else { throw closedError() }
            throw LibUSBErrors.submitError(code, peer: peer, request: request.label)
        case .failed(let status):
            var error = LibUSBErrors.transferError(status, peer: peer, request: request.label,
                                                   reportID: request.reportID, timeout: controlTimeout)
            // Unplugging (or a gadget unbinding) fails the transfers in flight with protocol errors before the
            // kernel reports the device gone: look whether it went.
            if status == LIBUSB_TRANSFER_ERROR, await deviceVanished() {
                error = LibUSBErrors.unplugged(peer)
            }
            throw error
        }
    }

    /// Whether the device left the bus: watches its sysfs entry for up to `unplugGrace` (the kernel removes it a
    /// few milliseconds after the transfers fail). Reads small sysfs files only; never blocks on the device.
    private func deviceVanished() async -> Bool {
        let deadline = ContinuousClock.now + Self.unplugGrace
        while true {
            if !USBStrings.isStillAttached(location, address: deviceNumber) { return true }
            guard ContinuousClock.now < deadline else { return false }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return false }  // cancelled: unknown, say no
        }
    }
}

/// Hex of the first 512 bytes, for trace logs.
func usbHexDump(_ bytes: [UInt8]) -> String {
    var text = bytes.prefix(512).map(usbHex2).joined(separator: " ")
    if bytes.count > 512 { text += " ..." }
    return text
}
