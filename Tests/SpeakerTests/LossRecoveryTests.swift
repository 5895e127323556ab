import Speaker
import Testing

/// Lost-packet recovery as a value on an injected clock (docs/speaker-protocol.md §7.1): which sequence numbers are
/// missing, when they are asked for and asked again, when they are given up.
@Suite struct LossRecoveryTests {
    static let ms: UInt64 = 1_000_000
    /// A packet every 7.5 ms, due 200 ms after it arrives (the player's default buffer).
    static let duration: UInt64 = 7_500_000

    /// Packet `n` arrives at n × 7.5 ms and is due 200 ms later.
    static func arrive(_ r: inout LossRecovery, _ n: UInt32) -> Bool {
        let at = UInt64(n) * duration
        return r.received(sequence: n, due: at + 200 * ms, packetDuration: duration, at: at)
    }

    @Test func aGapIsAskedForAfterTheReorderGraceAndAgainUntilItComes() {
        var r = LossRecovery()
        _ = Self.arrive(&r, 0)
        _ = Self.arrive(&r, 1)
        _ = Self.arrive(&r, 4)  // 2 and 3 lost, seen at 30 ms
        #expect(r.missingSequences == [2, 3])
        #expect(r.requests(at: 31 * Self.ms) == [])  // within the grace: a reordered packet may still come
        #expect(r.nextEvent == 32 * Self.ms)
        #expect(r.requests(at: 32 * Self.ms) == [2, 3])
        #expect(r.requests(at: 40 * Self.ms) == [])  // asked; not again before the retry interval
        let got3 = r.received(sequence: 3, due: 222_500_000, packetDuration: Self.duration, at: 41 * Self.ms)
        #expect(got3)
        #expect(r.requests(at: 57 * Self.ms) == [2])  // 3 came; 2 is asked again 25 ms later
        let got2 = r.received(sequence: 2, due: 215 * Self.ms, packetDuration: Self.duration, at: 60 * Self.ms)
        #expect(got2)
        #expect(r.missingSequences == [])
        #expect(r.nextEvent == nil)
        #expect(r.statistics.missing == 2 && r.statistics.asked == 3 && r.statistics.recovered == 2 && r.statistics.expired == 0)
    }

    @Test func aPacketThatNeverComesIsGivenUpAtItsDeadline() {
        var r = LossRecovery()
        _ = Self.arrive(&r, 0)
        _ = Self.arrive(&r, 2)  // 1 lost: due at 7.5 + 200 ms, given up 5 ms before
        var asks = 0
        var t: UInt64 = 15 * Self.ms
        while t < 300 * Self.ms {
            asks += r.requests(at: t).count
            t += Self.ms
        }
        // Asked at 17 ms, then every 25 ms while useful: 17, 42, ..., 192 (deadline 202.5 ms).
        #expect(asks == 8)
        #expect(r.statistics.expired == 1 && r.statistics.recovered == 0)
        #expect(r.missingSequences == [])
        // It arriving now is no recovery (it is late: the renderer drops it).
        let late = r.received(sequence: 1, due: 207_500_000, packetDuration: Self.duration, at: 300 * Self.ms)
        #expect(!late)
    }

    @Test func gapsAlreadyPastOrBeyondTheWindowAreNotAskedFor() {
        var r = LossRecovery(policy: LossRecovery.Policy(window: 16))
        // A speaker joining mid-stream: its first packet is 1000, then 1100 (99 skipped, the window tracks 16).
        _ = r.received(sequence: 1000, due: 500 * Self.ms, packetDuration: Self.duration, at: 300 * Self.ms)
        _ = r.received(sequence: 1100, due: 500 * Self.ms, packetDuration: Self.duration, at: 301 * Self.ms)
        // The 16 newest: 1084 ... 1099, due from 380 ms on; all ahead of their deadlines.
        #expect(r.missingSequences == Array(1084...1099))
        #expect(r.statistics.untracked == 83)
        // Those whose deadline is already past when the gap is seen are not tracked either.
        var late = LossRecovery()
        _ = late.received(sequence: 0, due: 200 * Self.ms, packetDuration: Self.duration, at: 0)
        _ = late.received(sequence: 40, due: 210 * Self.ms, packetDuration: Self.duration, at: 200 * Self.ms)
        // Packet s is due 210 − (40 − s) × 7.5 ms; with the 5 ms margin only those due after 205 ms are useful: none.
        #expect(late.missingSequences == [])
        #expect(late.statistics.untracked == 39)
    }

    @Test func aLostFirstPacketIsAskedFor() {
        // Packets are numbered from 0: a speaker that has the stream from its start and first sees 2 misses 0 and 1.
        var r = LossRecovery()
        _ = Self.arrive(&r, 2)
        #expect(r.missingSequences == [0, 1])
        #expect(r.requests(at: 17 * Self.ms) == [0, 1])
        let got0 = r.received(sequence: 0, due: 200 * Self.ms, packetDuration: Self.duration, at: 18 * Self.ms)
        #expect(got0 && r.missingSequences == [1])
    }

    @Test func aSpeakerJoiningMidStreamCountsNothingBeforeItsFirstPacket() {
        // Its first packet is 1000, due now: every earlier number was due before it joined (not its to get).
        var r = LossRecovery()
        _ = r.received(sequence: 1000, due: 300 * Self.ms, packetDuration: Self.duration, at: 295 * Self.ms)
        #expect(r.missingSequences == [] && r.statistics.untracked == 0 && r.statistics.missing == 0)
    }

    @Test func afterAPauseTheFirstPacketOpensNoGap() {
        var r = LossRecovery()
        _ = Self.arrive(&r, 0)
        _ = Self.arrive(&r, 1)
        r.reset()  // paused: the numbers go on after the resume
        _ = Self.arrive(&r, 50)
        #expect(r.missingSequences == [] && r.statistics.missing == 0 && r.statistics.untracked == 0)
        _ = Self.arrive(&r, 52)
        #expect(r.missingSequences == [51])
    }

    @Test func duplicatesAndReorderedPacketsAreNoLoss() {
        var r = LossRecovery()
        _ = Self.arrive(&r, 0)
        _ = Self.arrive(&r, 1)
        _ = Self.arrive(&r, 1)
        _ = Self.arrive(&r, 0)
        #expect(r.missingSequences == [])
        _ = Self.arrive(&r, 3)
        let overtaken = Self.arrive(&r, 2)
        #expect(overtaken)  // overtaken, arrives within the grace: no request at all
        #expect(r.requests(at: 100 * Self.ms) == [])
        #expect(r.statistics.asked == 0 && r.statistics.recovered == 1)
    }

    @Test func sequenceNumbersWrap() {
        var r = LossRecovery()
        _ = r.received(sequence: .max - 1, due: 200 * Self.ms, packetDuration: Self.duration, at: 0)
        _ = r.received(sequence: 1, due: 222 * Self.ms, packetDuration: Self.duration, at: 22 * Self.ms)
        #expect(r.missingSequences == [.max, 0])
        #expect(r.requests(at: 30 * Self.ms) == [.max, 0])
    }

    @Test func oneRequestNamesAtMost64() {
        var r = LossRecovery()
        _ = r.received(sequence: 0, due: 2_000 * Self.ms, packetDuration: Self.duration, at: 0)
        _ = r.received(sequence: 101, due: 2_000 * Self.ms, packetDuration: Self.duration, at: 0)
        let first = r.requests(at: 10 * Self.ms)
        #expect(first == Array(1...64))
        #expect(r.requests(at: 11 * Self.ms) == Array(65...100))
    }

    @Test func withoutAClockMapNothingIsTracked() {
        var r = LossRecovery()
        _ = r.received(sequence: 0, due: nil, packetDuration: Self.duration, at: 0)
        _ = r.received(sequence: 5, due: nil, packetDuration: Self.duration, at: 1)
        #expect(r.missingSequences == [] && r.statistics.untracked == 4)
    }

    @Test func theResendRequestIsVersion2() throws {
        let request = try ResendRequest(streamId: 7, sequences: [41, 42, 97])
        let bytes = try ControlPacket(requestId: 0, message: .resendRequest(request), version: 2).encode()
        #expect(try ControlPacket.decode(bytes).message == .resendRequest(request))
        // Version 1 does not define it: neither written nor read.
        #expect(throws: SpeakerError.self) { try ControlPacket(requestId: 0, message: .resendRequest(request), version: 1) }
        var v1 = bytes
        v1[2] = 1
        let crc = CRC32.checksum(v1[..<(v1.count - 4)])
        v1.replaceSubrange((v1.count - 4)..., with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        #expect(throws: SpeakerError.self) { try ControlPacket.decode(v1) }
        #expect(throws: SpeakerError.self) { try ResendRequest(streamId: 7, sequences: []) }
        #expect(throws: SpeakerError.self) { try ResendRequest(streamId: 7, sequences: Array(0...64)) }
    }
}
