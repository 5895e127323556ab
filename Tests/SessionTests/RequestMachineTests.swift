import Session
import Testing

/// `RequestMachine` alone, on explicit times: every event in every state of one key and its slot (the key is 1; a
/// reply is a string), then the send queue and the rules that take several events to see.
@Suite struct RequestMachineTests {
    struct Failure: Error, Hashable { let reason: String }
    typealias Machine = RequestMachine<UInt8, String, Failure>
    static let lost = Failure(reason: "lost")

    /// What the machine knows of key 1, one state each.
    enum Situation: CaseIterable, CustomTestStringConvertible {
        /// Nothing happened.
        case idle
        /// A request holds the key (before it sends).
        case held
        /// A request holds it and another waits for it.
        case queued
        /// A request holds it and must wait out a quiet period until 10 s.
        case quiet
        /// The key is free, in its quiet period until 10 s (what a retransmitted request leaves).
        case quietFree
        /// A request is on the link; its requester has not come to wait yet.
        case inFlight
        /// … and waits.
        case awaited
        /// … and the device answered Pending.
        case accepted
        /// The reply came before the requester waited.
        case ended
        /// A submitted request (its slot holds the key) is on the link.
        case submitted
        /// The session failed while a request waited.
        case failed
        /// The session failed after a reply nobody collected yet.
        case failedWithOutcome

        var testDescription: String { String(describing: self) }
        var hasSlot: Bool { [.inFlight, .awaited, .accepted, .ended, .submitted, .failedWithOutcome].contains(self) }
        var isFailed: Bool { self == .failed || self == .failedWithOutcome }
    }

    struct Made {
        var m = Machine()
        /// The slot of the situation (99: none), its running timer, the one replaced (Pending), the waiter queued.
        var slot: UInt64 = 99
        var timer: UInt64 = 99
        var replacedTimer: UInt64?
        var waiter: UInt64 = 99
    }

    /// Everything the machine holds, to see that an event changed nothing.
    struct Snapshot: Hashable {
        let phase: Machine.Phase
        let slots: [UInt64: Machine.Slot]
        let keys: [UInt8: Machine.Turn]
        let outgoing: [UInt8]
        let sending: Bool
        init(_ m: Machine) { (phase, slots, keys, outgoing, sending) = (m.phase, m.slots, m.keys, m.outgoing, m.sending) }
    }

    static func make(_ situation: Situation) -> Made {
        var made = Made()
        func open(holdsKey: Bool = false) {
            #expect(made.m.takeTurn(1) == .granted)
            let opened = made.m.openSlot(1, holdsKey: holdsKey)
            (made.slot, made.timer) = (opened.id, opened.timer ?? 0)
        }
        switch situation {
        case .idle:
            break
        case .held:
            #expect(made.m.takeTurn(1) == .granted)
        case .queued:
            #expect(made.m.takeTurn(1) == .granted)
            guard case let .queued(waiter) = made.m.takeTurn(1) else { Issue.record("not queued"); break }
            made.waiter = waiter
        case .quiet:
            #expect(made.m.takeTurn(1) == .granted)
            made.m.beginQuiet(1, until: .seconds(10))
        case .quietFree:
            #expect(made.m.takeTurn(1) == .granted)
            made.m.beginQuiet(1, until: .seconds(10))
            #expect(made.m.release(1) == nil)
        case .inFlight:
            open()
        case .awaited:
            open()
            #expect(made.m.claim(made.slot) == .waiting)
        case .accepted:
            open()
            #expect(made.m.claim(made.slot) == .waiting)
            let accepted = made.m.pending(1)
            #expect(accepted?.slot == made.slot)
            made.replacedTimer = made.timer
            made.timer = accepted?.timer ?? 0
        case .ended:
            open()
            #expect(made.m.reply("r", key: 1) != nil)
        case .submitted:
            open(holdsKey: true)
        case .failed:
            open()
            #expect(made.m.claim(made.slot) == .waiting)
            #expect(made.m.fail(lost) != nil)
        case .failedWithOutcome:
            open()
            #expect(made.m.reply("r", key: 1) != nil)
            #expect(made.m.fail(lost) != nil)
        }
        return made
    }

    static func stage(_ m: Machine, _ slot: UInt64) -> Machine.Stage? { m.slots[slot]?.stage }
    static func holder(_ m: Machine) -> Machine.Holder? { m.keys[1]?.holder }

    // MARK: Each event in each state

    @Test(arguments: Situation.allCases)
    func takeTurn(_ situation: Situation) {
        var made = Self.make(situation)
        let answer = made.m.takeTurn(1)
        switch situation {
        case .idle, .quietFree:
            #expect(answer == .granted)
            #expect(Self.holder(made.m) == .held(queue: []))
        case .failed, .failedWithOutcome:
            #expect(answer == .granted)
            #expect(made.m.keys.isEmpty)
        case .queued:
            guard case let .queued(waiter) = answer else { Issue.record("\(answer)"); return }
            #expect(Self.holder(made.m) == .held(queue: [made.waiter, waiter]))
            #expect(made.m.queuedRequests == 2)
        case .held, .quiet, .inFlight, .awaited, .accepted, .ended, .submitted:
            guard case let .queued(waiter) = answer else { Issue.record("\(answer)"); return }
            #expect(Self.holder(made.m) == .held(queue: [waiter]))
            #expect(made.m.queuedRequests == 1)
        }
    }

    @Test(arguments: Situation.allCases)
    func takeTurnIfReady(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let taken = made.m.takeTurnIfReady(1, now: .seconds(9))
        switch situation {
        case .idle:
            #expect(taken)
            #expect(Self.holder(made.m) == .held(queue: []))
        case .quietFree:
            #expect(!taken)
            #expect(Snapshot(made.m) == before)
            // Once its quiet period is over, the key is taken and the period forgotten.
            #expect(made.m.takeTurnIfReady(1, now: .seconds(10)) == true)
            #expect(made.m.keys[1] == { var t = Machine.Turn(); t.holder = .held(queue: []); return t }())
        default:
            #expect(!taken)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func leaveQueue(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let left = made.m.leaveQueue(made.waiter, 1)
        if situation == .queued {
            #expect(left)
            #expect(Self.holder(made.m) == .held(queue: []))
            #expect(made.m.queuedRequests == 0)
            #expect(made.m.leaveQueue(made.waiter, 1) == false, "a waiter leaves once")
        } else {
            #expect(!left)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func release(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let next = made.m.release(1)
        switch situation {
        case .queued:
            #expect(next == made.waiter)
            #expect(Self.holder(made.m) == .held(queue: []), "the key passes to the waiter")
        case .held, .ended:
            #expect(next == nil)
            #expect(made.m.keys.isEmpty, "an idle key is forgotten")
        case .quiet:
            #expect(next == nil)
            #expect(Self.holder(made.m) == .free && made.m.keys[1]?.quietUntil == .seconds(10))
        case .inFlight, .awaited, .accepted, .submitted:
            #expect(next == nil)
            #expect(Self.holder(made.m) == .free && made.m.keys[1]?.waiting == [made.slot])
        case .idle, .quietFree, .failed, .failedWithOutcome:
            #expect(next == nil)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func quietPeriod(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let quiet = made.m.quietPeriod(1, now: .seconds(9))
        #expect(Snapshot(made.m) == before)
        switch situation {
        case .quiet, .quietFree:
            #expect(quiet == .seconds(10))
            // At its end the period is over and forgotten.
            #expect(made.m.quietPeriod(1, now: .seconds(10)) == nil)
            #expect(made.m.keys[1]?.quietUntil == nil)
        default:
            #expect(quiet == nil)
        }
    }

    @Test(arguments: Situation.allCases)
    func beginQuiet(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        made.m.beginQuiet(1, until: .seconds(5))
        if situation.isFailed {
            #expect(Snapshot(made.m) == before)
        } else {
            #expect(made.m.keys[1]?.quietUntil == .seconds(5))
            #expect(made.m.quietPeriod(1, now: .seconds(4)) == .seconds(5))
        }
    }

    @Test(arguments: Situation.allCases)
    func openSlot(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let opened = made.m.openSlot(1, holdsKey: false)
        if situation.isFailed {
            #expect(opened.timer == nil)
            #expect(Snapshot(made.m) == before)
            #expect(made.m.claim(opened.id) == .absent, "waiting for it answers the failure")
        } else {
            #expect(opened.timer != nil && opened.timer != made.timer)
            #expect(Self.stage(made.m, opened.id) == .inFlight(Machine.Flight(timer: opened.timer!, accepted: false, holdsKey: false)))
            let earlier: [UInt64] = [.inFlight, .awaited, .accepted, .submitted].contains(situation) ? [made.slot] : []
            #expect(made.m.keys[1]?.waiting == earlier + [opened.id], "replies answer the oldest slot first")
        }
    }

    @Test(arguments: Situation.allCases)
    func waitFor(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let answer = made.m.claim(made.slot)
        switch situation {
        case .inFlight, .submitted:
            #expect(answer == .waiting)
            guard case .awaited = Self.stage(made.m, made.slot) else { Issue.record("not awaited"); return }
        case .ended, .failedWithOutcome:
            #expect(answer == .ready(.reply("r")))
            #expect(made.m.slots.isEmpty, "an outcome is collected once")
            #expect(made.m.claim(made.slot) == .absent)
        case .awaited, .accepted:
            #expect(answer == .absent, "one requester per slot")
            #expect(Snapshot(made.m) == before)
        case .idle, .held, .queued, .quiet, .quietFree, .failed:
            #expect(answer == .absent)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func timerFired(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        // A stale timer (one replaced after Pending, or an unknown number) changes nothing.
        #expect(made.m.timerFired(made.slot, number: made.replacedTimer ?? 1000) == nil)
        #expect(Snapshot(made.m) == before)
        let ended = made.m.timerFired(made.slot, number: made.timer)
        switch situation {
        case .inFlight:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(Self.stage(made.m, made.slot) == .ended(.timedOut(accepted: false)), "kept for its requester")
            #expect(made.m.keys[1]?.waiting == [])
        case .awaited:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: .timedOut(accepted: false), granted: nil))
            #expect(made.m.slots.isEmpty)
        case .accepted:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: .timedOut(accepted: true), granted: nil))
            #expect(made.m.slots.isEmpty)
        case .submitted:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(made.m.keys.isEmpty, "the submitted slot gave its key back")
        case .idle, .held, .queued, .quiet, .quietFree, .ended, .failed, .failedWithOutcome:
            #expect(ended == nil)
            #expect(Snapshot(made.m) == before)
        }
        // Once ended, the slot's timer is stale too.
        let after = Snapshot(made.m)
        #expect(made.m.timerFired(made.slot, number: made.timer) == nil)
        #expect(Snapshot(made.m) == after)
    }

    @Test(arguments: Situation.allCases)
    func cancel(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let ended = made.m.cancel(made.slot)
        switch situation {
        case .inFlight:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(Self.stage(made.m, made.slot) == .ended(.cancelled))
        case .awaited, .accepted:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: .cancelled, granted: nil))
            #expect(made.m.slots.isEmpty && made.m.keys[1]?.waiting == [])
        case .submitted:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(made.m.keys.isEmpty)
        case .idle, .held, .queued, .quiet, .quietFree, .ended, .failed, .failedWithOutcome:
            #expect(ended == nil)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func forget(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let forgotten = made.m.forget(made.slot)
        switch situation {
        case .inFlight, .ended, .failedWithOutcome:
            #expect(forgotten == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(made.m.slots.isEmpty && made.m.keys[1]?.waiting ?? [] == [])
        case .submitted:
            #expect(forgotten == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(made.m.slots.isEmpty && made.m.keys.isEmpty, "its key is given back")
        case .awaited, .accepted:
            #expect(forgotten == nil, "a requester waits for it")
            #expect(Snapshot(made.m) == before)
        case .idle, .held, .queued, .quiet, .quietFree, .failed:
            #expect(forgotten == nil)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func reply(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let ended = made.m.reply("x", key: 1)
        switch situation {
        case .inFlight:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(Self.stage(made.m, made.slot) == .ended(.reply("x")))
        case .awaited, .accepted:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: .reply("x"), granted: nil))
            #expect(made.m.slots.isEmpty)
        case .submitted:
            #expect(ended == Machine.Ended(slot: made.slot, deliver: nil, granted: nil))
            #expect(made.m.keys.isEmpty)
        case .idle, .held, .queued, .quiet, .quietFree, .ended, .failed, .failedWithOutcome:
            #expect(ended == nil, "a reply nobody waits for is unexpected")
            #expect(Snapshot(made.m) == before)
        }
        #expect(made.m.reply("y", key: 2) == nil, "another key's reply answers nothing here")
    }

    @Test(arguments: Situation.allCases)
    func pending(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let accepted = made.m.pending(1)
        switch situation {
        case .inFlight, .awaited, .accepted, .submitted:
            #expect(accepted?.slot == made.slot)
            guard let timer = accepted?.timer else { return }
            #expect(timer != made.timer)
            let flight = Machine.Flight(timer: timer, accepted: true, holdsKey: situation == .submitted)
            #expect(Self.stage(made.m, made.slot) == (situation == .inFlight || situation == .submitted ? Machine.Stage.inFlight(flight) : Machine.Stage.awaited(flight)))
            // The timer before Pending is stale now.
            #expect(made.m.timerFired(made.slot, number: made.timer) == nil)
        case .idle, .held, .queued, .quiet, .quietFree, .ended, .failed, .failedWithOutcome:
            #expect(accepted == nil)
            #expect(Snapshot(made.m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func fail(_ situation: Situation) {
        var made = Self.make(situation)
        let before = Snapshot(made.m)
        let failing = made.m.fail(Failure(reason: "again"))
        if situation.isFailed {
            #expect(failing == nil)
            #expect(Snapshot(made.m) == before)
            #expect(made.m.failure == Self.lost, "the first failure stays")
            return
        }
        #expect(made.m.failure == Failure(reason: "again"))
        #expect(made.m.keys.isEmpty && made.m.queuedRequests == 0)
        switch situation {
        case .awaited, .accepted:
            #expect(failing == Machine.Failing(awaited: [made.slot], granted: []))
            #expect(made.m.slots.isEmpty)
        case .queued:
            #expect(failing == Machine.Failing(awaited: [], granted: [made.waiter]))
        case .ended:
            #expect(failing == Machine.Failing(awaited: [], granted: []))
            #expect(made.m.claim(made.slot) == .ready(.reply("r")), "a reply that came before the end is still collected")
        case .inFlight, .submitted:
            #expect(failing == Machine.Failing(awaited: [], granted: []))
            #expect(made.m.claim(made.slot) == .absent, "its requester gets the failure")
        default:
            #expect(failing == Machine.Failing(awaited: [], granted: []))
            #expect(made.m.slots.isEmpty)
        }
    }

    // MARK: The send queue, in each of its states

    enum Sender: CaseIterable { case idle, queuedIdle, sending, sendingQueued, failed }

    static func make(_ sender: Sender) -> Machine {
        var m = Machine()
        switch sender {
        case .idle: break
        case .queuedIdle: m.enqueue([1, 2])
        case .sending: #expect(m.startSending() == true)
        case .sendingQueued:
            #expect(m.startSending() == true)
            m.enqueue([1, 2])
        case .failed:
            m.enqueue([1, 2])
            #expect(m.startSending() == true)
            _ = m.fail(lost)
        }
        return m
    }

    @Test(arguments: Sender.allCases)
    func sendQueueEvents(_ sender: Sender) {
        // enqueue: frames queue in call order, whatever the state.
        var m = Self.make(sender)
        m.enqueue([3])
        #expect(m.outgoing == (sender == .queuedIdle || sender == .sendingQueued ? [1, 2, 3] : [3]))

        // startSending: one sender at a time.
        m = Self.make(sender)
        let started = m.startSending()
        #expect(started == (sender == .idle || sender == .queuedIdle))
        #expect(m.sending)

        // nextBatch: all that is queued, at once; nothing after the end.
        m = Self.make(sender)
        let batch = m.nextBatch()
        switch sender {
        case .queuedIdle, .sendingQueued:
            #expect(batch == [1, 2])
            #expect(m.outgoing.isEmpty && m.nextBatch() == nil)
        case .idle, .sending, .failed:
            #expect(batch == nil)
        }

        // sendCancelled: the batch goes back to the front.
        m = Self.make(sender)
        m.sendCancelled([9])
        #expect(m.outgoing == (sender == .queuedIdle || sender == .sendingQueued ? [9, 1, 2] : [9]))

        // stopSending: true when frames wait and the session is open (a task of the session sends them).
        m = Self.make(sender)
        let handOver = m.stopSending()
        #expect(handOver == (sender == .queuedIdle || sender == .sendingQueued))
        #expect(!m.sending)
    }

    // MARK: Rules over several events

    @Test func aSubmittedSlotHandsItsKeyToTheNextWaiterWhenItEnds() {
        var m = Machine()
        #expect(m.takeTurn(1) == .granted)
        let slot = m.openSlot(1, holdsKey: true)
        guard case let .queued(waiter) = m.takeTurn(1) else { Issue.record("not queued"); return }
        #expect(m.reply("r", key: 1) == Machine.Ended(slot: slot.id, deliver: nil, granted: waiter))
        #expect(m.keys[1]?.holder == .held(queue: []), "the waiter holds the key now")
        #expect(m.claim(slot.id) == .ready(.reply("r")))
    }

    @Test func repliesAnswerTheOldestSlotOfTheirKeyAndNoOther() {
        var m = Machine()
        let a = m.openSlot(1, holdsKey: false), b = m.openSlot(1, holdsKey: false), c = m.openSlot(2, holdsKey: false)
        #expect(m.reply("1", key: 1)?.slot == a.id)
        #expect(m.reply("2", key: 1)?.slot == b.id)
        #expect(m.reply("3", key: 1) == nil)
        #expect(m.reply("4", key: 2)?.slot == c.id)
        #expect(m.claim(a.id) == .ready(.reply("1")) && m.claim(b.id) == .ready(.reply("2")))
        #expect(m.claim(c.id) == .ready(.reply("4")))
        #expect(m.keys.isEmpty && m.slots.isEmpty)
    }

    @Test func waitersAreHandedTheKeyInArrivalOrderAndACancelledOneIsSkipped() {
        var m = Machine()
        #expect(m.takeTurn(7) == .granted)
        var waiters: [UInt64] = []
        for _ in 0..<3 {
            guard case let .queued(w) = m.takeTurn(7) else { Issue.record("not queued"); return }
            waiters.append(w)
        }
        #expect(m.queuedRequests == 3)
        #expect(m.leaveQueue(waiters[1], 7) == true)
        #expect(m.release(7) == waiters[0])
        #expect(m.release(7) == waiters[2])
        #expect(m.release(7) == nil)
        #expect(m.keys.isEmpty)
    }

    @Test func quietKeysCountOnlyHeldKeysInTheirPeriod() {
        var m = Machine()
        #expect(m.takeTurn(1) == .granted)
        m.beginQuiet(1, until: .seconds(4))
        m.beginQuiet(2, until: .seconds(4))  // Free: not waited out by anyone.
        #expect(m.quietKeys(now: .seconds(3)) == 1)
        #expect(m.quietKeys(now: .seconds(4)) == 0)
    }
}
