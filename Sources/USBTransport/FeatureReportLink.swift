import LightX
import Logging
import Support
import Synchronization
import Transport

/// How one back end moves a single HID feature report (libusb control transfers on endpoint 0, or hidraw's
/// HIDIOCSFEATURE/HIDIOCGFEATURE ioctls). Internal.
///
/// Both calls throw `TransportError` (a `.closed` one means the device is gone for good) or `CancellationError` (the
/// task was cancelled before the report went out, or while it was in flight and it was not delivered).
protocol FeatureReportChannel: Sendable {
    /// SET_REPORT of `report` (`report[0]` is the report id).
    func setReport(_ report: [UInt8], id: UInt8) async throws
    /// GET_REPORT of report `id`, `length` bytes with the id; returns what the device answered, id first.
    func getReport(_ id: UInt8, length: Int) async throws -> [UInt8]
}

/// LightX packets over HID feature reports, whatever carries the reports: the one implementation of the host side of
/// the contract (`LightXReports` for the layout, `PollSchedule` for the polling) that `USBHIDTransport` (libusb) and
/// `HIDRawTransport` (hidraw) share. Internal.
///
/// - `send` makes the SET_REPORT sequence of one raw packet (serialised between concurrent sends) and counts one
///   request outstanding; a malformed packet is refused with `.io` before anything is sent.
/// - `receive` polls GET_REPORT 0xF0 (then 0xF1 for an announced buffer) per `PollSchedule` while requests are
///   outstanding, every `idlePollInterval` otherwise; a count without a reply for `staleOutstanding` is dropped.
/// - A `.closed` error from the channel is remembered: every later call throws it. After `close()`, calls throw
///   `.closed` "PEER is closed" and a sleeping `receive` wakes at once.
final class FeatureReportLink: Sendable {
    private struct State {
        var closed = false
        /// Set once the device is gone; every later call throws it.
        var failure: TransportError?
        var receiving = false
        var outstanding = 0
        var lastProgress = ContinuousClock.now
        /// A header whose buffer (report 0xF1) is still to be fetched.
        var announced: Header?
    }

    /// After this long without a reply, outstanding requests are forgotten (back to idle polling).
    static let staleOutstanding: Duration = .seconds(10)

    let peer: String
    private let channel: any FeatureReportChannel
    private let schedule: PollSchedule
    private let idlePollInterval: Duration?
    private let logger: Logger?
    private let state = Mutex(State())
    private let waker = USBPollWaker()
    private let sendLock = AsyncLock()

    init(peer: String, channel: any FeatureReportChannel, pollInterval: Duration?, idlePollInterval: Duration?, logger: Logger?) {
        self.peer = peer
        self.channel = channel
        self.schedule = PollSchedule(interval: pollInterval)
        self.idlePollInterval = idlePollInterval
        self.logger = logger
    }

    // MARK: Sending

    func send(_ bytes: [UInt8]) async throws {
        try checkUsable()
        let reports = try withPeer { () throws(TransportError) in try LightXReports.setReports(for: bytes) }
        try await sendLock.withLock {
            for report in reports {
                try checkUsable()
                try await guarded { try await channel.setReport(report.bytes, id: report.id) }
            }
        }
        state.withLock { s in
            s.outstanding += 1
            s.lastProgress = .now
        }
        waker.kick()
        logger?.trace("\(peer) sent \(bytes.count) bytes: \(usbHexDump(bytes))")
    }

    // MARK: Receiving

    func receive() async throws -> [UInt8] {
        try state.withLock { s throws(TransportError) in
            if let failure = s.failure { throw failure }
            if s.closed { throw closedError() }
            if s.receiving {
                throw TransportError(.io, "\(peer): receive() called while another receive() is pending")
            }
            s.receiving = true
        }
        defer { state.withLock { $0.receiving = false } }
        var emptyPolls = 0
        while true {
            try checkUsable()
            try Task.checkCancellation()
            if let header = state.withLock({ $0.announced }) {
                let report: [UInt8]
                do {
                    report = try await guarded { try await channel.getReport(HIDReports.bufferReportID, length: HIDReports.bufferReportSize) }
                } catch let error as TransportError {
                    // The device no longer holds the announced head (it stalled, or timed out); drop it.
                    state.withLock { $0.announced = nil }
                    throw error
                }
                state.withLock { $0.announced = nil }
                let packet = try withPeer { () throws(TransportError) in try LightXReports.packet(header: header, bufferReport: report) }
                return arrived(header, packet)
            }

            let (outstanding, generation) = state.withLock { s -> (Bool, UInt64) in
                if s.outstanding > 0, ContinuousClock.now - s.lastProgress > Self.staleOutstanding {
                    logger?.debug("\(peer): no reply for \(s.outstanding) request(s) in \(formatUSBDuration(Self.staleOutstanding)); back to idle polling")
                    s.outstanding = 0
                }
                return (s.outstanding > 0, waker.generation)
            }
            let delay: Duration?
            let interruptible: Bool
            if outstanding {
                delay = schedule.delay(afterEmptyPolls: emptyPolls)
                interruptible = schedule == .adaptive
            } else {
                delay = idlePollInterval.flatMap { $0 > .zero ? $0 : nil }
                interruptible = true
            }
            if delay != .zero {
                if await waker.sleep(for: delay, generation: generation, interruptible: interruptible) {
                    emptyPolls = 0
                    continue
                }
                try checkUsable()
                try Task.checkCancellation()
            }

            let report = try await guarded { try await channel.getReport(HIDReports.headerReportID, length: HIDReports.headerReportSize) }
            guard let header = try withPeer({ () throws(TransportError) in try LightXReports.parseHeaderReport(report) }) else {
                if outstanding { emptyPolls += 1 }
                continue
            }
            emptyPolls = 0
            if HIDReports.announcedBuffer(header) > 0 {
                state.withLock { $0.announced = header }
                continue
            }
            return arrived(header, header.encoded)
        }
    }

    /// Counts a reply and logs the packet.
    private func arrived(_ header: Header, _ packet: [UInt8]) -> [UInt8] {
        state.withLock { s in
            if LightXReports.isFinalReply(header), s.outstanding > 0 { s.outstanding -= 1 }
            s.lastProgress = .now
        }
        logger?.trace("\(peer) received \(packet.count) bytes: \(usbHexDump(packet))")
        return packet
    }

    // MARK: Closing and state

    /// Marks the link closed and wakes a sleeping `receive`. Returns whether this was the first close.
    @discardableResult
    func close() -> Bool {
        let first = state.withLock { s -> Bool in
            defer { s.closed = true }
            return !s.closed
        }
        waker.close()
        return first
    }

    /// The owning transport's `Transport.close()`: fails pending calls with `.closed` (`close()`), then `release`s the
    /// channel (waiting for it), then logs the first close.
    func close(releasing release: () async -> Void) async {
        let first = close()
        await release()
        if first { logger?.trace("closed \(peer)") }
    }

    /// Wakes a sleeping `receive` for good (the owner is going away without `close()`).
    func wakeForGood() { waker.close() }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// The number of requests sent and not yet answered.
    var outstandingRequests: Int { state.withLock { $0.outstanding } }

    func closedError() -> TransportError {
        TransportError(.closed, "\(peer) is closed")
    }

    func checkUsable() throws(TransportError) {
        try state.withLock { s throws(TransportError) in
            if let failure = s.failure { throw failure }
            if s.closed { throw closedError() }
        }
    }

    /// Records that the device is gone.
    func fail(_ error: TransportError) {
        state.withLock { s in
            if s.failure == nil { s.failure = error }
        }
        logger?.debug("\(error.message)")
    }

    /// One channel call: a `.closed` error is remembered; a cancellation of a link that was closed meanwhile is
    /// `.closed`.
    private func guarded<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as TransportError {
            if error.code == .closed { fail(error) }
            throw error
        } catch is CancellationError {
            if isClosed { throw closedError() }
            throw CancellationError()
        }
    }

    /// Runs `body`, prefixing the message of its error with the peer ("usb:1209:0001: short report 0xF0: ...").
    private func withPeer<T>(_ body: () throws(TransportError) -> T) throws(TransportError) -> T {
        do {
            return try body()
        } catch {
            throw TransportError(error.code, "\(peer): \(error.message)", errno: error.errno)
        }
    }
}
