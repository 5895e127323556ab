import Glibc
import Logging
import Support
import Synchronization
import Transport

/// A LightX headset through its hidraw node (`/dev/hidrawN`): LightX in HID feature reports (the same contract and
/// the same implementation as `USBHIDTransport`, `FeatureReportLink`), carried by the kernel's HIDIOCSFEATURE and
/// HIDIOCGFEATURE ioctls. The kernel's HID driver stays bound, so the headset's other HID functions (buttons) keep
/// working, and access without root is one udev rule on `SUBSYSTEM=="hidraw"` (tools/udev/).
///
/// Contract (in addition to `Transport`'s and `USBHIDTransport`'s framing, polling and counting):
/// - `framing` is `.packets`; the node is opened `O_RDWR | O_NONBLOCK | O_CLOEXEC`.
/// - Every ioctl runs on the transport's own `SerialLane` of the blocking executor, one at a time, never on Swift's
///   cooperative pool; `close()` closes the node on the same lane, after the ioctl in flight (so no other file can
///   take its descriptor number under it).
/// - Cancellation: no ioctl starts for a cancelled task; one in flight finishes (the kernel bounds a control
///   transfer at 5 s; normally 1-5 ms), as `USBHIDTransport`'s transfers do.
/// - Errors: opening — ENOENT `.notFound`, EACCES/EPERM `.permissionDenied` naming the udev rule, a node that is not
///   hidraw (HIDIOCGRAWINFO refused) `.unsupported`. Mid-session — ENODEV or ESHUTDOWN, or EIO/EPROTO after which the
///   node reports the device gone within `unplugGrace`, are `.closed` "device unplugged" (a re-enumeration: the
///   updater opens the address again); EPIPE is `.io` "the device stalled report 0xF0 (GET_REPORT)"; ETIMEDOUT
///   `.timedOut`; a short SET `.io`. `close()` is idempotent.
public final class HIDRawTransport: Transport {
    /// How the transport polls.
    public struct Options: Sendable, Hashable {
        /// Fixed interval before every reply poll; nil: adaptive (`PollSchedule`).
        public var pollInterval: Duration?
        /// How often to poll for pushes while no request is outstanding; nil or zero: never.
        public var idlePollInterval: Duration?

        public init(pollInterval: Duration? = nil, idlePollInterval: Duration? = .milliseconds(250)) {
            self.pollInterval = pollInterval
            self.idlePollInterval = idlePollInterval
        }
    }

    /// How long an ioctl error waits to see whether the device was unplugged.
    static let unplugGrace: Duration = .milliseconds(500)

    /// See `Transport.peerDescription`: the address as it was opened (`hidraw:/dev/hidraw0`, or the `usb:` address
    /// that found the node).
    public let peerDescription: String
    /// Always `.packets`.
    public let framing: LinkFraming = .packets
    /// The node's path.
    public let path: String
    /// The options the transport was opened with.
    public let options: Options

    private let file: HIDRawFile
    private let link: FeatureReportLink

    private init(file: HIDRawFile, path: String, peer: String, options: Options, logger: Logger?) {
        self.file = file
        self.path = path
        self.peerDescription = peer
        self.options = options
        self.link = FeatureReportLink(peer: peer, channel: HIDRawReportChannel(file: file, peer: peer), pollInterval: options.pollInterval,
                                      idlePollInterval: options.idlePollInterval, logger: logger)
    }

    deinit {
        link.wakeForGood()
        file.closeSoon()
    }

    /// Opens the hidraw node at `path`; `peer` names the link in messages (default `hidraw:PATH`).
    ///
    /// - Throws: `TransportError` — `.notFound` (no such node), `.permissionDenied` (with the udev hint),
    ///   `.unsupported` (not a hidraw node), `.io` — or `CancellationError`.
    public static func open(path: String, peer: String? = nil, options: Options = Options(), logger: Logger? = nil) async throws -> HIDRawTransport {
        let peer = peer ?? HIDRawAddress.address(path: path).description
        let result: Result<Int32, TransportError> = try await Blocking.run("tuneup-hidraw-open", discard: { result in
            if case .success(let fd) = result { Glibc.close(fd) }
        }) {
            openNode(path, peer: peer)
        }
        let fd = try result.get()
        logger?.debug("\(peer): opened \(path)")
        return HIDRawTransport(file: HIDRawFile(fd: fd, name: "tuneup-hidraw \(path)"), path: path, peer: peer, options: options, logger: logger)
    }

    /// Opens the node and checks that it is hidraw. Blocking (runs on the executor).
    static func openNode(_ path: String, peer: String) -> Result<Int32, TransportError> {
        let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(openError(errno, path: path, peer: peer)) }
        var info = [UInt8](repeating: 0, count: 8)
        let rc = info.withUnsafeMutableBytes { ioctl(fd, HIDRawIoctl.rawInfo, $0.baseAddress!) }
        if rc < 0 {
            let code = errno
            Glibc.close(fd)
            if code == ENODEV { return .failure(TransportError(.notFound, "cannot open \(peer) (\(path)): the device was unplugged", errno: code)) }
            return .failure(TransportError(.unsupported, "\(peer): \(path) is not a hidraw node (HIDIOCGRAWINFO: \(errorText(code)))", errno: code))
        }
        return .success(fd)
    }

    /// The error for a failed `open` of the node.
    static func openError(_ code: Int32, path: String, peer: String) -> TransportError {
        let what = "cannot open \(peer)" + (peer.hasSuffix(path) ? "" : " (\(path))")
        switch code {
        case ENOENT, ENXIO, ENODEV:
            return TransportError(.notFound, "\(what): no such hidraw node (`tuneup devices` lists the headsets and their nodes)", errno: code)
        case EACCES, EPERM:
            return TransportError(.permissionDenied, "\(what): permission denied; \(LibUSBErrors.permissionHint) (its hidraw line)", errno: code)
        case EBUSY:
            return TransportError(.busy, "\(what): the node is busy", errno: code)
        default:
            return TransportError(.io, "\(what): \(errorText(code))", errno: code)
        }
    }

    // MARK: Transport

    // `send`, `receive` and `outstandingRequests`: `FeatureReportLink`'s, as `USBHIDTransport`'s (its contract).
    public func send(_ bytes: [UInt8]) async throws { try await link.send(bytes) }
    public func receive() async throws -> [UInt8] { try await link.receive() }
    public var outstandingRequests: Int { link.outstandingRequests }

    /// See `Transport.close()`: fails pending calls with `.closed`, then closes the node after the ioctl in flight.
    /// The kernel's HID driver was never detached: nothing to re-attach.
    public func close() async {
        await link.close { await file.close() }
    }
}

/// The node's descriptor, used and closed only on its lane. Internal.
final class HIDRawFile: Sendable {
    /// An ioctl's result: its return value (bytes for the feature ioctls), the errno when negative, the buffer after.
    struct Outcome: Sendable {
        var result: Int32
        var error: Int32
        var buffer: [UInt8]
    }

    private let fd: Mutex<Int32>
    private let lane: SerialLane

    init(fd: Int32, name: String) {
        self.fd = Mutex(fd)
        self.lane = SerialLane(name)
    }

    /// Runs `ioctl(fd, request, buffer)` on the lane and waits for it; nil when the file is closed.
    func ioctl(_ request: UInt, _ buffer: [UInt8]) async throws -> Outcome? {
        try await lane.perform(unavailable: { TransportError(.io, "cannot run the hidraw ioctl: \($0.message)") }) { () throws(TransportError) -> Outcome? in
            let descriptor = self.fd.withLock { $0 }
            guard descriptor >= 0 else { return nil }
            var bytes = buffer
            while true {
                let rc = bytes.withUnsafeMutableBytes { Glibc.ioctl(descriptor, request, $0.baseAddress!) }
                if rc < 0 && errno == EINTR { continue }
                return Outcome(result: rc, error: rc < 0 ? errno : 0, buffer: bytes)
            }
        }
    }

    /// Closes the descriptor after the lane's jobs; idempotent.
    func close() async {
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in self.closeNow() }
    }

    /// Closes the descriptor on the lane without waiting (deinit).
    func closeSoon() {
        do { try lane.submit { self.closeNow() } } catch { closeNow() }
    }

    private func closeNow() {
        let descriptor = fd.withLock { fd -> Int32 in
            defer { fd = -1 }
            return fd
        }
        if descriptor >= 0 { Glibc.close(descriptor) }
    }
}

/// The hidraw side of `FeatureReportLink`. Internal.
struct HIDRawReportChannel: FeatureReportChannel {
    let file: HIDRawFile
    let peer: String

    func setReport(_ report: [UInt8], id: UInt8) async throws {
        try Task.checkCancellation()
        guard report.count <= HIDRawIoctl.maximumLength else {
            throw TransportError(.io, "\(peer): report 0x\(usbHex2(id)) of \(report.count) bytes is too long for hidraw")
        }
        let outcome = try await call(HIDRawIoctl.setFeature(length: report.count), report, id: id, label: "SET_REPORT")
        if outcome.result < report.count {
            throw TransportError(.io, "\(peer): SET_REPORT 0x\(usbHex2(id)) sent only \(outcome.result) of \(report.count) bytes")
        }
    }

    func getReport(_ id: UInt8, length: Int) async throws -> [UInt8] {
        try Task.checkCancellation()
        var buffer = [UInt8](repeating: 0, count: max(1, min(length, HIDRawIoctl.maximumLength)))
        buffer[0] = id
        let outcome = try await call(HIDRawIoctl.getFeature(length: buffer.count), buffer, id: id, label: "GET_REPORT")
        return Array(outcome.buffer.prefix(Int(max(0, min(outcome.result, Int32(buffer.count))))))
    }

    /// One ioctl; a failure becomes the contract's `TransportError`.
    private func call(_ request: UInt, _ buffer: [UInt8], id: UInt8, label: String) async throws -> HIDRawFile.Outcome {
        guard let outcome = try await file.ioctl(request, buffer) else {
            throw TransportError(.closed, "\(peer) is closed")
        }
        guard outcome.result < 0 else { return outcome }
        var error = Self.error(outcome.error, peer: peer, id: id, label: label)
        // Unplugging or a re-enumeration fails the transfer in flight (EIO, EPROTO) before the node says the device is
        // gone: look whether it went.
        if error.code == .io, Self.mayBeUnplugged(outcome.error), await deviceVanished() {
            error = Self.unplugged(peer, outcome.error)
        }
        throw error
    }

    /// The contract's error for a failed feature ioctl's errno (before looking whether the device went).
    static func error(_ code: Int32, peer: String, id: UInt8, label: String) -> TransportError {
        let what = "\(label) 0x\(usbHex2(id))"
        switch code {
        case ENODEV, ESHUTDOWN:
            return unplugged(peer, code)
        case EPIPE:
            return TransportError(.io, "\(peer): the device stalled report 0x\(usbHex2(id)) (\(label))", errno: EPIPE)
        case ETIMEDOUT:
            return TransportError(.timedOut, "\(peer): no answer to \(what) (the kernel's control transfer timed out)", errno: ETIMEDOUT)
        default:
            return TransportError(.io, "\(peer): \(what) failed: \(errorText(code))", errno: code)
        }
    }

    /// Whether an errno is what a transfer in flight gets when its device goes away.
    static func mayBeUnplugged(_ code: Int32) -> Bool {
        [EIO, EPROTO, EILSEQ, ETIME, ECONNRESET].contains(code)
    }

    static func unplugged(_ peer: String, _ code: Int32) -> TransportError {
        TransportError(.closed, "\(peer): device unplugged", errno: code)
    }

    /// Whether the node says its device is gone (HIDIOCGRAWINFO fails with ENODEV) within `unplugGrace`.
    private func deviceVanished() async -> Bool {
        let deadline = ContinuousClock.now + HIDRawTransport.unplugGrace
        while true {
            guard let outcome = try? await file.ioctl(HIDRawIoctl.rawInfo, [UInt8](repeating: 0, count: 8)) else { return true }
            if outcome.result < 0 && outcome.error == ENODEV { return true }
            guard ContinuousClock.now < deadline else { return false }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return false }
        }
    }
}

/// `strerror` text, e.g. "No such device".
func errorText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
}
