/// The rules of a `RequestSession` as a value (docs/architecture.md, "State machines as values"): whose turn each
/// key is and who waits for it, the quiet period after a retransmitted or abandoned request, each request's slot on
/// the link (in flight, awaited, or ended with an outcome no one collected yet), its timer, what a reply or a Pending
/// answers, the send queue of a byte stream, and the session's end. One mutating function per event; times are given
/// (the session's clock, as `Duration` since its origin), never read. Each answers what the I/O shell does next
/// (resume this requester with this outcome, hand this waiter the key, start or stop this timer); the shell keeps the
/// continuations, timers, tasks and the link. An event that does not apply (a stale timer, a slot already ended, any
/// event after the end but collecting an outcome) changes nothing and asks for nothing; nothing traps.
///
/// Ids (slots, timers, waiters for a key) are minted here: a timer names its slot and its number, so a timer replaced
/// after Pending, or one that fired while its slot ended, is ignored.
///
/// Performance: on a request's path (`RequestSession`'s inlined members) every function here is inlined and
/// specialised with the session's `P`; the tables are stored properties mutated in place (no copy per event), a slot
/// is a struct in a dictionary (no allocation per request), and every answer is a small value (no array per event
/// but `fail`'s).
public struct RequestMachine<Key: Hashable & Sendable, Reply: Sendable, Failure: Error & Sendable & Hashable>: Sendable {
    /// How a request's wait ended.
    public enum Outcome: Sendable {
        case reply(Reply)
        /// No final reply in time (`accepted`: the device had answered Pending).
        case timedOut(accepted: Bool)
        /// The requester was cancelled.
        case cancelled
        /// The session ended.
        case failed(Failure)
    }

    /// The session as a whole.
    public enum Phase: Sendable, Hashable {
        case open
        /// Ended (link lost, write failed, closed): every later request fails with this.
        case failed(Failure)
    }

    /// One transmission of a request waiting for its reply. It exists before the request is sent, so a reply that
    /// arrives before the requester waits is kept (`ended`).
    public struct Slot: Sendable {
        public let key: Key
        public var stage: Stage
        @inlinable public init(key: Key, stage: Stage) { (self.key, self.stage) = (key, stage) }
    }

    public enum Stage: Sendable {
        /// On the link (or about to be), its timer running; the requester has not come to wait yet.
        case inFlight(Flight)
        /// On the link, the requester waiting.
        case awaited(Flight)
        /// Ended before its requester came to wait: the outcome waits for it.
        case ended(Outcome)
    }

    /// What holds while a request is on the link.
    public struct Flight: Sendable, Hashable {
        /// The number of the slot's running timer (one replaced after Pending may still fire: it is ignored).
        public var timer: UInt64
        /// The device answered Pending: it accepted the request and the final reply follows.
        public var accepted: Bool
        /// The slot holds its key's turn (a submitted request) and gives it back when it ends.
        public var holdsKey: Bool
        @inlinable public init(timer: UInt64, accepted: Bool, holdsKey: Bool) {
            (self.timer, self.accepted, self.holdsKey) = (timer, accepted, holdsKey)
        }
    }

    /// A key's turn: requests with the same key go one after another.
    public struct Turn: Sendable, Hashable {
        public var holder: Holder = .free
        /// No request with the key goes out before this time (a late reply to the last one is not its answer).
        public var quietUntil: Duration?
        /// Slots waiting for a reply with this key, oldest first.
        public var waiting: [UInt64] = []

        @inlinable public init() {}
        @inlinable var isIdle: Bool { holder == .free && quietUntil == nil && waiting.isEmpty }
    }

    public enum Holder: Sendable, Hashable {
        case free
        /// A request holds the key; `queue`: the waiters for it, in arrival order.
        case held(queue: [UInt64])
    }

    /// The answer to `takeTurn`.
    public enum TurnAnswer: Sendable, Hashable {
        /// The key is the caller's now.
        case granted
        /// Another request holds it: the caller waits as this waiter (`release` hands it over, `leaveQueue` when cancelled).
        case queued(waiter: UInt64)
    }

    /// A slot just opened: its id, and the number of the timer to start (nil after the end: no timer, and waiting for
    /// the slot answers the failure).
    public struct Opened: Sendable, Hashable {
        public let id: UInt64
        public let timer: UInt64?
        @inlinable public init(id: UInt64, timer: UInt64?) { (self.id, self.timer) = (id, timer) }
    }

    /// The answer to `claim`.
    public enum Awaited: Sendable {
        /// The outcome is there already (the slot is gone).
        case ready(Outcome)
        /// Wait for it: an `Ended` with `deliver` resumes the requester.
        case waiting
        /// No such slot (after the end: the failure; before: never opened, already collected or already awaited).
        case absent
    }

    /// A slot ended (or was forgotten): stop its timer, hand the key to `granted`, then resume its requester with
    /// `deliver` (nil: nobody waits yet; the slot keeps the outcome, or was forgotten).
    public struct Ended: Sendable {
        public let slot: UInt64
        public let deliver: Outcome?
        public let granted: UInt64?
        @inlinable public init(slot: UInt64, deliver: Outcome?, granted: UInt64?) {
            (self.slot, self.deliver, self.granted) = (slot, deliver, granted)
        }
    }

    /// The session ended: the requesters of `awaited` slots get the failure, the waiters in `granted` are handed
    /// their keys (they find the session failed), and every timer stops.
    public struct Failing: Sendable, Hashable {
        public let awaited: [UInt64]
        public let granted: [UInt64]
        public init(awaited: [UInt64], granted: [UInt64]) { (self.awaited, self.granted) = (awaited, granted) }
    }

    // The tables are stored under these names and read through the public properties below: an inlinable function
    // (the request path) may not use a private setter.
    @usableFromInline var _phase: Phase = .open
    @usableFromInline var _slots: [UInt64: Slot] = [:]
    @usableFromInline var _keys: [Key: Turn] = [:]
    @usableFromInline var _outgoing: [UInt8] = []
    @usableFromInline var _sending = false
    @usableFromInline var lastSlot: UInt64 = 0
    @usableFromInline var lastTimer: UInt64 = 0
    @usableFromInline var lastWaiter: UInt64 = 0

    @inlinable public init() {}

    public var phase: Phase { _phase }
    /// Requests on the link, and outcomes not yet collected, by slot id.
    public var slots: [UInt64: Slot] { _slots }
    /// Keys held, waited for, in their quiet period or awaiting a reply (an idle key has no entry).
    public var keys: [Key: Turn] { _keys }
    /// Frames waiting for the send in flight (byte streams), and whether a send is in flight.
    public var outgoing: [UInt8] { _outgoing }
    public var sending: Bool { _sending }

    /// The session's failure once it ended.
    @inlinable public var failure: Failure? {
        if case let .failed(failure) = _phase { return failure }
        return nil
    }

    @inlinable var isOpen: Bool {
        if case .open = _phase { return true }
        return false
    }

    /// Requests waiting for a busy key.
    public var queuedRequests: Int {
        _keys.values.reduce(0) { count, turn in
            if case let .held(queue) = turn.holder { return count + queue.count }
            return count
        }
    }

    /// Requesters waiting for their slot's outcome.
    public var awaitedRequests: Int {
        _slots.values.reduce(0) { count, slot in
            if case .awaited = slot.stage { return count + 1 }
            return count
        }
    }

    /// Keys in their quiet period at `now` with a request holding them (waiting it out).
    public func quietKeys(now: Duration) -> Int {
        _keys.values.filter { $0.holder != .free && ($0.quietUntil.map { $0 > now } ?? false) }.count
    }

    // MARK: Turns

    /// Mutates the turn of `key` in place (made when missing, dropped when idle after): one lookup for a key that has
    /// a turn, a lookup and an insertion for one that has none.
    @inlinable @inline(__always)
    mutating func updateTurn<R>(_ key: Key, _ body: (inout Turn) -> R) -> R {
        if let index = _keys.index(forKey: key) { return update(at: index, body) }
        var turn = Turn()
        let result = body(&turn)
        if !turn.isIdle { _keys[key] = turn }
        return result
    }

    /// Mutates the turn at `index` in place, dropping it when idle after.
    @inlinable @inline(__always)
    mutating func update<R>(at index: [Key: Turn].Index, _ body: (inout Turn) -> R) -> R {
        let result = body(&_keys.values[index])
        if _keys.values[index].isIdle { _keys.remove(at: index) }
        return result
    }

    /// A request asks for its key's turn.
    @inlinable
    public mutating func takeTurn(_ key: Key) -> TurnAnswer {
        guard isOpen else { return .granted }
        lastWaiter += 1
        let waiter = lastWaiter
        return updateTurn(key) { turn in
            guard case var .held(queue) = turn.holder else {
                turn.holder = .held(queue: [])
                return .granted
            }
            turn.holder = .free  // The queue is unique while it grows.
            queue.append(waiter)
            turn.holder = .held(queue: queue)
            return .queued(waiter: waiter)
        }
    }

    /// A request of a batch takes its key only if the key is free and its quiet period over.
    @inlinable
    public mutating func takeTurnIfReady(_ key: Key, now: Duration) -> Bool {
        guard isOpen else { return false }
        if let turn = _keys[key], turn.holder != .free || (turn.quietUntil.map { $0 > now } ?? false) { return false }
        updateTurn(key) { turn in
            turn.holder = .held(queue: [])
            turn.quietUntil = nil
        }
        return true
    }

    /// A waiter for a key was cancelled: true when it left the queue (false: it was handed the key already).
    @inlinable
    public mutating func leaveQueue(_ waiter: UInt64, _ key: Key) -> Bool {
        guard let turn = _keys[key], case .held(let queue) = turn.holder, queue.contains(waiter) else { return false }
        updateTurn(key) { turn in
            guard case var .held(queue) = turn.holder else { return }
            turn.holder = .free
            queue.removeAll { $0 == waiter }
            turn.holder = .held(queue: queue)
        }
        return true
    }

    /// The holder of `key` is done with it: the next waiter, if any, is handed the key (it stays held).
    @inlinable
    public mutating func release(_ key: Key) -> UInt64? {
        guard isOpen, let index = _keys.index(forKey: key) else { return nil }
        return update(at: index) { turn in
            guard case var .held(queue) = turn.holder else { return nil }
            guard !queue.isEmpty else {
                turn.holder = .free
                return nil
            }
            turn.holder = .free
            let next = queue.removeFirst()
            turn.holder = .held(queue: queue)
            return next
        }
    }

    /// The holder of `key` asks whether it must wait before sending: the end of the quiet period when it is after
    /// `now`; nil when it may send (the quiet period, over, is forgotten) or the session ended.
    @inlinable
    public mutating func quietPeriod(_ key: Key, now: Duration) -> Duration? {
        guard isOpen, let index = _keys.index(forKey: key), let quiet = _keys.values[index].quietUntil else { return nil }
        if quiet > now { return quiet }
        update(at: index) { $0.quietUntil = nil }
        return nil
    }

    /// No request with `key` goes out before `until`.
    @inlinable
    public mutating func beginQuiet(_ key: Key, until: Duration) {
        guard isOpen else { return }
        updateTurn(key) { $0.quietUntil = until }
    }

    // MARK: Slots

    /// A slot for the next reply with `key`, before its request is sent (`holdsKey`: a submitted request, which
    /// keeps its key until it ends). Start its timer with the number given.
    @inlinable
    public mutating func openSlot(_ key: Key, holdsKey: Bool) -> Opened {
        lastSlot += 1
        let id = lastSlot
        guard isOpen else { return Opened(id: id, timer: nil) }
        lastTimer += 1
        _slots[id] = Slot(key: key, stage: .inFlight(Flight(timer: lastTimer, accepted: false, holdsKey: holdsKey)))
        updateTurn(key) { $0.waiting.append(id) }
        return Opened(id: id, timer: lastTimer)
    }

    /// The requester comes to wait for its slot.
    @inlinable
    public mutating func claim(_ id: UInt64) -> Awaited {
        guard let index = _slots.index(forKey: id) else { return .absent }
        switch _slots.values[index].stage {
        case let .ended(outcome):
            _slots.remove(at: index)
            return .ready(outcome)
        case let .inFlight(flight):
            _slots.values[index].stage = .awaited(flight)
            return .waiting
        case .awaited:
            return .absent
        }
    }

    /// A slot's timer fired: the request timed out, unless the timer is stale or the slot ended.
    @inlinable
    public mutating func timerFired(_ id: UInt64, number: UInt64) -> Ended? {
        guard let flight = _slots[id]?.flight, flight.timer == number else { return nil }
        return end(id, with: .timedOut(accepted: flight.accepted))
    }

    /// The requester waiting for (or about to wait for) the slot was cancelled.
    @inlinable
    public mutating func cancel(_ id: UInt64) -> Ended? {
        end(id, with: .cancelled)
    }

    /// The slot's request was never sent (its write failed): the slot goes, its key (if it holds it) is handed on.
    /// An awaited slot is not forgotten (its requester waits for an outcome).
    @inlinable
    public mutating func forget(_ id: UInt64) -> Ended? {
        guard let slot = _slots[id] else { return nil }
        switch slot.stage {
        case .awaited:
            return nil
        case .ended:
            _slots[id] = nil
            return Ended(slot: id, deliver: nil, granted: nil)
        case let .inFlight(flight):
            _slots[id] = nil
            updateTurn(slot.key) { $0.waiting.removeAll { $0 == id } }
            return Ended(slot: id, deliver: nil, granted: flight.holdsKey ? release(slot.key) : nil)
        }
    }

    /// The final reply for `key` arrived: it answers the oldest slot waiting for one (nil: none waits, an unexpected
    /// reply).
    @inlinable
    public mutating func reply(_ reply: Reply, key: Key) -> Ended? {
        guard let index = _keys.index(forKey: key), let id = _keys.values[index].waiting.first else { return nil }
        return end(id, with: .reply(reply))
    }

    /// The device answered Pending for `key`: the oldest slot waiting with it is accepted and waits for its final
    /// reply on a new timer (its number returned; nil: none waits, an unexpected reply).
    @inlinable
    public mutating func pending(_ key: Key) -> (slot: UInt64, timer: UInt64)? {
        guard let turn = _keys.index(forKey: key), let id = _keys.values[turn].waiting.first,
              let index = _slots.index(forKey: id) else { return nil }
        lastTimer += 1
        switch _slots.values[index].stage {
        case var .inFlight(flight):
            (flight.timer, flight.accepted) = (lastTimer, true)
            _slots.values[index].stage = .inFlight(flight)
        case var .awaited(flight):
            (flight.timer, flight.accepted) = (lastTimer, true)
            _slots.values[index].stage = .awaited(flight)
        case .ended:
            return nil
        }
        return (id, lastTimer)
    }

    /// Ends an unended slot with `outcome`: out of its key's reply queue, its key handed on (if it holds it), the
    /// outcome to its requester (or kept for it).
    @inlinable
    mutating func end(_ id: UInt64, with outcome: Outcome) -> Ended? {
        guard let index = _slots.index(forKey: id), let flight = _slots.values[index].flight else { return nil }
        let key = _slots.values[index].key
        let deliver: Outcome?
        if case .awaited = _slots.values[index].stage {
            _slots.remove(at: index)
            deliver = outcome
        } else {
            _slots.values[index].stage = .ended(outcome)
            deliver = nil
        }
        updateTurn(key) { $0.waiting.removeAll { $0 == id } }
        return Ended(slot: id, deliver: deliver, granted: flight.holdsKey ? release(key) : nil)
    }

    // MARK: Sending (byte streams)

    /// Queues a frame for the send in flight (or the next).
    @inlinable
    public mutating func enqueue(_ frame: [UInt8]) {
        _outgoing.append(contentsOf: frame)
    }

    /// A task becomes the sender: false when a send is in flight already.
    @inlinable
    public mutating func startSending() -> Bool {
        guard !_sending else { return false }
        _sending = true
        return true
    }

    /// The next batch to write, all that is queued (nil: nothing, or the session ended).
    @inlinable
    public mutating func nextBatch() -> [UInt8]? {
        guard !_outgoing.isEmpty, isOpen else { return nil }
        let batch = _outgoing
        _outgoing.removeAll(keepingCapacity: true)
        return batch
    }

    /// The sender was cancelled before writing `batch`: it goes back to the front of the queue.
    @inlinable
    public mutating func sendCancelled(_ batch: [UInt8]) {
        _outgoing.insert(contentsOf: batch, at: 0)
    }

    /// The sender is done: true when frames were queued meanwhile (a cancelled send) and a task of the session must
    /// send them.
    @inlinable
    public mutating func stopSending() -> Bool {
        _sending = false
        return !_outgoing.isEmpty && isOpen
    }

    // MARK: The end

    /// The session ends with `failure` (nil: it had ended already). Outcomes nobody collected yet stay; every other
    /// slot ends, every key and waiter is let go.
    public mutating func fail(_ failure: Failure) -> Failing? {
        guard isOpen else { return nil }
        _phase = .failed(failure)
        var awaited: [UInt64] = []
        _slots = _slots.filter { id, slot in
            switch slot.stage {
            case .ended: return true
            case .awaited: awaited.append(id); return false
            case .inFlight: return false
            }
        }
        var granted: [UInt64] = []
        for turn in _keys.values { if case let .held(queue) = turn.holder { granted += queue } }
        _keys = [:]
        _outgoing = []
        return Failing(awaited: awaited.sorted(), granted: granted.sorted())
    }
}

extension RequestMachine.Slot {
    /// What holds while the slot's request is on the link (nil once it ended).
    @inlinable var flight: RequestMachine.Flight? {
        switch stage {
        case let .inFlight(flight), let .awaited(flight): flight
        case .ended: nil
        }
    }
}

extension RequestMachine.Outcome: Equatable where Reply: Equatable {}
extension RequestMachine.Outcome: Hashable where Reply: Hashable {}
extension RequestMachine.Stage: Equatable where Reply: Equatable {}
extension RequestMachine.Stage: Hashable where Reply: Hashable {}
extension RequestMachine.Slot: Equatable where Reply: Equatable {}
extension RequestMachine.Slot: Hashable where Reply: Hashable {}
extension RequestMachine.Awaited: Equatable where Reply: Equatable {}
extension RequestMachine.Ended: Equatable where Reply: Equatable {}
