import CShims
import Glibc
import Logging
import Support
import Synchronization

/// A pseudo-terminal through which a server (the device simulator) appears as a serial device at `slavePath`.
///
/// Contract:
/// - `open()` allocates the pty, puts the slave side in raw 8-bit mode (so binary data passes unchanged: no echo, no
///   CR/LF translation, no ^C/^S/^Q handling) and keeps one slave descriptor open itself. Because of that descriptor
///   the master never sees EIO/hang-up between clients, and the terminal settings survive from client to client.
/// - Clients are tracked with inotify (open/close of `slavePath`). `accept()` waits for a client to open the slave
///   and returns a byte-stream `Transport` over the master for that client's *session*:
///   - its `receive()` delivers what the client writes; after the client closed the slave it returns the remaining
///     buffered bytes and then throws `.closed`;
///   - its `send()` throws `.closed` once the client has gone;
///   - bytes the server wrote that no client read are discarded (the slave's input queue is flushed) when the last
///     client closes the slave and again when a session starts, so a new client does not get a previous client's
///     replies (a client that opens the slave within a few milliseconds of the previous one closing it can still see
///     them); raw mode is re-applied at session start (VMIN/VTIME are left as the client set them).
/// - Only one session is live at a time. A session stops being live when the server closes it, when its `receive()`
///   or `send()` has reported that the client left, or when a new client arrives after its client left. If the
///   server closes a session while the client is still attached, the next `accept()` returns a new session for that
///   same client. Bytes of a departed client that the server had not read yet go to the next session.
/// - A session's `peerDescription` is `pty:SLAVEPATH#N` (N numbers the sessions).
/// - If inotify is unavailable, client changes cannot be seen: `accept()` returns at once and a session only ends when
///   the server closes it. (inotify merges identical events that are still unread, so two clients opening the slave
///   within the same instant can be counted as one; serial clients normally come one at a time.)
/// - `close()` (also run by deinit) ends the session with `.closed`, fails a pending `accept()`, and releases every
///   descriptor; clients then see a hang-up. Keep the `PseudoTerminal` alive while serving.
public final class PseudoTerminal: Sendable {
    /// The path clients open, e.g. `/dev/pts/5`.
    public let slavePath: String
    private let core: PTYCore

    private init(core: PTYCore) {
        self.core = core
        self.slavePath = core.slavePath
    }

    deinit { core.close() }

    /// Allocates a pseudo-terminal. Throws `TransportError(.io)` (or `.unsupported` when the host has no ptys).
    public static func open(logger: Logger? = nil) throws -> PseudoTerminal {
        let core = try PTYCore.make(logger: logger)
        let pty = PseudoTerminal(core: core)
        core.startTracking()
        return pty
    }

    /// Waits for a client and returns the Transport for its session (see the type's contract). Cancellable; calls
    /// from several tasks are served in FIFO order. Throws `.closed` after `close()`.
    public func accept() async throws -> any Transport {
        try await core.accept()
    }

    /// The number of client descriptions that have the slave open now (as far as inotify reports).
    public var attachedClients: Int { core.attachedClients }

    /// Whether an `accept()` is parked waiting for a client (for tests and diagnostics).
    var hasPendingAccept: Bool { core.hasPendingAccept }

    /// Ends any session, fails a pending `accept()`, and closes the pty. Idempotent.
    public func close() {
        core.close()
    }
}

/// Shared state of a `PseudoTerminal` and its sessions. Internal.
final class PTYCore: Sendable {
    private struct AcceptWaiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var closed = false
        /// Whether inotify reports opens and closes of the slave.
        var tracking: Bool
        /// Open client descriptions of the slave (ours excluded).
        var clients = 0
        /// Number of "client periods" begun (0 → 1 transitions of `clients`).
        var periods = 0
        /// The last period a session was started for.
        var servedPeriod = 0
        /// The live session, its period, and whether its client has gone.
        var session: UInt64?
        var sessionPeriod = 0
        var clientGone = false
        var nextID: UInt64 = 0
        /// The session with a pending receive (one per session).
        var receivingSession: UInt64?
        var acceptWaiter: AcceptWaiter?
        let scratch: UnsafeMutableRawBufferPointer
    }

    let slavePath: String
    let masterFD: Int32
    private let holderFD: Int32
    private let inotifyFD: Int32
    private let reactor: IOReactor
    let masterRegistration: IOReactor.Registration
    private let inotifyRegistration: IOReactor.Registration?
    private let state: Mutex<State>
    private let acceptLock = AsyncLock()
    let logger: Logger?

    private init(slavePath: String, masterFD: Int32, holderFD: Int32, inotifyFD: Int32, reactor: IOReactor,
                 masterRegistration: IOReactor.Registration, inotifyRegistration: IOReactor.Registration?, logger: Logger?) {
        self.slavePath = slavePath
        self.masterFD = masterFD
        self.holderFD = holderFD
        self.inotifyFD = inotifyFD
        self.reactor = reactor
        self.masterRegistration = masterRegistration
        self.inotifyRegistration = inotifyRegistration
        self.logger = logger
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: FileDescriptorTransport.maximumChunk, alignment: 16)
        self.state = Mutex(State(tracking: inotifyRegistration != nil, scratch: scratch))
    }

    deinit {
        state.withLock { $0.scratch.deallocate() }
    }

    static func make(logger: Logger?) throws(TransportError) -> PTYCore {
        func failure(_ what: String, _ e: Int32) -> TransportError {
            TransportError(e == ENOENT || e == ENODEV ? .unsupported : .io,
                           "cannot create a pseudo-terminal: \(what): \(POSIX.describe(e))", errno: e)
        }
        let master = tuneup_posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw failure("posix_openpt", errno) }
        var fds: [Int32] = [master]
        func fail(_ what: String, _ e: Int32) -> TransportError {
            fds.forEach(POSIX.close)
            return failure(what, e)
        }
        guard tuneup_grantpt(master) == 0 else { throw fail("grantpt", errno) }
        guard tuneup_unlockpt(master) == 0 else { throw fail("unlockpt", errno) }
        var name = [CChar](repeating: 0, count: 128)
        let rc = tuneup_ptsname_r(master, &name, name.count)
        guard rc == 0 else { throw fail("ptsname_r", rc) }
        let path = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        if let e = POSIX.setNonBlocking(master) { throw fail("O_NONBLOCK", e) }

        let holder = Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard holder >= 0 else { throw fail("open \(path)", errno) }
        fds.append(holder)
        if let e = makeRaw(holder, keepTimeouts: false) { throw fail("raw mode", e) }

        // Client tracking (optional): our own holder was opened before the watch, so it is not counted.
        var inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if inotify >= 0 {
            let mask = UInt32(IN_OPEN) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CLOSE_NOWRITE)
            if inotify_add_watch(inotify, path, mask) < 0 {
                POSIX.close(inotify)
                inotify = -1
            } else {
                fds.append(inotify)
            }
        }
        let reactor: IOReactor
        let masterRegistration: IOReactor.Registration
        var inotifyRegistration: IOReactor.Registration?
        do {
            reactor = try IOReactor.shared()
            masterRegistration = try reactor.register(master)
            if inotify >= 0 { inotifyRegistration = try reactor.register(inotify) }
        } catch {
            fds.forEach(POSIX.close)
            throw error
        }
        logger?.debug("pseudo-terminal ready at \(path)\(inotify >= 0 ? "" : " (client tracking unavailable)")")
        return PTYCore(slavePath: path, masterFD: master, holderFD: holder, inotifyFD: inotify, reactor: reactor,
                       masterRegistration: masterRegistration, inotifyRegistration: inotifyRegistration, logger: logger)
    }

    /// Puts a tty in raw 8-bit mode. Returns the errno on failure.
    static func makeRaw(_ fd: Int32, keepTimeouts: Bool) -> Int32? {
        var settings = termios()
        guard tcgetattr(fd, &settings) == 0 else { return errno }
        let cc = settings.c_cc
        cfmakeraw(&settings)
        settings.c_cflag |= tcflag_t(CLOCAL | CREAD)
        if keepTimeouts { settings.c_cc = cc }
        return tcsetattr(fd, TCSANOW, &settings) == 0 ? nil : errno
    }

    /// Starts the task that follows client opens and closes.
    func startTracking() {
        guard let registration = inotifyRegistration else { return }
        Task { [self] in await self.trackClients(registration) }
    }

    var attachedClients: Int { state.withLock { $0.clients } }

    /// Whether an `accept()` is parked waiting for a client (for tests and diagnostics).
    var hasPendingAccept: Bool { state.withLock { $0.acceptWaiter != nil } }

    /// Whether session `id` has a `receive()` parked on the reactor waiting for data (for tests and diagnostics).
    func hasPendingReceive(session id: UInt64) -> Bool {
        state.withLock { $0.receivingSession == id } && reactor.hasWaiter(.readable, on: masterRegistration)
    }

    private var closedError: TransportError {
        TransportError(.closed, "the pseudo-terminal \(slavePath) is closed")
    }

    // MARK: - Client tracking

    private func trackClients(_ registration: IOReactor.Registration) async {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int = buffer.withUnsafeMutableBytes { raw in
                state.withLock { s in
                    guard !s.closed else { return -2 }
                    let n = Glibc.read(inotifyFD, raw.baseAddress, raw.count)
                    return n >= 0 ? n : (errno == EAGAIN || errno == EINTR ? -1 : -2)
                }
            }
            if n == -2 { return }
            if n == -1 {
                do { try await reactor.wait(.readable, on: registration) } catch { return }
                continue
            }
            var opens: [Bool] = []
            var offset = 0
            buffer.withUnsafeBytes { raw in
                while offset + 16 <= n {
                    let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    if mask & UInt32(IN_OPEN) != 0 { opens.append(true) }
                    if mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_CLOSE_NOWRITE)) != 0 { opens.append(false) }
                    offset += 16 + length
                }
            }
            let (acceptWaiter, kick): (AcceptWaiter?, Bool) = state.withLock { s in
                var kick = false
                for isOpen in opens {
                    if isOpen {
                        s.clients += 1
                        if s.clients == 1 { s.periods += 1 }
                    } else {
                        s.clients = max(0, s.clients - 1)
                        if s.clients == 0 {
                            // Nobody will read what the server wrote; the next client must not get it.
                            flushServerOutput(&s)
                            if s.session != nil, s.sessionPeriod == s.periods, !s.clientGone {
                                s.clientGone = true
                                kick = true
                            }
                        }
                    }
                }
                return (s.acceptWaiter.take(), kick)
            }
            if let logger {
                logger.trace("\(slavePath): client events \(opens.map { $0 ? "open" : "close" }), attached: \(attachedClients)")
            }
            if kick { reactor.wake(masterRegistration) }
            acceptWaiter?.continuation.resume()
        }
    }

    // MARK: - Accepting sessions

    func accept() async throws -> any Transport {
        try await acceptLock.withLock {
            while true {
                try Task.checkCancellation()
                let id = state.withLock { s in
                    s.nextID += 1
                    return s.nextID
                }
                var started: UInt64?
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        let immediate: Result<Void, any Error>? = state.withLock { s in
                            if s.closed { return .failure(closedError) }
                            let previousOver = s.session == nil || (s.clientGone && s.periods > s.sessionPeriod)
                            if previousOver && (!s.tracking || s.periods > s.servedPeriod) {
                                started = startSession(&s)
                                return .success(())
                            }
                            if Task.isCancelled { return .failure(CancellationError()) }
                            s.acceptWaiter = AcceptWaiter(id: id, continuation: continuation)
                            return nil
                        }
                        if let immediate { continuation.resume(with: immediate) }
                    }
                } onCancel: {
                    let waiter: AcceptWaiter? = state.withLock { s in
                        guard s.acceptWaiter?.id == id else { return nil }
                        return s.acceptWaiter.take()
                    }
                    waiter?.continuation.resume(throwing: CancellationError())
                }
                if let started {
                    // A superseded session may be parked; let it notice.
                    reactor.wake(masterRegistration)
                    logger?.debug("\(slavePath): session \(started) started")
                    return PTYSession(core: self, id: started)
                }
            }
        }
    }

    /// Begins a session for the newest client period. Called with the lock held.
    private func startSession(_ s: inout State) -> UInt64 {
        s.nextID += 1
        let id = s.nextID
        s.session = id
        s.servedPeriod = s.periods
        s.sessionPeriod = s.periods
        s.clientGone = s.tracking && s.clients == 0
        flushServerOutput(&s)
        _ = Self.makeRaw(holderFD, keepTimeouts: true)
        return id
    }

    /// Discards bytes the server wrote that no client has read (the slave's input queue). Lock held.
    private func flushServerOutput(_ s: inout State) {
        guard !s.closed else { return }
        _ = tcflush(holderFD, TCIFLUSH)
        while Glibc.read(holderFD, s.scratch.baseAddress, s.scratch.count) > 0 {}
    }

    // MARK: - Session I/O

    private enum ReadOutcome {
        case bytes([UInt8])
        case wouldBlock
        case ended(TransportError)
        case failed(Int32)
    }

    /// Ends session `id` (lock held). Returns the accept waiter to resume.
    private func endSession(_ id: UInt64, _ s: inout State, serverClosed: Bool) -> AcceptWaiter? {
        guard s.session == id else { return nil }
        s.session = nil
        if serverClosed && s.tracking && !s.clientGone && s.clients > 0 && s.sessionPeriod == s.periods {
            // The client is still there: the next accept() serves it again.
            s.servedPeriod = s.periods - 1
        }
        return s.acceptWaiter.take()
    }

    private func clientLeftError() -> TransportError {
        TransportError(.closed, "\(slavePath): the client closed the terminal")
    }

    func receive(session id: UInt64, peer: String) async throws -> [UInt8] {
        try state.withLock { s throws(TransportError) in
            guard !s.closed, s.session == id else { throw TransportError(.closed, "\(peer): the session is over") }
            if s.receivingSession == id {
                throw TransportError(.io, "\(peer): receive() called while another receive() is pending")
            }
            s.receivingSession = id
        }
        defer {
            state.withLock { s in
                if s.receivingSession == id { s.receivingSession = nil }
            }
        }
        while true {
            try Task.checkCancellation()
            let token = reactor.wakeCount(of: masterRegistration)
            var waiter: AcceptWaiter?
            let outcome: ReadOutcome = state.withLock { s in
                if s.closed { return .ended(closedError) }
                guard s.session == id else { return .ended(TransportError(.closed, "\(peer): the session is over")) }
                let n = Glibc.read(masterFD, s.scratch.baseAddress, s.scratch.count)
                if n > 0 { return .bytes(Array(UnsafeRawBufferPointer(rebasing: s.scratch[..<n]))) }
                let e = n == 0 ? EIO : errno
                if e == EAGAIN || e == EWOULDBLOCK || e == EINTR {
                    if s.clientGone {
                        waiter = endSession(id, &s, serverClosed: false)
                        return .ended(clientLeftError())
                    }
                    return .wouldBlock
                }
                if e == EIO {
                    waiter = endSession(id, &s, serverClosed: false)
                    return .ended(clientLeftError())
                }
                return .failed(e)
            }
            waiter?.continuation.resume()
            switch outcome {
            case .bytes(let bytes):
                logger?.trace("\(peer) received \(bytes.count) bytes: \(hexDump(bytes))")
                return bytes
            case .wouldBlock:
                try await reactor.wait(.readable, on: masterRegistration, unlessWokenSince: token)
            case .ended(let error):
                throw error
            case .failed(let e):
                throw FileDescriptorTransport.ioError(e, peer: peer, operation: "receive")
            }
        }
    }

    func send(_ bytes: [UInt8], session id: UInt64, peer: String) async throws {
        var offset = 0
        repeat {
            try Task.checkCancellation()
            let token = reactor.wakeCount(of: masterRegistration)
            var waiter: AcceptWaiter?
            let attempt: Result<Int, TransportError> = bytes.withUnsafeBytes { buffer in
                state.withLock { s in
                    if s.closed { return .failure(closedError) }
                    guard s.session == id else { return .failure(TransportError(.closed, "\(peer): the session is over")) }
                    if s.clientGone {
                        waiter = endSession(id, &s, serverClosed: false)
                        return .failure(clientLeftError())
                    }
                    if buffer.isEmpty { return .success(0) }
                    let n = Glibc.write(masterFD, buffer.baseAddress! + offset, buffer.count - offset)
                    return .success(n >= 0 ? n : -Int(errno))
                }
            }
            waiter?.continuation.resume()
            let n = try attempt.get()
            if n >= 0 {
                offset += n
                continue
            }
            let e = Int32(-n)
            switch e {
            case EAGAIN, EWOULDBLOCK:
                try await reactor.wait(.writable, on: masterRegistration, unlessWokenSince: token)
            case EINTR:
                continue
            default:
                throw FileDescriptorTransport.ioError(e, peer: peer, operation: "send")
            }
        } while offset < bytes.count
        logger?.trace("\(peer) sent \(bytes.count) bytes: \(hexDump(bytes))")
    }

    func closeSession(_ id: UInt64) {
        let waiter: AcceptWaiter? = state.withLock { s in endSession(id, &s, serverClosed: true) }
        reactor.wake(masterRegistration)
        waiter?.continuation.resume()
    }

    func close() {
        let waiter: AcceptWaiter?? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            s.session = nil
            return .some(s.acceptWaiter.take())
        }
        guard let waiter else { return }
        waiter?.continuation.resume(throwing: closedError)
        if let inotifyRegistration {
            reactor.deregister(inotifyRegistration, failing: closedError)
            POSIX.close(inotifyFD)
        }
        reactor.deregister(masterRegistration, failing: closedError)
        POSIX.close(masterFD)
        POSIX.close(holderFD)
        logger?.debug("closed the pseudo-terminal \(slavePath)")
    }
}

/// One client session on a `PseudoTerminal`. Internal; handed out as `any Transport`.
final class PTYSession: Transport {
    let peerDescription: String
    var framing: LinkFraming { .byteStream }
    private let core: PTYCore
    private let id: UInt64
    private let sendLock = AsyncLock()

    init(core: PTYCore, id: UInt64) {
        self.core = core
        self.id = id
        self.peerDescription = "pty:\(core.slavePath)#\(id)"
    }

    deinit { core.closeSession(id) }

    /// Whether a `receive()` is parked waiting for data (for tests and diagnostics).
    var hasPendingReceive: Bool { core.hasPendingReceive(session: id) }

    func send(_ bytes: [UInt8]) async throws {
        try await sendLock.withLock {
            try await core.send(bytes, session: id, peer: peerDescription)
        }
    }

    func receive() async throws -> [UInt8] {
        try await core.receive(session: id, peer: peerDescription)
    }

    func close() async {
        core.closeSession(id)
    }
}
