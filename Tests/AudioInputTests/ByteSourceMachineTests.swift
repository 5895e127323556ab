import AudioInput
import Glibc
import Testing

/// `ByteSourceMachine` alone: every event in every state of a source, then the rules that take several events (the
/// window, the made-up end, the header limit). Small limits: a header of 64 bytes, a window of 8, 16 ahead, a
/// made-up length of 1000.
@Suite struct ByteSourceMachineTests {
    typealias Machine = ByteSourceMachine
    static let limits = Machine.Limits(headerLimit: 64, window: 8, ahead: 16, unknownLength: 1000)
    static let ten = [UInt8](1...10)
    static let stall = AudioInputError(.stalled, "u sent nothing for 1.0 s")

    enum Situation: CaseIterable, CustomTestStringConvertible {
        /// Not started.
        case idle
        /// Started, nothing came.
        case connecting
        /// An audio response's first 10 bytes; the decoder opens the source.
        case opening
        /// A text response's first 10 bytes.
        case text
        /// 10 bytes, the source open.
        case playing
        /// 20 bytes, the source open, nothing read: the transfer is ahead by more than it may be.
        case behind
        /// The whole body (10 bytes) came.
        case complete
        /// The transfer ended with no response and no failure (an empty body).
        case unanswered
        /// The transfer ended with no response: the connection was refused.
        case refused
        /// 10 bytes, then a stall.
        case failed
        /// 10 bytes, then the consumer closed the source.
        case closed

        var testDescription: String { String(describing: self) }
    }

    static func make(_ situation: Situation) -> Machine {
        var m = Machine(name: "u", limits: limits)
        func receive(_ type: String = "audio/mpeg", _ bytes: [UInt8] = ten) {
            #expect(m.start() == true)
            m.responded(contentType: type)
            #expect(m.offer(bytes) == .kept)
        }
        switch situation {
        case .idle: break
        case .connecting: #expect(m.start() == true)
        case .opening: receive()
        case .text: receive("text/html; charset=utf-8")
        case .playing:
            receive()
            m.finishOpening()
        case .behind:
            receive()
            m.finishOpening()
            #expect(m.offer(ten) == .kept)
        case .complete:
            receive()
            m.transferEnded(failure: nil)
        case .unanswered:
            #expect(m.start() == true)
            m.transferEnded(failure: nil)
        case .refused:
            #expect(m.start() == true)
            m.transferEnded(failure: AudioInputError(.connectionFailed, "u: connection refused"))
        case .failed:
            receive()
            m.fail(stall)
        case .closed:
            receive()
            m.abort()
        }
        return m
    }

    /// Everything the machine holds (errors compare by code).
    struct Snapshot: Hashable {
        let transfer: Machine.Transfer, health: Machine.Health, reader: Machine.Reader
        let buffer: [UInt8], bufferStart: Int64, position: Int64
        init(_ m: Machine) {
            (transfer, health, reader, buffer, bufferStart, position) = (m.transfer, m.health, m.reader, m.buffer, m.bufferStart, m.position)
        }
    }

    static func bytes(_ s: Situation) -> Int {
        switch s {
        case .idle, .connecting, .unanswered, .refused: 0
        case .behind: 20
        default: 10
        }
    }

    // MARK: Each event in each state

    @Test(arguments: Situation.allCases)
    func start(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        let spawn = m.start()
        if situation == .idle {
            #expect(spawn && m.transfer == .connecting)
        } else {
            #expect(!spawn, "the transfer starts once")
            #expect(Snapshot(m) == before)
        }
    }

    @Test(arguments: Situation.allCases)
    func startOutcome(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        let outcome = m.startOutcome(fromDescriptor: false)
        switch situation {
        case .idle, .connecting:
            #expect(outcome == .wait && !m.startSettled)
        case .opening, .playing, .behind, .complete, .failed, .closed:
            // A failure after the first bytes still hands them over: the start succeeds.
            #expect(outcome == .ready && m.startSettled)
        case .text:
            guard case let .fail(error) = outcome else { Issue.record("\(outcome)"); return }
            #expect(error.code == .notAudio && error.message == "u: the server sent text/html, not audio")
            #expect(m.failure?.code == .notAudio, "a text body fails the source")
            return
        case .unanswered:
            guard case let .fail(error) = outcome else { Issue.record("\(outcome)"); return }
            #expect(error.code == .empty && error.message == "u: the server sent an empty body")
            guard case let .fail(fromDescriptor) = m.startOutcome(fromDescriptor: true) else { Issue.record("not failed"); return }
            #expect(fromDescriptor.message == "u: is empty (no bytes)")
        case .refused:
            guard case let .fail(error) = outcome else { Issue.record("\(outcome)"); return }
            #expect(error.code == .connectionFailed && error.message == "u: connection refused")
        }
        #expect(Snapshot(m) == before)
    }

    @Test(arguments: Situation.allCases)
    func responded(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        m.responded(contentType: "audio/ogg")
        switch situation {
        case .idle, .connecting:
            #expect(m.transfer == .receiving(Machine.Response(contentType: "audio/ogg")) && m.hasResponded)
        default:
            #expect(Snapshot(m) == before, "the first response counts")
        }
    }

    @Test(arguments: Situation.allCases)
    func offer(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        let answer = m.offer([7, 8, 9])
        switch situation {
        case .refused, .failed, .closed:
            #expect(answer == .refuse, "a failed or closed source stops the transfer")
            #expect(Snapshot(m) == before)
        case .behind:
            #expect(answer == .holdBack)
            #expect(Snapshot(m) == before)
        case .idle, .connecting, .opening, .text, .playing, .complete, .unanswered:
            #expect(answer == .kept)
            #expect(m.buffer == before.buffer + [7, 8, 9] && m.received == Int64(Self.bytes(situation) + 3))
        }
    }

    @Test(arguments: Situation.allCases)
    func transferEnded(_ situation: Situation) {
        for failure in [nil, AudioInputError(.httpStatus, "u: the server answered HTTP 404")] {
            var m = Self.make(situation)
            let before = Snapshot(m)
            m.transferEnded(failure: failure)
            switch before.transfer {
            case .idle, .connecting: #expect(m.transfer == .ended(nil))
            case let .receiving(response): #expect(m.transfer == .ended(response))
            case .ended: #expect(m.transfer == before.transfer)
            }
            switch (before.health, failure) {
            case (.ok, let failure?): #expect(m.health == .failed(failure))
            default: #expect(m.health == before.health, "the first failure stays")
            }
            #expect(m.buffer == before.buffer && m.position == before.position && m.reader == before.reader)
        }
    }

    @Test(arguments: Situation.allCases)
    func inputRead(_ situation: Situation) {
        let unreadable = AudioInputError(.fileUnreadable, "u: reading failed")
        for read in [Machine.InputRead.bytes, .end, .failed(unreadable)] {
            var m = Self.make(situation)
            let before = Snapshot(m)
            let stop = m.inputRead(read)
            if before.health != .ok {
                #expect(stop && Snapshot(m) == before, "a failed or closed source reads no more")
                continue
            }
            switch read {
            case .bytes:
                #expect(!stop && Snapshot(m) == before)
            case .end:
                #expect(stop && m.hasEnded && m.health == .ok)
                #expect(m.hasResponded == (before.transfer != .ended(nil)), "a descriptor's end is its response")
            case .failed:
                #expect(stop && m.health == .failed(unreadable))
            }
        }
    }

    @Test(arguments: Situation.allCases)
    func finishOpening(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        m.finishOpening()
        #expect(m.reader == .playing)
        #expect(m.buffer == before.buffer && m.transfer == before.transfer && m.health == before.health,
                "nothing is read yet: nothing is dropped")
    }

    @Test(arguments: Situation.allCases)
    func abort(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        m.abort()
        switch before.health {
        case .ok:
            #expect(m.health == .closed(AudioInputError(.cancelled, "")) && m.failure?.message == "u: the stream was closed")
        case let .failed(error):
            #expect(m.health == .closed(error) && m.failure?.message == error.message, "the first failure is reported")
        case .closed:
            #expect(Snapshot(m) == before)
        }
        #expect(m.transfer == before.transfer && m.buffer == before.buffer)
        var again = m
        again.abort()
        #expect(Snapshot(again) == Snapshot(m), "closing twice is closing once")
    }

    @Test(arguments: Situation.allCases)
    func failAndStall(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        let error = m.stalled(seconds: 2.5)
        #expect(error.code == .stalled && error.message == "u sent nothing for 2.5 s")
        if before.health == .ok {
            #expect(m.health == .failed(error))
        } else {
            #expect(Snapshot(m) == before, "the first failure stays")
        }
        var n = Self.make(situation)
        n.fail(AudioInputError(.corrupt, "x"))
        #expect(n.health == (before.health == .ok ? .failed(AudioInputError(.corrupt, "x")) : before.health))
    }

    @Test(arguments: Situation.allCases)
    func read(_ situation: Situation) {
        var m = Self.make(situation)
        let before = Snapshot(m)
        // At the start of a source a read of 4 waits for 4 bytes (or the end, or a failure) whatever the state.
        #expect(m.beginRead(count: 4) == .waitUntil(wanted: 4))
        #expect(Snapshot(m) == before)
        let readable = m.readable(4)
        #expect(readable == ![Situation.idle, .connecting].contains(situation))
        let taken = m.takeRead(count: 4)
        switch situation {
        case .closed:
            #expect(taken == .end, "the consumer's close ends reads at once")
        case .idle, .connecting, .unanswered, .refused:
            #expect(taken == .end)
        case .opening, .text, .playing, .behind, .complete, .failed:
            #expect(taken == .copy(offset: 0, count: 4), "what arrived before a failure is still read")
            m.consumed(4)
            #expect(m.position == 4 && m.available == Int64(Self.bytes(situation) - 4))
            return
        }
        #expect(Snapshot(m) == before)
    }

    @Test(arguments: Situation.allCases)
    func seek(_ situation: Situation) {
        var m = Self.make(situation)
        #expect(m.seek(5, whence: SEEK_SET) == 5 && m.position == 5)
        #expect(m.seek(-2, whence: SEEK_CUR) == 3)
        #expect(m.seek(-128, whence: SEEK_END) == 872)
        #expect(m.seek(-1000, whence: SEEK_CUR) == -1 && m.position == 872, "a seek before the start is refused")
        #expect(m.seek(0, whence: 99) == -1)
    }

    // MARK: Rules over several events

    @Test func onceOpenOnlyAWindowBehindTheReaderIsKeptDroppedAWindowAtATime() {
        var m = Self.make(.opening)
        #expect(m.offer([UInt8](11...30)) == .kept)
        // While opening, reading does not drop anything.
        #expect(m.seek(20, whence: SEEK_SET) == 20)
        m.consumed(0)
        #expect(m.bufferStart == 0 && m.buffer.count == 30)
        m.finishOpening()
        // 12 bytes are more than a window behind position 20: dropped in one step.
        #expect(m.bufferStart == 12 && m.buffer.first == 13)
        m.consumed(4)
        #expect(m.bufferStart == 12, "less than a window more: kept")
        // Behind what is kept, a read fails the source.
        #expect(m.seek(2, whence: SEEK_SET) == 2)
        #expect(m.takeRead(count: 4) == .end)
        #expect(m.failure?.code == .corrupt && m.failure?.message == "u: the decoder seeks back to byte 2, which a stream no longer holds")
    }

    @Test func whileOpeningAReadPastWhatArrivedEndsAtOnce() {
        var m = Self.make(.opening)
        #expect(m.seek(11, whence: SEEK_SET) == 11)
        #expect(m.beginRead(count: 4) == .end)
        m.finishOpening()
        #expect(m.beginRead(count: 4) == .waitUntil(wanted: 15), "once open, a read waits")
        #expect(m.beginRead(count: 100) == .waitUntil(wanted: 11 + 16), "never more than the transfer may run ahead")
    }

    @Test func theMadeUpEndOfAStreamReadsAsZerosUpToItsLength() {
        var m = Self.make(.playing)
        #expect(m.seek(-10, whence: SEEK_END) == 990)
        #expect(m.beginRead(count: 4) == .zeros(4) && m.position == 994)
        #expect(m.beginRead(count: 100) == .zeros(6) && m.position == 1000)
        #expect(m.beginRead(count: 4) == .zeros(0))
        // From a header's length before it on, too.
        #expect(m.seek(1000 - 64, whence: SEEK_SET) == 936)
        #expect(m.beginRead(count: 4) == .zeros(4))
    }

    @Test func theHeaderLimitFailsASourceThatIsNoAudio() {
        var m = Self.make(.opening)
        #expect(m.offer([UInt8](repeating: 0, count: 54)) == .kept)
        #expect(m.offer([0]) == .refuse)
        #expect(m.failure?.code == .notAudio && m.received == 64)
        // Once open there is no such limit, only the distance ahead of the reader.
        var open = Self.make(.opening)
        open.finishOpening()
        #expect(open.offer([UInt8](repeating: 0, count: 100)) == .kept)
        #expect(open.offer([0]) == .holdBack)
        open.consumed(100)
        #expect(open.offer([0]) == .kept)
    }
}
