import Synchronization

/// The tasks parked on one object's state, at most one per slot (a link's reader, its writer, ...), each until woken or
/// until a deadline on the reactor's timers: the waiter table of `MemoryPipe` and `LinkConditioner`. It lives inside
/// the owner's `Mutex`-guarded state, so that a loop's step and its parking happen under one lock (`park`): a wake-up
/// that comes between the two cannot be lost.
struct Parking<Slot: Hashable & Sendable>: Sendable {
    struct Waiter: Sendable {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
        var timer: ReactorTimer?
        /// When the timer wakes it (nil: parked until woken).
        var deadline: ContinuousClock.Instant?

        /// Resumes the parked task (its loop runs its step again), or makes it throw `error`; cancels its timer.
        func resume(throwing error: (any Error)? = nil) {
            if let timer { Timers.cancel(timer) }
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
    }

    /// What a parked loop does next.
    enum Step {
        case done
        case wait
        case waitUntil(ContinuousClock.Instant)
    }

    private var waiters: [Slot: Waiter] = [:]
    private var nextID: UInt64 = 0

    func isParked(_ slot: Slot) -> Bool { waiters[slot] != nil }

    /// Takes the waiter in `slot` (only if it is `id`, when given), to be resumed outside the lock.
    mutating func take(_ slot: Slot, id: UInt64? = nil) -> Waiter? {
        guard let w = waiters[slot], id == nil || w.id == id else { return nil }
        waiters[slot] = nil
        return w
    }

    /// Takes every waiter, to be resumed outside the lock.
    mutating func takeAll() -> [Waiter] {
        defer { waiters = [:] }
        return Array(waiters.values)
    }

    /// New data for the waiter in `slot`, due at `dueAt`: a waiter parked until later (or until woken) is woken at
    /// `dueAt` by a timer (`wake(slot, id)`) instead of now, when it would only park again until then; one parked until
    /// an earlier deadline is left alone. Returns the timer it replaced, to be cancelled outside the lock.
    mutating func wake(
        _ slot: Slot, at dueAt: ContinuousClock.Instant, _ wake: @escaping @Sendable (Slot, UInt64) -> Void
    ) -> ReactorTimer? {
        guard var waiter = waiters[slot] else { return nil }
        if let deadline = waiter.deadline, deadline <= dueAt { return nil }
        let old = waiter.timer
        let id = waiter.id
        waiter.timer = Timers.schedule(at: dueAt) { wake(slot, id) }
        waiter.deadline = dueAt
        waiters[slot] = waiter
        return old
    }

    fileprivate mutating func token() -> UInt64 {
        nextID += 1
        return nextID
    }

    fileprivate mutating func park(_ slot: Slot, _ waiter: Waiter) { waiters[slot] = waiter }
}

/// A state that parks its tasks in `parking`.
protocol ParkingState {
    associatedtype Slot: Hashable & Sendable
    var parking: Parking<Slot> { get set }
}

/// Runs `step` under `lock` until it returns `.done`, parking in `slot` of the state's `parking` in between — until
/// woken (`Parking.take`, then `resume`), or until the deadline of `.waitUntil` (an absolute instant, on the reactor's
/// timers, which call `wake(slot, id)`). Throws what `step` throws; cancellable (only while not making progress, so no
/// data is lost by it).
nonisolated(nonsending) func parkLoop<State: ParkingState>(
    _ slot: State.Slot, in lock: borrowing Mutex<State>,
    now: () -> ContinuousClock.Instant = { ContinuousClock.now },
    wake: @escaping @Sendable (State.Slot, UInt64) -> Void,
    _ step: (inout State, ContinuousClock.Instant) throws(TransportError) -> Parking<State.Slot>.Step
) async throws {
    while true {
        try Task.checkCancellation()
        // Fast path without suspending: most calls can proceed at once.
        let id: UInt64? = try lock.withLock { s throws(TransportError) in
            if case .done = try step(&s, now()) { return nil }
            return s.parking.token()
        }
        guard let id else { return }
        var done = false
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = lock.withLock { s in
                    let next: Parking<State.Slot>.Step
                    do {
                        next = try step(&s, now())
                    } catch {
                        return .failure(error)
                    }
                    var deadline: ContinuousClock.Instant?
                    switch next {
                    case .done:
                        done = true
                        return .success(())
                    case .wait:
                        break
                    case .waitUntil(let instant):
                        deadline = instant
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    // The reactor's timers: a parked loop may wait for every chunk's delivery time, and a task sleeping
                    // per chunk cost more than the rest of a link's work.
                    let timer = deadline.map { at in Timers.schedule(at: at) { wake(slot, id) } }
                    s.parking.park(slot, .init(id: id, continuation: continuation, timer: timer, deadline: deadline))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            lock.withLock { $0.parking.take(slot, id: id) }?.resume(throwing: CancellationError())
        }
        if done { return }
    }
}
