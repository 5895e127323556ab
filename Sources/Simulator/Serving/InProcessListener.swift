import Synchronization
import Transport

/// A listener whose links are in-memory pairs made in this process: `connect()` returns the client's end and hands
/// the other end to `accept()`. It lets a `SimulatedDeviceServer` serve a device in process exactly as it serves it on
/// TCP or a pty.
public final class InProcessListener: TransportListener {
    /// The name given at creation (`memory:NAME`); in-process links have no address a client could dial.
    public let endpoint: String
    /// The framing of the links it makes.
    public let framing: LinkFraming

    private struct State {
        var ready: [any Transport] = []
        var acceptor: (id: UInt64, continuation: CheckedContinuation<any Transport, any Error>)?
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())

    /// A listener making links with `framing`, named `memory:NAME` in `endpoint`.
    public init(name: String = "listener", framing: LinkFraming = .byteStream) {
        self.endpoint = "memory:" + name
        self.framing = framing
    }

    /// Opens a link: returns the client's end; the device's end goes to the next `accept()`.
    ///
    /// - Throws: `TransportError(.closed)` after `close()`.
    public func connect() throws(TransportError) -> any Transport {
        let (client, served) = InMemoryTransport.pair(framing: framing)
        let acceptor = try state.withLock { s throws(TransportError) -> CheckedContinuation<any Transport, any Error>? in
            guard !s.closed else { throw TransportError(.closed, "\(endpoint): the in-process listener is closed") }
            if let acceptor = s.acceptor.take() { return acceptor.continuation }
            s.ready.append(served)
            return nil
        }
        acceptor?.resume(returning: served)
        return client
    }

    /// See `TransportListener.accept()`. One `accept()` at a time.
    public func accept() async throws -> any Transport {
        try Task.checkCancellation()
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<any Transport, any Error>) in
                let immediate: Result<any Transport, any Error>? = state.withLock { s in
                    if !s.ready.isEmpty { return .success(s.ready.removeFirst()) }
                    if s.closed { return .failure(TransportError(.closed, "\(endpoint): the in-process listener is closed")) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if s.acceptor != nil { return .failure(TransportError(.io, "\(endpoint): accept() called while another accept() is pending")) }
                    s.acceptor = (id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let cancelled = state.withLock { s in s.acceptor?.id == id ? s.acceptor.take() : nil }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Whether an `accept()` is waiting (tests).
    var hasPendingAccept: Bool { state.withLock { $0.acceptor != nil } }

    /// See `TransportListener.close()`: a pending `accept()` throws `.closed`; links not yet accepted are dropped
    /// (their clients see them closed).
    public func close() {
        let (acceptor, dropped) = state.withLock { s in
            s.closed = true
            defer { s.ready = [] }
            return (s.acceptor.take(), s.ready)
        }
        acceptor?.continuation.resume(throwing: TransportError(.closed, "\(endpoint): the in-process listener is closed"))
        if !dropped.isEmpty { Task { for link in dropped { await link.close() } } }
    }
}
