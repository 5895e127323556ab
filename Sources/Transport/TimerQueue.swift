import HeapModule

/// The I/O reactor's timers as a value: deadlines with their actions, and when the reactor's one timerfd must fire.
/// No I/O and no clock reads (the caller passes `now`), so every rule is tested on plain values.
///
/// - Actions due at the same instant run in the order they were added.
/// - A cancelled timer's action is dropped at once; its heap entry is discarded lazily (when it reaches the top, or
///   when cancelled entries outnumber live ones four to one, all at once), so cancelling is O(1).
/// - `add` asks for the timerfd to be armed only when the new deadline is earlier than the one it is armed for:
///   a burst of timers with growing deadlines (a session's requests) arms it once.
struct TimerQueue<Instant: Comparable & Sendable> {
    typealias Action = @Sendable () -> Void

    private struct Entry: Comparable {
        var deadline: Instant
        var id: UInt64

        static func < (a: Entry, b: Entry) -> Bool {
            a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
        }
    }

    private var heap = Heap<Entry>()
    private var actions: [UInt64: Action] = [:]
    private var nextID: UInt64 = 1
    /// The deadline the timerfd is armed for (nil: disarmed).
    private(set) var armedFor: Instant?

    /// Timers added and neither run nor cancelled.
    var count: Int { actions.count }

    /// Heap entries, cancelled ones included (for tests of the lazy clean-up).
    var entries: Int { heap.count }

    /// Adds a timer; returns its id, and the instant to arm the timerfd for when it must fire earlier than armed.
    mutating func add(at deadline: Instant, _ action: @escaping Action) -> (id: UInt64, arm: Instant?) {
        let id = nextID
        nextID += 1
        heap.insert(Entry(deadline: deadline, id: id))
        actions[id] = action
        if let armed = armedFor, armed <= deadline { return (id, nil) }
        armedFor = deadline
        return (id, deadline)
    }

    /// Cancels a timer; true when it had neither run nor been cancelled. The timerfd stays armed (a wake-up that
    /// finds nothing due re-arms it for what is left).
    mutating func cancel(_ id: UInt64) -> Bool {
        guard actions.removeValue(forKey: id) != nil else { return false }
        if heap.count > 64 && heap.count > 4 * actions.count {
            heap = Heap(heap.unordered.filter { actions[$0.id] != nil })
        }
        return true
    }

    /// The timerfd fired (or may have): takes every action due at `now` (nil: every action), in deadline order, and
    /// says what to arm the timerfd for next (nil: nothing is left).
    mutating func fire(now: Instant?) -> (due: [Action], arm: Instant?) {
        var due: [Action] = []
        while let top = heap.min, now.map({ top.deadline <= $0 }) ?? true || actions[top.id] == nil {
            heap.removeMin()
            if let action = actions.removeValue(forKey: top.id) { due.append(action) }
        }
        armedFor = heap.min?.deadline
        return (due, armedFor)
    }
}
