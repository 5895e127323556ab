import Synchronization

/// Runs `body` in a task of its own and returns its result, or throws `late()` once `timeout` has passed without
/// waiting for it: a call whose library does not honour cancellation promptly (postgres-nio waiting for a pooled
/// connection to a server that is down) still returns on time. `cancelLate` cancels the abandoned work; without it
/// the work runs to its end (for work that must not be cut between two effects). Cancelling the caller ends the
/// wait at once with `CancellationError` and cancels the work. A result that comes after the wait was given up goes
/// to `discard` (a connection to close: dropping it would leak it). The one deadline helper: the records' database
/// calls, the WebSocket writes of the operator page and the hub's JSON-RPC (a client that takes nothing is dropped),
/// connecting over TCP, RFCOMM and BLE (a connection made after the deadline is closed), and the tests' time limit.
public func withDeadline<T: Sendable>(
    _ timeout: Duration, cancelLate: Bool = true, late: @escaping @Sendable () -> any Error,
    discard: (@Sendable (T) async -> Void)? = nil,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.start(continuation)
            let work = Task {
                do {
                    let value = try await body()
                    if !race.finish(.success(value)) { await discard?(value) }
                } catch {
                    race.finish(.failure(error))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                if race.finish(.failure(late())), cancelLate { work.cancel() }
            }
            race.attach(work: work, timer: timer)
        }
    } onCancel: {
        if race.finish(.failure(CancellationError())) { race.cancelWork() }
    }
}

/// The one resumption of a `withDeadline` wait.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }
    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { s -> Result<T, any Error>? in
            if let result = s.result { return result }
            s.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func attach(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let done = state.withLock { s -> Bool in
            s.work = work
            s.timer = timer
            return s.result != nil
        }
        if done { timer.cancel() }
    }

    /// Resumes the wait with `result` if nothing did yet; true when this call did.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        let (continuation, timer, first) = state.withLock { s -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?, Bool) in
            guard s.result == nil else { return (nil, nil, false) }
            s.result = result
            defer { s.continuation = nil }
            return (s.continuation, s.timer, true)
        }
        timer?.cancel()
        continuation?.resume(with: result)
        return first
    }

    func cancelWork() { state.withLock { $0.work }?.cancel() }
}
