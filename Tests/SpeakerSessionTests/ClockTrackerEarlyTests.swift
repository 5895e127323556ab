import Speaker
import SpeakerPlayback
import Testing

/// Before the drift can be measured (the first second of a speaker, as when one joins a playing session), the map's
/// offset comes from one sample: it must not be one that waited on a leg when an older fast one is at hand.
extension ClockTrackerTests {
    static func truth(_ c: UInt64) -> UInt64 { c + 4_000_000_000 + c * 300 / 1_000_000 }

    /// The first exchanges of a speaker: 8 of them 10 ms apart, then 50 ms apart (the tracker's early pace).
    static func earlySamples(delayed: Set<Int>) throws -> [ClockSample] {
        (0..<14).map { k in k < 8 ? 1_000_000_000 + UInt64(k) * 10_000_000 : 1_070_000_000 + UInt64(k - 7) * 50_000_000 }
            .enumerated().map { k, t in try! sample(at: t, extraDelay: delayed.contains(k) ? 4_000_000 : 0) }
    }

    static func offsetError(_ tracker: ClockTracker, at now: UInt64) throws -> Int64 {
        let map = try #require(tracker.estimate)
        #expect(map.rate == 0)  // still early: no drift measured
        return Int64(bitPattern: map.speakerTime(forControllerTime: now) &- truth(now))
    }

    @Test func earlyTheNewestSamplesThatWaitedDoNotMoveTheOffset() throws {
        var tracker = ClockTracker()
        // The three newest exchanges waited 4 ms on the way out: each is 2 ms off.
        let samples = try Self.earlySamples(delayed: [11, 12, 13])
        for s in samples { tracker.add(s) }
        let now = samples.last!.midpoint
        // The newest fast one is 150 ms old: 300 ppm of drift since is 45 µs.
        let error = try Self.offsetError(tracker, at: now)
        #expect(abs(error) <= 60_000, "offset error \(error) ns")
    }

    @Test func earlyTheNewestFastSampleGivesTheOffset() throws {
        var tracker = ClockTracker()
        let samples = try Self.earlySamples(delayed: [2, 9])
        for s in samples { tracker.add(s) }
        let now = samples.last!.midpoint
        // Not an older one: that would be off by the drift since it was taken.
        let error = try Self.offsetError(tracker, at: now)
        #expect(abs(error) <= 2_000, "offset error \(error) ns")
    }
}
