import Synchronization

/// A timer started with `Timers.schedule`; `Timers.cancel` stops it.
public struct ReactorTimer: Sendable, Hashable {
    let id: UInt64
}

/// Precise, cheap timers on `ContinuousClock`, run by the I/O reactor's thread (see `IOReactor`): for the many
/// short-lived deadlines of request timeouts and simulated link delays, where `Task.sleep` costs a dispatch timer
/// source and a wake-up of libdispatch's manager thread per call.
///
/// Code that must run on an injected clock in tests (`SessionClock`) uses these only when it is given the
/// `ContinuousClock`.
public enum Timers {
    private static let reactor: IOReactor? = try? IOReactor.shared()
    /// Without a reactor (it could not be created), each timer is a task that sleeps.
    private static let fallback = Mutex((next: UInt64(1), tasks: [UInt64: Task<Void, Never>]()))

    /// Runs `action` once `deadline` has passed, unless `cancel` comes first. The action runs on the reactor's
    /// thread: it must be short and never block (resume a continuation, start a task, take a lock briefly).
    public static func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ReactorTimer {
        if let reactor { return ReactorTimer(id: reactor.schedule(at: deadline, action)) }
        return fallback.withLock { f in
            let id = f.next
            f.next += 1
            f.tasks[id] = Task {
                do { try await Task.sleep(until: deadline, tolerance: .zero, clock: .continuous) } catch { return }
                guard fallback.withLock({ $0.tasks.removeValue(forKey: id) }) != nil else { return }
                action()
            }
            return ReactorTimer(id: id)
        }
    }

    /// Stops a timer. True when its action had not run (and now never will).
    @discardableResult
    public static func cancel(_ timer: ReactorTimer) -> Bool {
        if let reactor { return reactor.cancelTimer(timer.id) }
        guard let task = fallback.withLock({ $0.tasks.removeValue(forKey: timer.id) }) else { return false }
        task.cancel()
        return true
    }

    /// Timers neither run nor cancelled (diagnostics and tests).
    public static var pending: Int {
        reactor?.pendingTimers ?? fallback.withLock { $0.tasks.count }
    }

    /// Suspends until `deadline` has passed. Throws `CancellationError` at once when the task is cancelled.
    public static func sleep(until deadline: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                sleeper.start(continuation, until: deadline)
            }
        } onCancel: {
            sleeper.cancel()
        }
    }

    /// One sleep: its continuation resumed exactly once, by the timer or by cancellation.
    private final class Sleeper: Sendable {
        private enum State {
            case idle
            case waiting(CheckedContinuation<Void, any Error>, ReactorTimer)
            case cancelled
            case done
        }

        private let state = Mutex(State.idle)

        func start(_ continuation: CheckedContinuation<Void, any Error>, until deadline: ContinuousClock.Instant) {
            // The timer is started under the lock, so its action (which takes the lock) finds it recorded even if
            // the deadline has already passed. `schedule` never runs the action itself.
            let cancelled = state.withLock { s -> Bool in
                if case .cancelled = s { return true }
                let timer = Timers.schedule(at: deadline) { [self] in self.finish() }
                s = .waiting(continuation, timer)
                return false
            }
            if cancelled { continuation.resume(throwing: CancellationError()) }
        }

        private func finish() {
            let continuation: CheckedContinuation<Void, any Error>? = state.withLock { s in
                guard case let .waiting(c, _) = s else { return nil }
                s = .done
                return c
            }
            continuation?.resume()
        }

        func cancel() {
            let taken: (CheckedContinuation<Void, any Error>, ReactorTimer)? = state.withLock { s in
                switch s {
                case .idle:
                    s = .cancelled
                    return nil
                case let .waiting(c, t):
                    s = .done
                    return (c, t)
                case .cancelled, .done:
                    return nil
                }
            }
            if let (continuation, timer) = taken {
                Timers.cancel(timer)
                continuation.resume(throwing: CancellationError())
            }
        }
    }
}
