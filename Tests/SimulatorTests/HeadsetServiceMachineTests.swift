@testable import HeadsetSimulator
import LightX
import Testing

/// `HeadsetServiceMachine` alone, on explicit times: every event in every state (serving idle, processing, its
/// queue full, shut down), then the power periods and a profile that stops answering.
@Suite struct HeadsetServiceMachineTests {
    typealias Machine = HeadsetServiceMachine
    static let t0 = ContinuousClock.now
    static func request() -> Packet { try! Packet.request(.read, .configProductName) }

    enum Situation: CaseIterable, CustomTestStringConvertible {
        /// Serving, nothing queued, no processor.
        case idle
        /// One request queued, the processor running.
        case processing
        /// The queue (depth 2) full.
        case full
        /// `shutdown()` ran.
        case shutDown

        var testDescription: String { String(describing: self) }
    }

    static func make(_ situation: Situation, profile: BehaviourProfile = .normal) -> Machine {
        var m = Machine(profile: profile, queueDepth: 2, now: t0)
        switch situation {
        case .idle: break
        case .processing:
            #expect(m.submit(request(), from: 1, powered: true, image: .application, now: t0) == .queued(startProcessor: true))
        case .full:
            #expect(m.submit(request(), from: 1, powered: true, image: .application, now: t0) == .queued(startProcessor: true))
            #expect(m.submit(request(), from: 2, powered: true, image: .application, now: t0) == .queued(startProcessor: false))
        case .shutDown:
            #expect(m.shutDown() == true)
        }
        return m
    }

    struct Snapshot: Equatable {
        let phase: Machine.Phase, queued: Bool, answered: Int, powerLosses: Int, busyUntil: ContinuousClock.Instant
        init(_ m: Machine) {
            (phase, queued, answered, powerLosses, busyUntil) = (m.phase, !m.queue.isEmpty, m.answered, m.powerLosses, m.busyUntil)
        }
    }

    // MARK: Each event in each state

    @Test(arguments: Situation.allCases)
    func submit(_ situation: Situation) {
        for image in [RunningImage.application, .bootloader] {
            var m = Self.make(situation)
            let before = Snapshot(m)
            let answer = m.submit(Self.request(), from: 3, powered: true, image: image, now: Self.t0)
            switch situation {
            case .idle:
                #expect(answer == .queued(startProcessor: true) && m.answered == 1)
            case .processing:
                #expect(answer == .queued(startProcessor: false) && m.answered == 2)
            case .full where image == .bootloader:
                #expect(answer == .answerNotReady, "the bootloader answers NotReady when Q wait")
                #expect(m.answered == 3 && m.queue.isFull)
            case .full:
                #expect(answer == .waitForRoom, "the application stops reading the link")
                #expect(Snapshot(m) == before && m.mustWaitForRoom)
            case .shutDown:
                #expect(answer == .ignore && Snapshot(m) == before)
            }
            // A device without power ignores every request.
            var off = Self.make(situation)
            let offBefore = Snapshot(off)
            #expect(off.submit(Self.request(), from: 3, powered: false, image: nil, now: Self.t0) == .ignore)
            #expect(Snapshot(off) == offBefore)
        }
    }

    @Test(arguments: Situation.allCases)
    func admitAfterWait(_ situation: Situation) {
        for (powered, connected, cancelled) in [(true, true, false), (false, true, false), (true, false, false), (true, true, true)] {
            var m = Self.make(situation)
            let before = Snapshot(m)
            let answer = m.admitAfterWait(Self.request(), from: 3, powered: powered, hostConnected: connected, cancelled: cancelled, now: Self.t0)
            if situation != .shutDown, powered, connected, !cancelled {
                #expect(answer == .queued(startProcessor: situation == .idle))
                #expect(m.answered == before.answered + 1)
            } else {
                #expect(answer == .ignore && Snapshot(m) == before)
            }
        }
    }

    @Test(arguments: Situation.allCases)
    func next(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        var taken: [UInt64] = []
        while let item = m.next() { taken.append(item.host) }
        switch situation {
        case .idle:
            #expect(taken.isEmpty && m.phase == .serving(epoch: Machine.Epoch(number: 0), processing: false))
        case .processing:
            #expect(taken == [1] && m.phase == .serving(epoch: Machine.Epoch(number: 0), processing: false))
        case .full:
            #expect(taken == [1, 2], "in arrival order")
            #expect(!m.mustWaitForRoom)
        case .shutDown:
            #expect(taken.isEmpty && Snapshot(m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func busy(_ situation: Situation) {
        var m = Self.make(situation)
        // After the earlier operation, or after the request's arrival when the flash was idle then.
        #expect(m.busy(.milliseconds(5), arrived: Self.t0 + .milliseconds(10)) == Self.t0 + .milliseconds(15))
        #expect(m.busy(.milliseconds(5), arrived: Self.t0 + .milliseconds(11)) == Self.t0 + .milliseconds(20))
        #expect(m.busyUntil == Self.t0 + .milliseconds(20))
    }

    @Test(arguments: Situation.allCases)
    func powerLost(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        let begun = m.epoch
        let period = m.powerLost()
        if situation == .shutDown {
            #expect(period == nil && Snapshot(m) == before)
            return
        }
        #expect(period == Machine.Epoch(number: 1) && m.epoch == period)
        #expect(m.powerLosses == 1 && m.queue.isEmpty, "waiting requests are dropped unanswered")
        #expect(m.mayReply(begunIn: begun!) == false, "work begun before the loss does not reply")
        #expect(m.mayPowerUp(expecting: period!))
        // The processor, if it ran, finds the queue empty and ends.
        let item = m.next()
        #expect(item == nil && m.phase == .serving(epoch: period!, processing: false))
    }

    @Test(arguments: Situation.allCases)
    func poweredUp(_ situation: Situation) {
        var m = Self.make(situation)
        _ = m.busy(.seconds(1), arrived: Self.t0)
        m.poweredUp(now: Self.t0 + .milliseconds(3))
        #expect(m.busyUntil == (situation == .shutDown ? Self.t0 + .seconds(1) : Self.t0 + .milliseconds(3)))
    }

    @Test(arguments: Situation.allCases)
    func shutDown(_ situation: Situation) {
        var m = Self.make(situation)
        let begun = m.epoch
        let first = m.shutDown()
        #expect(first == (situation != .shutDown))
        #expect(m.isShutDown && m.queue.isEmpty && m.epoch == nil)
        if let begun { #expect(!m.mayReply(begunIn: begun) && !m.mayPowerUp(expecting: begun)) }
        #expect(m.shutDown() == false, "once")
        #expect(!m.acceptsLink(powered: true))
    }

    @Test(arguments: Situation.allCases)
    func acceptsLink(_ situation: Situation) {
        let m = Self.make(situation)
        #expect(m.acceptsLink(powered: true) == (situation != .shutDown))
        #expect(!m.acceptsLink(powered: false))
    }

    // MARK: Rules over several events

    @Test func aPowerUpOfAnEarlierPeriodDoesNotHappen() {
        var m = Self.make(.idle)
        let first = m.powerLost()!
        let second = m.powerLost()!
        #expect(!m.mayPowerUp(expecting: first) && m.mayPowerUp(expecting: second))
        #expect(m.powerLosses == 2)
    }

    @Test func aProfileThatStopsAnsweringStopsAfterItsCount() {
        var m = Self.make(.idle, profile: .stopsAnswering(after: 1))
        #expect(m.talks)
        #expect(m.submit(Self.request(), from: 1, powered: true, image: .application, now: Self.t0) == .queued(startProcessor: true))
        #expect(!m.talks)
        #expect(m.submit(Self.request(), from: 1, powered: true, image: .application, now: Self.t0) == .ignore)
        #expect(m.answered == 1)
        var silent = Self.make(.idle, profile: .silent)
        #expect(silent.submit(Self.request(), from: 1, powered: true, image: .bootloader, now: Self.t0) == .ignore)
    }
}
