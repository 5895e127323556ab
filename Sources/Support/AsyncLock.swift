import Synchronization

/// A FIFO mutual-exclusion lock for async code that suspends instead of blocking a thread.
///
/// Used to serialise concurrent `send` calls so each call's bytes stay contiguous. Waiting is cancellation-aware:
/// a cancelled waiter leaves the queue and throws `CancellationError`; ownership is handed directly to the next
/// waiter on `unlock()`, so there is no thundering herd and no barging.
package final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Acquires the lock, suspending while somebody else holds it. Throws `CancellationError` if cancelled while
    /// waiting (the lock is then not held).
    package nonisolated(nonsending) func lock() async throws {
        let id: UInt64? = state.withLock { s in
            if !s.locked {
                s.locked = true
                return nil
            }
            s.nextID += 1
            return s.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled: Bool = state.withLock { s in
                    if Task.isCancelled { return true }
                    if !s.locked {
                        // Released between the fast path and here.
                        s.locked = true
                        continuation.resume()
                        return false
                    }
                    s.waiters.append((id, continuation))
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let removed: CheckedContinuation<Void, any Error>? = state.withLock { s in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index).continuation
            }
            removed?.resume(throwing: CancellationError())
        }
    }

    /// Releases the lock, handing it to the longest waiter if there is one.
    package func unlock() {
        let next: CheckedContinuation<Void, any Error>? = state.withLock { s in
            if s.waiters.isEmpty {
                s.locked = false
                return nil
            }
            return s.waiters.removeFirst().continuation
        }
        next?.resume()
    }

    /// Runs `body` while holding the lock.
    package nonisolated(nonsending) func withLock<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        try await lock()
        defer { unlock() }
        return try await body()
    }
}
