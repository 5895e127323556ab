import LightX
import Support
import Synchronization
import Transport

/// One host attachment of a `USBGadget`, as a `Transport` with `.packets` framing (the device's end).
///
/// - `receive()` returns one raw LightX packet (12-byte header + buffer, `RawPacketCodec`) per SET_REPORT 0xF0 the
///   host sent, in order. After the attachment ends (unbind, disable, re-enumeration, detach, the gadget's close)
///   the packets already received are still returned, then it throws `TransportError(.closed)`.
/// - `send(_:)` queues one raw LightX packet (12...268 bytes, at most 256 buffer bytes) for the host to fetch with
///   GET_REPORT 0xF0/0xF1; it returns once queued (not when fetched). It waits while the gadget's FIFO is full and
///   throws `.closed` once the attachment ended; a malformed packet throws `.io` and queues nothing.
/// - `close()` ends the attachment from the device side: packets not yet fetched by the host are dropped (as a
///   device losing power would); the host's later SET_REPORTs are acknowledged and discarded and its GET_REPORT 0xF0
///   reads "nothing ready" until it attaches again (the next ENABLE starts a new link).
public final class GadgetLink: Transport, Sendable {
    /// `usb-host:GADGET/N`: the host on attachment N of the named gadget.
    public let peerDescription: String
    /// Always `.packets`.
    public var framing: LinkFraming { .packets }
    /// The attachment number (1 for the first ENABLE).
    public let attachment: UInt64

    /// Most received packets held unread; beyond that SET_REPORT 0xF0 is stalled.
    static let incomingLimit = 1024

    private struct State {
        var incoming = FIFOQueue<[UInt8]>()
        var ended = false
        var closed = false
        var receiver: (id: UInt64, continuation: CheckedContinuation<[UInt8], any Error>)?
        var nextID: UInt64 = 0

        var count: Int { incoming.count }

        mutating func pop() -> [UInt8]? { incoming.popFirst() }
    }

    private let state = Mutex(State())
    private let core: GadgetCore

    init(core: GadgetCore, attachment: UInt64, gadgetName: String) {
        self.core = core
        self.attachment = attachment
        self.peerDescription = "usb-host:\(gadgetName)/\(attachment)"
    }

    /// Checks that `bytes` is one raw LightX packet the reports can carry: 12...268 bytes.
    static func validateOutgoing(_ bytes: [UInt8]) throws(TransportError) {
        guard bytes.count >= Header.size, bytes.count - Header.size <= Packet.maxBufferSize else {
            throw TransportError(.io, "a USB HID link sends one LightX packet of \(Header.size)...\(Header.size + Packet.maxBufferSize) bytes per call, not \(bytes.count)")
        }
    }

    /// See the type's contract.
    public func send(_ bytes: [UInt8]) async throws {
        try Self.validateOutgoing(bytes)
        try await core.enqueue(bytes, from: self)
    }

    /// See the type's contract.
    public func receive() async throws -> [UInt8] {
        let id: UInt64 = try state.withLock { s throws(TransportError) in
            if s.closed { throw TransportError(.closed, "\(peerDescription): the link is closed") }
            s.nextID += 1
            return s.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
                let immediate: Result<[UInt8], any Error>? = state.withLock { s in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if s.closed { return .failure(TransportError(.closed, "\(peerDescription): the link is closed")) }
                    if let p = s.pop() { return .success(p) }
                    if s.ended { return .failure(TransportError(.closed, "\(peerDescription): the USB host detached")) }
                    if s.receiver != nil {
                        return .failure(TransportError(.io, "\(peerDescription): only one receive may be pending"))
                    }
                    s.receiver = (id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiting = state.withLock { s -> CheckedContinuation<[UInt8], any Error>? in
                guard let r = s.receiver, r.id == id else { return nil }
                s.receiver = nil
                return r.continuation
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// See the type's contract. Idempotent.
    public func close() async {
        closeNow()
    }

    /// `close()` without suspending.
    func closeNow() {
        let waiting = state.withLock { s -> CheckedContinuation<[UInt8], any Error>? in
            guard !s.closed else { return nil }
            s.closed = true
            s.incoming.removeAll()
            defer { s.receiver = nil }
            return s.receiver?.continuation
        }
        waiting?.resume(throwing: TransportError(.closed, "\(peerDescription): the link is closed"))
        core.linkClosed(self)
    }

    // MARK: - From the gadget

    /// Whether another received packet fits.
    var canTakePacket: Bool {
        state.withLock { s in s.closed || s.ended || s.count < Self.incomingLimit }
    }

    /// Whether the device side closed this link.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether a `receive()` is parked waiting for a packet from the host (for tests and diagnostics).
    var hasPendingReceive: Bool { state.withLock { $0.receiver != nil } }

    /// Hands a packet from the host to the device; false when it was discarded (closed or ended link).
    @discardableResult
    func deliver(_ packet: [UInt8]) -> Bool {
        let (waiting, taken) = state.withLock { s -> (CheckedContinuation<[UInt8], any Error>?, Bool) in
            guard !s.closed, !s.ended else { return (nil, false) }
            if let r = s.receiver {
                s.receiver = nil
                return (r.continuation, true)
            }
            s.incoming.append(packet)
            return (nil, true)
        }
        waiting?.resume(returning: packet)
        return taken
    }

    /// The attachment ended on the USB side: the receiver drains, then gets `.closed`.
    func end(reason: String) {
        let waiting = state.withLock { s -> CheckedContinuation<[UInt8], any Error>? in
            guard !s.ended else { return nil }
            s.ended = true
            guard s.count == 0 else { return nil }
            defer { s.receiver = nil }
            return s.receiver?.continuation
        }
        waiting?.resume(throwing: TransportError(.closed, "\(peerDescription): \(reason)"))
    }
}
