import Testing
import Speaker
import TestSupport

/// A speaker clock for the tests: speaker = offset + controller × (1 + ppb / 10⁹).
struct ModelClock {
    var offset: Double
    var ppb: Double
    func speaker(_ controller: UInt64) -> UInt64 { UInt64(offset + Double(controller) * (1 + ppb / 1e9)) }
}

@Suite struct ClockSyncTests {
    @Test func symmetricDelaysGiveTheExactOffset() throws {
        let reply = try ClockSyncReply(t1: 1_000_000_000, t2: 5_000_250_000, t3: 5_000_260_000)
        let sample = ClockSample(reply, receivedAt: 1_000_510_000)
        // legs of 250 µs each way, 10 µs inside the speaker
        #expect(sample.offset == 4_000_000_000)
        #expect(sample.delay == 500_000)
        #expect(sample.midpoint == 1_000_255_000)
    }

    @Test func theOffsetErrorIsAtMostHalfTheDelay() async throws {
        var rng = TestRandom(seed: 7)
        for _ in 0..<1000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            let trueOffset = Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &rng)
            let t1 = UInt64.random(in: 2_000_000_000_000...9_000_000_000_000, using: &rng)
            let up = UInt64.random(in: 0...50_000_000, using: &rng)
            let down = UInt64.random(in: 0...50_000_000, using: &rng)
            let hold = UInt64.random(in: 0...1_000_000, using: &rng)
            let t2 = UInt64(Int64(t1 + up) + trueOffset)
            let sample = ClockSample(try ClockSyncReply(t1: t1, t2: t2, t3: t2 + hold), receivedAt: t1 + up + hold + down)
            #expect(sample.delay == Int64(up + down))
            #expect(abs(sample.offset - trueOffset) <= sample.delay / 2 + 1)
        }
    }

    @Test func extremeTimesNeverTrap() async throws {
        var rng = TestRandom(seed: 8)
        for _ in 0..<1000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            let t2 = rng.next()
            let sample = ClockSample(try ClockSyncReply(t1: rng.next(), t2: t2, t3: t2 &+ (rng.next() % 100)), receivedAt: rng.next())
            _ = (sample.offset, sample.delay, sample.midpoint)
            let map = try ClockMap(controllerReference: rng.next(), speakerReference: rng.next(),
                                   rate: Int32.random(in: -ClockMap.maxRate...ClockMap.maxRate, using: &rng))
            _ = map.speakerTime(forControllerTime: rng.next())
        }
        #expect(ClockMap.fit([]) == nil)
    }

    @Test func theMapIsExactIntegerMaths() throws {
        let map = try ClockMap(controllerReference: 1_000_000_000, speakerReference: 5_000_000_000, rate: 25_000)
        #expect(map.speakerTime(forControllerTime: 1_000_000_000) == 5_000_000_000)
        #expect(map.speakerTime(forControllerTime: 2_000_000_000) == 6_000_025_000)
        #expect(map.speakerTime(forControllerTime: 0) == 3_999_975_000)
        #expect(map.speakerTime(forControllerTime: 1_000_000_039) == 5_000_000_039)  // 39 × 25e-6 truncates to 0
        let slow = try ClockMap(controllerReference: 0, speakerReference: 0, rate: -10_000_000)
        #expect(slow.speakerTime(forControllerTime: 1_000_000_000) == 990_000_000)
    }

    @Test func fittingRecoversOffsetAndDrift() throws {
        var rng = TestRandom(seed: 99)
        for ppb in [0.0, 120_000.0, -2_800_000.0] {
            let clock = ModelClock(offset: 7e12, ppb: ppb)
            var samples: [ClockSample] = []
            var t: UInt64 = 1_000_000_000
            for _ in 0..<40 {  // one exchange every 250 ms for 10 s, jittery legs
                let up = UInt64.random(in: 100_000...(Bool.random(using: &rng) ? 300_000 : 20_000_000), using: &rng)
                let down = UInt64.random(in: 100_000...300_000, using: &rng)
                let t2 = clock.speaker(t + up)
                samples.append(ClockSample(try ClockSyncReply(t1: t, t2: t2, t3: t2 + 20_000), receivedAt: t + up + 20_000 + down))
                t += 250_000_000
            }
            let map = try #require(ClockMap.fit(samples))
            #expect(abs(Double(map.rate) - ppb) < 50_000, "fitted \(map.rate) ppb for \(ppb)")
            // One second after the last exchange the map is within 200 µs of the truth.
            let later = t + 1_000_000_000
            let error = Int64(bitPattern: map.speakerTime(forControllerTime: later) &- clock.speaker(later))
            #expect(abs(error) < 200_000, "error \(error) ns for \(ppb) ppb")
        }
    }
}
