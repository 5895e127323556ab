import Synchronization

/// The WebSocket handlers of a server's routes that run now, so that stopping lets them end first.
///
/// A route's handler ends when the server's owner lets its clients go (`finishAll`); swift-websocket then sends the
/// close frame after the handler's last message. Hummingbird's graceful shutdown sends one too, from a task of its
/// own, which can overtake a message the handler is writing at that moment: a text frame after the close frame
/// (RFC 6455 §5.5.1 forbids it; a client drops it or fails the connection). `WebServer.stop` therefore waits (at most
/// its grace) for the handlers run through `run` to end before it starts the graceful shutdown.
public final class WebSocketHandlers: Sendable {
    private struct State {
        var running = 0
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// How many handlers run now.
    public var running: Int { state.withLock { $0.running } }

    /// How many wait for the handlers to end (a stopping server).
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Runs one route's handler, counted while it runs.
    public func run(_ body: () async throws -> Void) async throws {
        state.withLock { $0.running += 1 }
        defer {
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                s.running -= 1
                guard s.running == 0 else { return [] }
                defer { s.waiters = [:] }
                return Array(s.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
        try await body()
    }

    /// Returns once no handler runs (at once when none does), or when the caller is cancelled.
    func ended() async {
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.running == 0 || Task.isCancelled { return true }
                    s.waiters[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
