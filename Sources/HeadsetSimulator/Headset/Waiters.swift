/// Tasks suspended on a headset until something changes, in the order they came; each has an id so that a cancelled
/// one can be resumed alone.
struct WaiterList {
    private var waiting: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

    var count: Int { waiting.count }
    var isEmpty: Bool { waiting.isEmpty }

    mutating func add(_ id: UInt64, _ continuation: CheckedContinuation<Void, Never>) {
        waiting.append((id, continuation))
    }

    /// Resumes waiter `id`, if it still waits.
    mutating func resume(_ id: UInt64) {
        guard let k = waiting.firstIndex(where: { $0.id == id }) else { return }
        waiting.remove(at: k).continuation.resume()
    }

    /// Resumes the oldest waiter.
    mutating func resumeFirst() {
        if !waiting.isEmpty { waiting.removeFirst().continuation.resume() }
    }

    /// Resumes every waiter.
    mutating func resumeAll() {
        let all = waiting
        waiting = []
        for waiter in all { waiter.continuation.resume() }
    }
}

// Suspending until the device changes, cancellably.
extension SimulatedHeadset {
    /// What a task waits for.
    enum Wait: Sendable {
        /// Room in the request queue (flow control in the application).
        case room
        /// The power to come back, or the end of the readiness delay (`waitUntilReady`).
        case readiness
    }

    /// A fresh waiter id.
    func makeWaiterID() -> UInt64 {
        nextWaiterID += 1
        return nextWaiterID
    }

    /// Suspends as waiter `id` until `resumeWaiters`/`resumeWaiter` resumes it, or at once when the task is (or gets)
    /// cancelled. The caller looks again at what it waits for.
    func suspend(_ id: UInt64, for wait: Wait) async {
        guard !Task.isCancelled else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                switch wait {
                case .room: roomWaiters.add(id, continuation)
                case .readiness: readinessWaiters.add(id, continuation)
                }
            }
        } onCancel: {
            Task { await self.resumeWaiter(id, for: wait) }
        }
    }

    /// Resumes waiter `id`, if it still waits.
    func resumeWaiter(_ id: UInt64, for wait: Wait) {
        switch wait {
        case .room: roomWaiters.resume(id)
        case .readiness: readinessWaiters.resume(id)
        }
    }
}
