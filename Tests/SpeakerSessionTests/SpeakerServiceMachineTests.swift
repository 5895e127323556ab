import Speaker
import SpeakerSimulator
import Testing

/// `SpeakerServiceMachine` alone, on explicit times: every event in every state (serving with links, its clock
/// stalled, off, shut down, shut down and off), then the stalls over several events.
@Suite struct SpeakerServiceMachineTests {
    typealias Machine = SpeakerServiceMachine
    static let map = try! ClockMap(controllerReference: 1, speakerReference: 2, rate: 3)

    enum Situation: CaseIterable, CustomTestStringConvertible {
        /// Serving: link 1 greeted with version 5, link 2 before its hello; a clock map; stream 7 opened once.
        case serving
        /// Serving, its clock stalled at true time 1000 (reading 1000) until 1500, 500 ns shifted.
        case stalled
        /// Serving, then the power went (its links are still to end).
        case off
        /// Shut down.
        case shutDown
        /// Shut down, then the power went.
        case shutDownOff

        var testDescription: String { String(describing: self) }
    }

    static func make(_ situation: Situation) -> Machine {
        var m = Machine()
        #expect(m.connect() == 1 && m.connect() == 2)
        m.greeted(1, version: 5)
        m.installClockMap(map)
        #expect(m.streamOpened(7) == 1)
        switch situation {
        case .serving: break
        case .stalled: m.stall(for: 500, atTrueTime: 1000, unstalled: 1000)
        case .off: m.powerOff()
        case .shutDown: m.shutDown()
        case .shutDownOff:
            m.shutDown()
            m.powerOff()
        }
        return m
    }

    static func on(_ s: Situation) -> Bool { s == .serving || s == .stalled || s == .shutDown }
    static func serving(_ s: Situation) -> Bool { s == .serving || s == .stalled || s == .off }

    // MARK: Each event in each state

    @Test(arguments: Situation.allCases)
    func connect(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let link = m.connect()
        if Self.on(situation) && Self.serving(situation) {
            #expect(link == 3 && m.links[3] == .greeting && m.version(of: 3) == nil)
        } else {
            #expect(link == nil && m == before, "a speaker shut down or off closes the link")
        }
    }

    @Test(arguments: Situation.allCases)
    func greeted(_ situation: Situation) {
        var m = Self.make(situation)
        m.greeted(2, version: 3)
        #expect(m.version(of: 2) == 3 && m.links[2] == .speaking(version: 3) && m.version(of: 1) == 5)
        let before = m
        m.greeted(9, version: 4)
        #expect(m == before && m.version(of: 9) == nil, "a link gone changes nothing")
    }

    @Test(arguments: Situation.allCases)
    func disconnected(_ situation: Situation) {
        var m = Self.make(situation)
        m.disconnected(1)
        #expect(m.links == [2: .greeting] && m.version(of: 1) == nil)
        m.disconnected(1)
        #expect(m.links == [2: .greeting])
    }

    @Test(arguments: Situation.allCases)
    func shutDown(_ situation: Situation) {
        var m = Self.make(situation)
        m.shutDown()
        #expect(m.isShutDown && m.connect() == nil && m.clockSyncDatagram(kernelTimestamped: false) == false)
        #expect(m.isPoweredOff == !Self.on(situation), "the power is its own")
        #expect(m.links.count == 2, "the shell closes the links; each ends by `disconnected`")
    }

    @Test(arguments: Situation.allCases)
    func powerOff(_ situation: Situation) {
        var m = Self.make(situation)
        m.powerOff()
        #expect(m.isPoweredOff && !m.isListening && m.clockMap == nil && m.connect() == nil)
        #expect(m.clockSyncDatagram(kernelTimestamped: true) == false && m.clockSyncs.datagrams == 0)
        #expect(m.isShutDown == !Self.serving(situation) && m.streamParts == [7: 1])
    }

    @Test(arguments: Situation.allCases)
    func powerOn(_ situation: Situation) {
        var m = Self.make(situation)
        m.powerOn()
        #expect(!m.isPoweredOff && m.isListening)
        // Back on: links again unless shut down; the clock map it lost stays lost.
        #expect((m.connect() != nil) == Self.serving(situation))
        #expect((m.clockMap != nil) == Self.on(situation))
    }

    @Test(arguments: Situation.allCases)
    func installClockMap(_ situation: Situation) {
        var m = Self.make(situation)
        let other = try! ClockMap(controllerReference: 4, speakerReference: 5, rate: 6)
        m.installClockMap(other)
        #expect(m.clockMap == other)
    }

    @Test(arguments: Situation.allCases)
    func controlClockSync(_ situation: Situation) {
        var m = Self.make(situation)
        m.controlClockSync()
        #expect(m.clockSyncs.control == 1 && m.clockSyncs.datagrams == 0)
    }

    @Test(arguments: Situation.allCases)
    func clockSyncDatagram(_ situation: Situation) {
        var m = Self.make(situation)
        let before = m
        let answered = m.clockSyncDatagram(kernelTimestamped: true)
        let answeredAgain = m.clockSyncDatagram(kernelTimestamped: false)
        if Self.on(situation) && Self.serving(situation) {
            #expect(answered && answeredAgain)
            #expect(m.clockSyncs.datagrams == 2 && m.clockSyncs.kernelTimestamped == 1 && m.clockSyncs.control == 0)
        } else {
            #expect(!answered && !answeredAgain && m == before, "off or shut down: no answer, not counted")
        }
    }

    @Test(arguments: Situation.allCases)
    func streamOpened(_ situation: Situation) {
        var m = Self.make(situation)
        #expect(m.streamOpened(7) == 2 && m.streamOpened(8) == 1 && m.streamOpened(7) == 3)
        #expect(m.streamParts == [7: 3, 8: 1])
    }

    @Test(arguments: Situation.allCases)
    func dacTime(_ situation: Situation) {
        var m = Self.make(situation)
        if situation == .stalled {
            #expect(m.dacTime(atTrueTime: 1200, unstalled: 1200) == 1000, "stopped where it stalled")
            #expect(m.dacTime(atTrueTime: 1499, unstalled: 1499) == 1000)
            #expect(m.dacTime(atTrueTime: 1500, unstalled: 1500) == 1000, "then on from there")
            #expect(m.clock == .running(shift: 500))
            #expect(m.dacTime(atTrueTime: 1200, unstalled: 1200) == 700, "the stall is over")
        } else {
            let before = m
            #expect(m.dacTime(atTrueTime: 1200, unstalled: 1234) == 1234 && m == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func stall(_ situation: Situation) {
        var m = Self.make(situation)
        m.stall(for: 100, atTrueTime: 1100, unstalled: 1100)
        if situation == .stalled {
            // Stalled again during a stall: it stays where it stopped, until 100 ns from now, 600 ns shifted in all.
            #expect(m.clock == .stalled(at: 1000, until: 1200, shift: 600))
            #expect(m.dacTime(atTrueTime: 1200, unstalled: 1200) == 600)
        } else {
            #expect(m.clock == .stalled(at: 1100, until: 1200, shift: 100) && m.stallShift == 100)
            #expect(m.dacTime(atTrueTime: 1150, unstalled: 1150) == 1100)
            #expect(m.dacTime(atTrueTime: 1300, unstalled: 1300) == 1200)
        }
    }

    // MARK: Rules over several events

    @Test func stallsAddUpAndWrap() {
        var m = Machine()
        m.stall(for: 10, atTrueTime: 0, unstalled: 5)
        #expect(m.dacTime(atTrueTime: 3, unstalled: 8) == 5)
        #expect(m.dacTime(atTrueTime: 10, unstalled: 15) == 5)
        m.stall(for: 20, atTrueTime: 30, unstalled: 35)
        #expect(m.clock == .stalled(at: 25, until: 50, shift: 30))
        #expect(m.dacTime(atTrueTime: 60, unstalled: 65) == 35)
        // The clock near zero wraps instead of trapping.
        #expect(m.dacTime(atTrueTime: 61, unstalled: 1) == UInt64.max - 28)
    }
}
