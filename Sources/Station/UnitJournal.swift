import Synchronization

/// A unit's step records and its events, in order, written off the unit's path: a step's record is written while the
/// unit goes on with its next step, and every event of the unit after it (the step's `step-ended`, the next
/// `step-started`, progress) goes out only once the record is in the records, so whoever follows the events (the
/// operator page, the CFX publisher) finds the record there. At 64 units at once a record's round trip (the writer,
/// the fsync, the resume on a saturated pool) was most of the station's own time per unit.
///
/// The writes run in order, one after the other, in unstructured tasks: a stopping station's cancellation does not
/// reach them (the step's record is written as an aborted unit's is). A failed write is kept (the first one) and the
/// unit stops at its next step (`failure`) or when it waits for its records (`flushed()`).
final class UnitJournal: Sendable {
    private struct State {
        /// The last write or event handed over and not yet out (nil: everything is out, an event goes at once).
        var tail: Task<Void, Never>?
        var handedOver = 0
        var failure: (step: String, error: any Error)?
    }

    private let state = Mutex(State())
    private let deliver: @Sendable (StationEvent) -> Void

    init(deliver: @escaping @Sendable (StationEvent) -> Void) {
        self.deliver = deliver
    }

    /// Sends `event` once everything handed over before it is out (at once when nothing waits).
    func emit(_ event: StationEvent) {
        let now = state.withLock { s -> Bool in
            guard let previous = s.tail else { return true }
            s.tail = after(previous, &s) { [deliver] in deliver(event) }
            return false
        }
        if now { deliver(event) }
    }

    /// Writes `step`'s record (`write`) after everything handed over before it, then sends `event`, whether the write
    /// succeeded or not. Returns at once.
    func record(step: String, _ write: @escaping @Sendable () async throws -> Void, then event: StationEvent) {
        state.withLock { s in
            s.tail = after(s.tail, &s) { [deliver] in
                do { try await write() } catch { self.failed(step, error) }
                deliver(event)
            }
        }
    }

    /// The first write that failed: its step and error.
    var failure: (step: String, error: any Error)? { state.withLock { $0.failure } }

    /// Waits until every record and event handed over is out; the first write that failed.
    func flushed() async -> (step: String, error: any Error)? {
        if let tail = state.withLock({ $0.tail }) { await tail.value }
        return failure
    }

    /// A task that runs `body` after `previous`, and marks the journal empty when it was the last one handed over.
    private func after(_ previous: Task<Void, Never>?, _ s: inout State, _ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        s.handedOver += 1
        let number = s.handedOver
        return Task {
            await previous?.value
            await body()
            self.state.withLock { if $0.handedOver == number { $0.tail = nil } }
        }
    }

    private func failed(_ step: String, _ error: any Error) {
        state.withLock { if $0.failure == nil { $0.failure = (step, error) } }
    }
}
