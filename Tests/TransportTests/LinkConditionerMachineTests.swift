import Testing
@testable import Transport

/// `LinkConditionerMachine` alone, on explicit times: every event in every state (of the link, the local side, the
/// delivery, the reader and the direct mode's timer), then the rules that take several events (the byte limit, the
/// bandwidth, faults, a direct write's handover). A link of 8000 bit/s (a byte a millisecond), 10 ms of latency and a
/// buffer of 4 bytes, unless said otherwise.
@Suite struct LinkConditionerMachineTests {
    typealias Machine = LinkConditionerMachine
    typealias Instant = ContinuousClock.Instant
    static let t0 = ContinuousClock.now
    static func ms(_ n: Int) -> Instant { t0 + .milliseconds(n) }
    static let conditions = LinkConditions(bitsPerSecond: 8000, latency: .milliseconds(10), linkBufferBytes: 4)
    static let failure = TransportError(.io, "p: broken")
    static let four: [UInt8] = [1, 2, 3, 4]
    static func noFaults(_ f: Machine.Faults) { Issue.record("no faults expected: \(f)") }

    static func machine(_ conditions: LinkConditions = conditions, direct: Bool = false, packets: Bool = false) -> Machine {
        Machine(settings: .init(conditions: conditions, packets: packets, direct: direct), now: t0)
    }

    enum Situation: CaseIterable, CustomTestStringConvertible {
        /// Nothing happened.
        case fresh
        /// 4 bytes queued in each direction at t0 (due at 14 ms).
        case queued
        /// A receive pending.
        case receiving
        /// Queued, then the delivery loop took the outgoing chunk: it is with the inner transport.
        case sending
        /// Direct mode: 4 bytes queued, the delivery timer armed for 14 ms.
        case armed
        /// Direct mode: the timer fired, the inner transport took 1 byte of 4: the rest handed over.
        case handover
        /// Queued, then sending failed.
        case deliveryFailed
        /// Direct mode: the reader running.
        case reading
        /// Direct mode: the reader waiting for the inner transport.
        case awaitingData
        /// Direct mode, packets, no bandwidth limit: a 1 MiB packet fills the incoming lane; the reader waits for room.
        case awaitingRoom
        /// Direct mode: 8 bytes came in at t0 (on the link until 8 ms); the reader waits for the bandwidth.
        case awaitingTime
        /// Direct mode: closed, the reader stopped.
        case stopped
        /// The inner transport failed at t0 (the receiver gets it at 10 ms).
        case readerEnded
        /// A limit of 6 bytes: 4 sent at t0, then 4 more at 4 ms cut to 2: the link goes down at 16 ms.
        case down
        /// Queued, then closed at t0 (draining until 1014 ms).
        case closed

        var testDescription: String { String(describing: self) }
    }

    static func make(_ situation: Situation) -> Machine {
        var m = machine()
        func queue() {
            #expect(m.send(four, offset: 0, count: 4, now: t0, faults: noFaults) == .carried(deliverAt: ms(14), reachedLimit: false, lostTail: false))
            #expect(m.receivedChunk(four, now: t0, faults: noFaults) == .init(due: ms(14), stop: false))
        }
        func directReader() {
            m = machine(direct: true)
            let started = m.resumeReading(from: .start)
            #expect(started)
        }
        switch situation {
        case .fresh:
            m = machine()
        case .queued:
            m = machine()
            queue()
        case .receiving:
            m = machine()
            #expect(m.beginReceive() == nil)
        case .sending:
            m = machine()
            queue()
            #expect(m.deliveryStep(now: ms(14)) == .send(four))
        case .armed:
            m = machine(direct: true)
            #expect(m.send(four, offset: 0, count: 4, now: t0, faults: noFaults) == .carried(deliverAt: ms(14), reachedLimit: false, lostTail: false))
            #expect(m.armDelivery(at: ms(14)) == 1)
        case .handover:
            m = make(.armed)
            #expect(m.deliveryTimerFired(1, now: ms(14)) == .send(four))
            m.handedOver(four, written: 1)
        case .deliveryFailed:
            m = make(.sending)
            m.deliveryFailed(failure)
        case .reading:
            directReader()
        case .awaitingData:
            directReader()
            m.awaitingData()
        case .awaitingRoom:
            m = machine(LinkConditions(latency: .milliseconds(10), linkBufferBytes: 4), direct: true, packets: true)
            let started = m.resumeReading(from: .start)
            #expect(started)
            #expect(m.receivedChunk([UInt8](repeating: 7, count: 1 << 20), now: t0, faults: noFaults) == .init(due: ms(10), stop: false))
            #expect(m.directReadStep(now: t0) == .stop)
        case .awaitingTime:
            directReader()
            #expect(m.receivedChunk(four + four, now: t0, faults: noFaults) == .init(due: ms(14), stop: false))
            #expect(m.directReadStep(now: t0) == .resumeAt(ms(4)))
        case .stopped:
            directReader()
            #expect(m.close(now: t0) == ms(1000))
            #expect(m.directReadStep(now: t0) == .stop)
        case .readerEnded:
            m = machine()
            m.readingFailed(failure, now: t0)
        case .down:
            var c = conditions
            c.disconnectAfterBytes = 6
            m = machine(c)
            #expect(m.send(four, offset: 0, count: 4, now: t0, faults: noFaults) == .carried(deliverAt: ms(14), reachedLimit: false, lostTail: false))
            #expect(m.send(four, offset: 0, count: 4, now: t0, faults: noFaults) == .waitUntil(ms(4)))
            #expect(m.send(four, offset: 0, count: 4, now: ms(4), faults: noFaults) == .carried(deliverAt: ms(16), reachedLimit: true, lostTail: true))
        case .closed:
            m = make(.queued)
            #expect(m.close(now: t0) == ms(1014))
        }
        return m
    }

    static func isClosed(_ s: Situation) -> Bool { s == .closed || s == .stopped }

    // MARK: The situations

    @Test(arguments: Situation.allCases)
    func situation(_ situation: Situation) {
        let m = Self.make(situation)
        switch situation {
        case .fresh, .queued, .readerEnded:
            #expect(m.delivery == .idle && !m.receiving && m.lifecycle == .open)
        case .receiving: #expect(m.receiving)
        case .sending: #expect(m.delivery == .sending && m.outgoing.isEmpty)
        case .armed: #expect(m.deliveryTimer == .armed(at: Self.ms(14), token: 1))
        case .handover:
            #expect(m.delivery == .handover(rest: [2, 3, 4]) && m.handovers == 1 && m.deliveryTimer == .unarmed)
        case .deliveryFailed: #expect(m.delivery == .failed(Self.failure) && m.deliveryFailure == Self.failure)
        case .reading: #expect(m.reader == .reading)
        case .awaitingData: #expect(m.reader == .awaitingData)
        case .awaitingRoom: #expect(m.reader == .awaitingRoom)
        case .awaitingTime: #expect(m.reader == .awaitingTime && m.incoming.linkFreeAt == Self.ms(8))
        case .stopped: #expect(m.reader == .stopped && m.isClosed)
        case .down: #expect(m.link == .down(at: Self.ms(16)) && m.disconnected && m.statistics.disconnected)
        case .closed: #expect(m.lifecycle == .closed(drainUntil: Self.ms(1014)))
        }
        if situation == .readerEnded { #expect(m.reader == .ended(Self.failure, at: Self.ms(10))) }
    }

    // MARK: Each event in each state

    @Test(arguments: Situation.allCases)
    func sendEmpty(_ situation: Situation) {
        let m = Self.make(situation)
        #expect(m.sendEmpty() == (Self.isClosed(situation) ? .closed : nil))
    }

    @Test(arguments: Situation.allCases)
    func send(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.send(Self.four, offset: 0, count: 4, now: Self.ms(100), faults: Self.noFaults)
        switch situation {
        case .closed, .stopped:
            #expect(answer == .refused(.closed) && m == before)
        case .down:
            #expect(answer == .refused(.linkDown) && m == before)
        case .deliveryFailed:
            #expect(answer == .refused(.failed(Self.failure)) && m == before)
        default:
            // 4 ms on the wire (none without a bandwidth limit), 10 ms of latency.
            let wire = situation == .awaitingRoom ? 0 : 4
            #expect(answer == .carried(deliverAt: Self.ms(110 + wire), reachedLimit: false, lostTail: false))
            #expect(m.outgoing.queuedBytes == before.outgoing.queuedBytes + 4 && m.outgoing.stats.chunks == before.outgoing.stats.chunks + 1)
            #expect(m.outgoing.linkFreeAt == Self.ms(100 + wire) && m.outgoing.lastDeliverAt == Self.ms(110 + wire))
            // A piece of a larger send.
            var piece = before
            #expect(piece.send(Self.four + Self.four, offset: 4, count: 4, now: Self.ms(100), faults: Self.noFaults) == answer)
            #expect(piece.outgoing.queue.last?.bytes == Self.four)
        }
    }

    @Test(arguments: Situation.allCases)
    func beginReceive(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let refusal = m.beginReceive()
        switch situation {
        case .closed, .stopped: #expect(refusal == .closed && m == before)
        case .receiving: #expect(refusal == .receivePending && m == before)
        default: #expect(refusal == nil && m.receiving)
        }
    }

    @Test(arguments: Situation.allCases)
    func endReceive(_ situation: Situation) {
        var m = Self.make(situation)
        var before = m
        m.endReceive()
        #expect(!m.receiving)
        before.endReceive()
        #expect(m == before)
    }

    @Test(arguments: Situation.allCases)
    func receiveStep(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.receiveStep(now: Self.ms(100))
        switch situation {
        case .closed, .stopped:
            #expect(answer == .refused(.closed) && m == before)
        case .queued, .sending, .deliveryFailed:
            #expect(answer == .bytes(Self.four) && m.incoming.isEmpty && m.incoming.queuedBytes == 0)
            var early = before
            #expect(early.receiveStep(now: Self.t0) == .waitUntil(Self.ms(14)) && early == before)
        case .awaitingTime:
            #expect(answer == .bytes(Self.four + Self.four), "byte-stream chunks due together are merged")
        case .awaitingRoom:
            #expect(answer == .bytes([UInt8](repeating: 7, count: 1 << 20)) && m.incoming.queuedBytes == 0)
        case .readerEnded:
            #expect(answer == .refused(.failed(Self.failure)) && m == before)
            var early = before
            #expect(early.receiveStep(now: Self.t0) == .waitUntil(Self.ms(10)), "after what was on the link")
        case .down:
            #expect(answer == .refused(.linkDown) && m == before)
            var early = before
            #expect(early.receiveStep(now: Self.t0) == .waitUntil(Self.ms(16)))
        case .fresh, .receiving, .armed, .handover, .reading, .awaitingData:
            #expect(answer == .wait && m == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func close(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let deadline = m.close(now: Self.ms(100))
        if Self.isClosed(situation) {
            #expect(deadline == nil && m == before, "once")
        } else {
            #expect(deadline == Self.ms(1100) && m.lifecycle == .closed(drainUntil: Self.ms(1100)))
            #expect(m.close(now: Self.ms(200)) == nil)
        }
        // Closing right after the last delivery: a second past it.
        var early = Self.make(situation)
        if !Self.isClosed(situation) {
            #expect(early.close(now: Self.t0) == max(Self.t0, before.outgoing.lastDeliverAt) + .seconds(1))
        }
    }

    @Test(arguments: Situation.allCases)
    func closeStep(_ situation: Situation) {
        var m = Self.make(situation)
        // Not closing: nothing to wait for. Closed with a chunk queued: until it is delivered, or the deadline.
        #expect(m.closeStep(now: Self.ms(100)) == (situation == .closed ? .waitUntil(Self.ms(1014)) : .proceed))
        _ = m.close(now: Self.ms(100))
        guard case let .closed(deadline) = m.lifecycle else { Issue.record("not closed"); return }
        let answer = m.closeStep(now: Self.ms(100))
        switch situation {
        case .queued, .sending, .armed, .handover, .closed:
            // Outgoing chunks queued, or a batch with the inner transport: the close waits for them.
            #expect(answer == .waitUntil(deadline))
        case .fresh, .receiving, .deliveryFailed, .reading, .awaitingData, .awaitingRoom, .awaitingTime, .stopped, .readerEnded, .down:
            // Drained, or it cannot drain (the delivery failed, the link went down).
            #expect(answer == .proceed)
        }
        #expect(m.closeStep(now: deadline) == .proceed)
    }

    @Test(arguments: Situation.allCases)
    func deliveryStep(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.deliveryStep(now: Self.ms(100))
        switch situation {
        case .queued, .closed:
            #expect(answer == .send(Self.four) && m.delivery == .sending && m.outgoing.isEmpty)
            var early = before
            #expect(early.deliveryStep(now: Self.t0) == .waitUntil(Self.ms(14)) && early == before)
        case .down:
            #expect(answer == .send(Self.four + [1, 2]), "the chunks up to the link's end")
            #expect(m.deliveryStep(now: Self.ms(100)) == .goDown)
            var early = before
            #expect(early.deliveryStep(now: Self.t0) == .waitUntil(Self.ms(14)))
        case .handover:
            #expect(answer == .send([2, 3, 4]) && m.delivery == .sending, "direct mode: the loop sends only the rest")
        case .stopped:
            #expect(answer == .stop && m == before)
        case .armed:
            #expect(answer == .wait && m == before, "direct mode: the timer delivers")
        case .fresh, .receiving, .sending, .deliveryFailed, .reading, .awaitingData, .awaitingRoom, .awaitingTime, .readerEnded:
            #expect(answer == .wait && m == before)
        }
        // Closed with nothing to deliver: the loop ends.
        var closed = Self.make(situation)
        _ = closed.close(now: Self.ms(100))
        if !closed.deliveryBusy && closed.outgoing.isEmpty && closed.linkDownAt == nil && closed.delivery == .idle {
            #expect(closed.deliveryStep(now: Self.ms(100)) == .stop)
        }
    }

    @Test(arguments: Situation.allCases)
    func delivered(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let head = m.delivered()
        #expect(head == before.outgoing.first?.deliverAt)
        if situation == .sending {
            #expect(m.delivery == .idle)
        } else {
            #expect(m == before, "only a batch being sent is delivered")
        }
    }

    @Test(arguments: Situation.allCases)
    func deliveryFailed(_ situation: Situation) {
        var failed = Self.make(situation)
        var cancelled = failed
        let before = failed
        failed.deliveryFailed(TransportError(.closed, "p: gone"))
        cancelled.deliveryFailed(nil)
        if situation == .sending {
            #expect(failed.delivery == .failed(TransportError(.closed, "p: gone")))
            #expect(cancelled.delivery == .idle, "a cancelled delivery is no failure")
        } else {
            #expect(failed == before && cancelled == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func handedOver(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        m.handedOver(Self.four, written: 0)
        if situation == .sending {
            #expect(m.delivery == .handover(rest: Self.four) && m.handovers == 1)
        } else {
            #expect(m == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func armDelivery(_ situation: Situation) {
        var m = Self.make(situation)
        let token = m.armDelivery(at: Self.ms(50))
        switch situation {
        case .armed:
            #expect(token == nil, "a timer armed for earlier covers it")
            #expect(m.armDelivery(at: Self.ms(5)) == 2 && m.deliveryTimer == .armed(at: Self.ms(5), token: 2))
        case .handover:
            #expect(token == 2 && m.deliveryTimer == .armed(at: Self.ms(50), token: 2), "a new token")
        default:
            #expect(token == 1 && m.deliveryTimer == .armed(at: Self.ms(50), token: 1))
            #expect(m.armDelivery(at: Self.ms(50)) == nil)
        }
    }

    @Test(arguments: Situation.allCases)
    func deliveryTimerFired(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.deliveryTimerFired(1, now: Self.ms(100))
        #expect(m.deliveryTimer == .unarmed, "the timer that fired is no longer armed")
        switch situation {
        case .queued, .armed, .closed:
            #expect(answer == .send(Self.four) && m.delivery == .sending)
            var early = before
            #expect(early.deliveryTimerFired(7, now: Self.t0) == .rearm(Self.ms(14)))
            #expect(early.deliveryTimer == before.deliveryTimer, "a stale timer leaves the armed one alone")
        case .down:
            #expect(answer == .send(Self.four + [1, 2]))
        case .fresh, .receiving, .sending, .handover, .deliveryFailed, .reading, .awaitingData, .awaitingRoom,
             .awaitingTime, .stopped, .readerEnded:
            // Nothing queued, or a batch already with the inner transport, or it failed.
            #expect(answer == .nothing)
        }
    }

    @Test(arguments: Situation.allCases)
    func disarm(_ situation: Situation) {
        var m = Self.make(situation)
        #expect(m.disarm() == (situation == .armed))
        #expect(m.deliveryTimer == .unarmed && m.disarm() == false)
    }

    @Test(arguments: Situation.allCases)
    func readerStep(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.readerStep(now: Self.ms(100))
        switch situation {
        case .closed, .stopped, .down:
            #expect(answer == nil && m.reader == .stopped, "the reader stops")
        case .awaitingRoom:
            #expect(answer == .wait && m == before, "the incoming lane is full")
        case .awaitingTime:
            #expect(answer == .proceed)
            var early = before
            #expect(early.readerStep(now: Self.t0) == .waitUntil(Self.ms(4)), "until only a buffer is left on the link")
        default:
            #expect(answer == .proceed && m == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func readingFailed(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let error = TransportError(.closed, "p: the peer closed")
        m.readingFailed(error, now: Self.ms(100))
        #expect(m.reader == .ended(error, at: max(Self.ms(110), before.incoming.lastDeliverAt)))
        var late = Self.make(situation)
        late.readingFailed(error, now: Self.t0)
        #expect(late.reader == .ended(error, at: max(Self.ms(10), before.incoming.lastDeliverAt)), "not before what is on the link")
    }

    @Test(arguments: Situation.allCases)
    func receivedChunk(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.receivedChunk([1, 2, 3, 4, 5, 6], now: Self.ms(100), faults: Self.noFaults)
        switch situation {
        case .closed, .stopped, .down:
            #expect(answer == .init(due: nil, stop: true) && m.incoming == before.incoming && m.reader == .stopped)
        case .awaitingRoom:
            #expect(answer == .init(due: Self.ms(110), stop: false), "a packet is never split")
            #expect(m.incoming.queue.count == before.incoming.queue.count + 1)
        default:
            #expect(answer == .init(due: Self.ms(114), stop: false))
            #expect(m.incoming.queue.suffix(2).map(\.bytes) == [[1, 2, 3, 4], [5, 6]], "pieces of at most the buffer")
            #expect(m.incoming.queuedBytes == before.incoming.queuedBytes + 6 && m.incoming.linkFreeAt == Self.ms(106))
            #expect(m.reader == before.reader)
        }
    }

    @Test(arguments: Situation.allCases)
    func resumeReading(_ situation: Situation) {
        let resumes: [(Machine.Resume, Machine.Reader)] = [(.start, .idle), (.data, .awaitingData), (.room, .awaitingRoom), (.time, .awaitingTime)]
        for (resume, from) in resumes {
            var m = Self.make(situation)
            let before = m
            let run = m.resumeReading(from: resume)
            #expect(run == (before.reader == from), "\(resume)")
            #expect(run ? m.reader == .reading : m == before)
            if run {
                let again = m.resumeReading(from: resume)
                #expect(!again, "never twice at once")
            }
        }
    }

    @Test(arguments: Situation.allCases)
    func directReadStep(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answer = m.directReadStep(now: Self.ms(100))
        switch situation {
        case .closed, .stopped:
            #expect(answer == .stop && m.reader == .stopped)
        case .awaitingRoom:
            #expect(answer == .stop && m.reader == .awaitingRoom, "the receiver resumes it")
        case .awaitingTime:
            #expect(answer == .read)
            var early = before
            #expect(early.directReadStep(now: Self.t0) == .resumeAt(Self.ms(4)) && early.reader == .awaitingTime)
        default:
            #expect(answer == .read && m == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func awaitingData(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        m.awaitingData()
        #expect(situation == .reading ? m.reader == .awaitingData : m == before)
    }

    // MARK: Rules over several events

    @Test func theByteLimitCountsBothDirectionsAndTakesTheLinkDown() {
        var c = Self.conditions
        c.disconnectAfterBytes = 6
        var m = Self.machine(c)
        #expect(m.receivedChunk(Self.four, now: Self.t0, faults: Self.noFaults) == .init(due: Self.ms(14), stop: false))
        // 2 bytes left: a send of 4 is cut, its tail lost; the reader stops.
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.t0, faults: Self.noFaults) == .carried(deliverAt: Self.ms(12), reachedLimit: true, lostTail: true))
        #expect(m.outgoing.queue.last?.bytes == [1, 2] && m.link == .down(at: Self.ms(12)))
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(100), faults: Self.noFaults) == .refused(.linkDown))
        #expect(m.receivedChunk(Self.four, now: Self.t0, faults: Self.noFaults) == .init(due: nil, stop: true))
        // What is due after the link's end is never delivered.
        #expect(m.receiveStep(now: Self.ms(12)) == .refused(.linkDown) && m.incoming.isEmpty)
        #expect(m.deliveryStep(now: Self.ms(12)) == .send([1, 2]))
        #expect(m.deliveryStep(now: Self.ms(12)) == .goDown)
        // A chunk that ends exactly at the limit loses nothing.
        var exact = Self.machine(c)
        #expect(exact.send([1, 2, 3, 4, 5, 6], offset: 0, count: 6, now: Self.t0, faults: Self.noFaults) == .carried(deliverAt: Self.ms(16), reachedLimit: true, lostTail: false))
        #expect(exact.statistics.outgoing.bytes == 6 && exact.statistics.disconnected)
    }

    @Test func aSenderWaitsWhileMoreThanTheBufferIsAheadOfTheWire() {
        var m = Self.machine()
        #expect(m.send(Self.four + Self.four, offset: 0, count: 4, now: Self.t0, faults: Self.noFaults) == .carried(deliverAt: Self.ms(14), reachedLimit: false, lostTail: false))
        // 4 bytes (4 ms) ahead of the wire: the next 4 go when the link is 4 bytes from free.
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(1), faults: Self.noFaults) == .waitUntil(Self.ms(4)))
        #expect(m.send(Self.four, offset: 0, count: 2, now: Self.ms(1), faults: Self.noFaults) == .waitUntil(Self.ms(2)))
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(4), faults: Self.noFaults) == .carried(deliverAt: Self.ms(18), reachedLimit: false, lostTail: false))
        #expect(m.outgoing.stats.idleTime == .zero, "back to back")
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(20), faults: Self.noFaults) == .carried(deliverAt: Self.ms(34), reachedLimit: false, lostTail: false))
        #expect(m.outgoing.stats.idleTime == .milliseconds(12), "idle from 8 ms to 20 ms")
        // Without a bandwidth limit, the outgoing cap (one chunk may pass it alone).
        var free = Self.machine(LinkConditions(linkBufferBytes: 4))
        let big = [UInt8](repeating: 0, count: 1 << 20)
        #expect(free.send(big, offset: 0, count: big.count, now: Self.t0, faults: Self.noFaults) == .carried(deliverAt: Self.t0, reachedLimit: false, lostTail: false))
        #expect(free.send(Self.four, offset: 0, count: 4, now: Self.t0, faults: Self.noFaults) == .wait)
        #expect(free.deliveryStep(now: Self.t0) == .send(big))
        #expect(free.send(Self.four, offset: 0, count: 4, now: Self.t0, faults: Self.noFaults) == .carried(deliverAt: Self.t0, reachedLimit: false, lostTail: false))
    }

    @Test func faultsAreSeededAndReported() {
        var c = Self.conditions
        (c.dropRate, c.stallRate, c.stallDuration, c.corruptionRate, c.seed) = (1, 1, .milliseconds(5), 1, 42)
        var faults: [Machine.Faults] = []
        var m = Self.machine(c)
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.t0) { faults.append($0) } == .carried(deliverAt: Self.ms(19), reachedLimit: false, lostTail: false))
        #expect(faults == [.init(direction: .outgoing, bytes: 4, drop: true, stall: true, corrupted: 4)])
        #expect(m.outgoing.isEmpty && m.outgoing.stats.droppedChunks == 1 && m.outgoing.stats.droppedBytes == 4 && m.outgoing.stats.stalls == 1)
        #expect(m.outgoing.linkFreeAt == Self.ms(9), "a dropped chunk still occupies the link")
        // The same seed and traffic: the same corruption.
        c.dropRate = 0
        var a = Self.machine(c), b = Self.machine(c)
        _ = a.receivedChunk(Self.four, now: Self.t0) { _ in }
        _ = b.receivedChunk(Self.four, now: Self.t0) { _ in }
        #expect(a.incoming.queue == b.incoming.queue && a.incoming.queue.first?.bytes != Self.four)
    }

    @Test func aDirectWritesRestIsHandedOverAndTheTimerRearmed() {
        var m = Self.make(.armed)
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(4), faults: Self.noFaults) == .carried(deliverAt: Self.ms(18), reachedLimit: false, lostTail: false))
        #expect(m.armDelivery(at: Self.ms(18)) == nil, "the timer for 14 ms comes first")
        #expect(m.deliveryTimerFired(1, now: Self.ms(14)) == .send(Self.four))
        m.handedOver(Self.four, written: 3)
        #expect(m.deliveryTimerFired(1, now: Self.ms(20)) == .nothing, "busy with the rest")
        #expect(m.deliveryStep(now: Self.ms(20)) == .send([4]))
        #expect(m.delivered() == Self.ms(18))
        #expect(m.armDelivery(at: Self.ms(18)) == 2)
        #expect(m.deliveryTimerFired(2, now: Self.ms(18)) == .send(Self.four))
        #expect(m.delivered() == nil && m.delivery == .idle && m.handovers == 1)
        // A failed write fails the senders.
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(30), faults: Self.noFaults) == .carried(deliverAt: Self.ms(44), reachedLimit: false, lostTail: false))
        #expect(m.deliveryTimerFired(3, now: Self.ms(44)) == .send(Self.four))
        m.deliveryFailed(Self.failure)
        #expect(m.send(Self.four, offset: 0, count: 4, now: Self.ms(50), faults: Self.noFaults) == .refused(.failed(Self.failure)))
        #expect(m.deliveryTimerFired(3, now: Self.ms(50)) == .nothing)
    }
}
