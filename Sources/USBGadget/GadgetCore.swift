import CShims
import Glibc
import Logging
import Synchronization
import Transport

/// Counters of a running gadget.
public struct USBGadgetStatistics: Sendable, Hashable {
    /// SETUP requests answered (stalls included).
    public var setups = 0
    /// Requests refused with a stall.
    public var stalls = 0
    /// EIDRM seen on ep0 (a SETUP the kernel cancelled because the next event came first); harmless.
    public var cancelledSetups = 0
    /// LightX packets assembled from the host's SET_REPORT 0xF0.
    public var packetsReceived = 0
    /// Packets the host fetched completely.
    public var packetsFetched = 0
    /// Packets from the host discarded because no link was open.
    public var packetsDiscarded = 0
    /// Host attachments (ENABLE events).
    public var attachments = 0
    /// Completed `reenumerate` calls.
    public var reenumerations = 0
    /// How long the unbind, identity change and rebind of the last `reenumerate` took.
    public var lastReenumerationTime: Duration?

    /// Creates zeroed counters.
    public init() {}
}

/// The state shared by a `USBGadget`, its links and its ep0 thread. Internal.
final class GadgetCore: Sendable {
    enum Command: Sendable {
        case reenumerate(productID: UInt16, product: String)
        case detach
        case attach
    }

    struct PendingCommand {
        let command: Command
        let continuation: CheckedContinuation<Duration, any Error>
    }

    struct State {
        var mailbox = ReportMailbox()
        var link: GadgetLink?
        var pendingAccept: [GadgetLink] = []
        var acceptWaiter: (id: UInt64, continuation: CheckedContinuation<any Transport, any Error>)?
        var sendWaiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
        var commands: [PendingCommand] = []
        var stopRequested = false
        var threadDone = false
        /// `reenumerate` calls waiting for the host to fetch the queued packets.
        var draining = 0
        var productID: UInt16
        var product: String
        var isBound = false
        var udc: String?
        var statistics = USBGadgetStatistics()
    }

    let configuration: USBGadgetConfiguration
    let logger: Logger?
    /// Wakes the ep0 thread (commands, stop). Closed in deinit, after the thread let go of the core.
    let wakeFD: Int32
    let state: Mutex<State>

    init(configuration: USBGadgetConfiguration, logger: Logger?) throws(TransportError) {
        let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fd >= 0 else {
            let e = errno
            throw TransportError(.io, "USB gadget: cannot create an eventfd: \(POSIX.describe(e))", errno: e)
        }
        self.wakeFD = fd
        self.configuration = configuration
        self.logger = logger
        self.state = Mutex(State(productID: configuration.productID, product: configuration.product))
    }

    deinit {
        _ = Glibc.close(wakeFD)
    }

    var gadgetName: String { configuration.gadgetName }

    func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
    }

    // MARK: - Attachments (ep0 thread)

    /// ENABLE: the previous attachment ends, a new link is offered to `accept()`.
    func beginAttachment() {
        let (old, waiter, link) = state.withLock { s -> (GadgetLink?, CheckedContinuation<any Transport, any Error>?, GadgetLink?) in
            let old = s.link
            s.mailbox.reset()
            s.statistics.attachments += 1
            guard !s.stopRequested else {
                s.link = nil
                return (old, nil, nil)
            }
            let link = GadgetLink(core: self, attachment: UInt64(s.statistics.attachments), gadgetName: configuration.gadgetName)
            s.link = link
            if let w = s.acceptWaiter {
                s.acceptWaiter = nil
                return (old, w.continuation, link)
            }
            s.pendingAccept.removeAll { $0.isClosed }
            s.pendingAccept.append(link)
            return (old, nil, link)
        }
        old?.end(reason: "the USB host re-attached")
        resumeSendWaiters()
        if let link { logger?.info("USB gadget \(gadgetName): host attached (\(link.peerDescription))") }
        if let waiter, let link { waiter.resume(returning: link) }
    }

    /// BIND, UNBIND, DISABLE, re-enumeration, detach, stop: the current attachment (if any) ends.
    func endAttachment(reason: String) {
        let old = state.withLock { s -> GadgetLink? in
            s.mailbox.reset()
            defer { s.link = nil }
            return s.link
        }
        resumeSendWaiters()
        if let old {
            logger?.info("USB gadget \(gadgetName): host link \(old.peerDescription) ended: \(reason)")
            old.end(reason: reason)
        }
    }

    /// The device side closed `link`.
    func linkClosed(_ link: GadgetLink) {
        let wasCurrent = state.withLock { s -> Bool in
            s.pendingAccept.removeAll { $0 === link }
            guard s.link === link else { return false }
            s.link = nil
            s.mailbox.reset()
            return true
        }
        if wasCurrent { resumeSendWaiters() }
    }

    // MARK: - SETUP handling (ep0 thread)

    /// Decides the answer to `setup` (see `EP0Responder`).
    func decide(_ setup: SetupPacket) -> EP0Action {
        state.withLock { s in
            EP0Responder.decide(setup, mailbox: s.mailbox, canTakePacket: s.link?.canTakePacket ?? true)
        }
    }

    /// The host received a GET_REPORT answer.
    func commit(_ effect: ReportMailbox.Effect) {
        let freed = state.withLock { s -> Bool in
            let before = s.mailbox.outgoingCount
            s.mailbox.commit(effect)
            let removed = s.mailbox.outgoingCount < before
            if removed { s.statistics.packetsFetched += 1 }
            return removed
        }
        if freed { resumeSendWaiters() }
    }

    /// The data stage of a SET_REPORT arrived.
    func receivedSetReport(_ reportID: UInt8, _ data: [UInt8]) {
        let (packet, link) = state.withLock { s -> ([UInt8]?, GadgetLink?) in
            let packet = s.mailbox.receiveSet(reportID: reportID, data: data)
            if packet != nil { s.statistics.packetsReceived += 1 }
            return (packet, s.link)
        }
        guard let packet else { return }
        if link?.deliver(packet) != true {
            state.withLock { $0.statistics.packetsDiscarded += 1 }
            logger?.debug("USB gadget \(gadgetName): no device link; discarded a \(packet.count)-byte packet from the host")
        }
    }

    func count(stall: Bool, cancelled: Bool = false) {
        state.withLock { s in
            s.statistics.setups += 1
            if stall { s.statistics.stalls += 1 }
            if cancelled { s.statistics.cancelledSetups += 1 }
        }
    }

    func countCancelledRead() {
        state.withLock { $0.statistics.cancelledSetups += 1 }
    }

    // MARK: - Outgoing (links)

    /// Queues `packet` from `link`, waiting for room in the FIFO.
    func enqueue(_ packet: [UInt8], from link: GadgetLink) async throws {
        while true {
            let id: UInt64 = try state.withLock { s throws(TransportError) -> UInt64 in
                guard s.link === link, !link.isClosed else {
                    throw TransportError(.closed, "\(link.peerDescription): the USB host link has ended")
                }
                if s.mailbox.enqueue(packet) { return 0 }
                s.nextID += 1
                return s.nextID
            }
            if id == 0 { return }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let ready: Result<Void, any Error>? = state.withLock { s in
                        if Task.isCancelled { return .failure(CancellationError()) }
                        if s.link !== link || s.mailbox.outgoingCount < s.mailbox.capacity { return .success(()) }
                        s.sendWaiters.append((id, continuation))
                        return nil
                    }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: {
                let waiting = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                    guard let k = s.sendWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.sendWaiters.remove(at: k).continuation
                }
                waiting?.resume(throwing: CancellationError())
            }
        }
    }

    private func resumeSendWaiters() {
        let waiters = state.withLock { s in
            defer { s.sendWaiters = [] }
            return s.sendWaiters
        }
        for w in waiters { w.continuation.resume() }
    }

    /// Whether the host has fetched every queued packet (or there is no attachment).
    var isDrained: Bool { state.withLock { $0.mailbox.isDrained } }

    /// Sends parked until the FIFO has room (for tests and diagnostics).
    var pendingSends: Int { state.withLock { $0.sendWaiters.count } }

    /// Whether an `accept()` is parked waiting for an attachment (for tests and diagnostics).
    var hasPendingAccept: Bool { state.withLock { $0.acceptWaiter != nil } }

    /// Whether a `reenumerate` is waiting for the host to fetch what is queued (for tests and diagnostics).
    var isWaitingForDrain: Bool { state.withLock { $0.draining > 0 } }

    /// Counts a `reenumerate` entering (+1) or leaving (-1) its wait for the drain.
    func noteDraining(_ delta: Int) {
        state.withLock { $0.draining += delta }
    }

    // MARK: - Accept

    func accept() async throws -> any Transport {
        let id: UInt64 = try state.withLock { s throws(TransportError) -> UInt64 in
            if s.stopRequested { throw TransportError(.closed, "USB gadget \(configuration.gadgetName) is closed") }
            s.nextID += 1
            return s.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<any Transport, any Error>) in
                let ready: Result<any Transport, any Error>? = state.withLock { s in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if s.stopRequested { return .failure(TransportError(.closed, "USB gadget \(configuration.gadgetName) is closed")) }
                    s.pendingAccept.removeAll { $0.isClosed }
                    if !s.pendingAccept.isEmpty { return .success(s.pendingAccept.removeFirst()) }
                    if s.acceptWaiter != nil {
                        return .failure(TransportError(.io, "USB gadget \(configuration.gadgetName): only one accept may be pending"))
                    }
                    s.acceptWaiter = (id, continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiting = state.withLock { s -> CheckedContinuation<any Transport, any Error>? in
                guard let w = s.acceptWaiter, w.id == id else { return nil }
                s.acceptWaiter = nil
                return w.continuation
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    // MARK: - Commands and stop

    /// Runs `command` on the ep0 thread; returns how long its system calls took.
    func perform(_ command: Command) async throws -> Duration {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Duration, any Error>) in
            let refused = state.withLock { s -> Bool in
                if s.stopRequested || s.threadDone { return true }
                s.commands.append(PendingCommand(command: command, continuation: continuation))
                return false
            }
            if refused {
                continuation.resume(throwing: TransportError(.closed, "USB gadget \(configuration.gadgetName) is closed"))
            } else {
                wake()
            }
        }
    }

    /// The commands queued for the ep0 thread, and whether it must stop.
    func takeCommands() -> (commands: [(Command, CheckedContinuation<Duration, any Error>)], stop: Bool) {
        state.withLock { s in
            defer { s.commands = [] }
            return (s.commands.map { ($0.command, $0.continuation) }, s.stopRequested)
        }
    }

    /// Stops accepting, ends the current link, and asks the ep0 thread to tear the gadget down. Idempotent.
    func requestStop() {
        let (waiter, pending, commands, already) = state.withLock { s in
            let already = s.stopRequested
            s.stopRequested = true
            defer {
                s.acceptWaiter = nil
                s.pendingAccept = []
                s.commands = []
            }
            return (s.acceptWaiter?.continuation, s.pendingAccept, s.commands, already)
        }
        guard !already else { return }
        waiter?.resume(throwing: TransportError(.closed, "USB gadget \(configuration.gadgetName) is closed"))
        for link in pending { link.end(reason: "the USB gadget was closed") }
        for c in commands { c.continuation.resume(throwing: TransportError(.closed, "USB gadget \(configuration.gadgetName) is closed")) }
        endAttachment(reason: "the USB gadget was closed")
        wake()
    }

    /// Called by the ep0 thread when it has torn the gadget down (or never set it up).
    func threadFinished() {
        let commands = state.withLock { s in
            s.threadDone = true
            s.isBound = false
            defer { s.commands = [] }
            return s.commands
        }
        for c in commands { c.continuation.resume(throwing: TransportError(.closed, "USB gadget \(configuration.gadgetName) is closed")) }
    }

    /// Waits until the ep0 thread finished, or `timeout` passed; returns whether it finished.
    func waitForThread(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.threadDone }) { return true }
            do { try await Task.sleep(for: .milliseconds(5)) } catch { break }  // cancelled: answer now
        }
        return state.withLock { $0.threadDone }
    }

    var isStopRequested: Bool { state.withLock { $0.stopRequested } }

    // MARK: - Bookkeeping (ep0 thread)

    func noteBound(_ bound: Bool) {
        state.withLock { $0.isBound = bound }
    }

    func noteIdentity(productID: UInt16, product: String) {
        state.withLock { s in
            s.productID = productID
            s.product = product
        }
    }

    func noteReenumeration(_ elapsed: Duration) {
        state.withLock { s in
            s.statistics.reenumerations += 1
            s.statistics.lastReenumerationTime = elapsed
        }
    }

    func noteSetUp(udc: String?) {
        state.withLock { s in
            s.udc = udc
            s.isBound = udc != nil
        }
    }
}
