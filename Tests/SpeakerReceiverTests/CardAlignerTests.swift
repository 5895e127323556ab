import Testing
import TestSupport
@testable import SpeakerReceiver

/// `CardAligner` against a model sound card whose crystal runs off the host's clock: what the writer would do each
/// tick, on virtual time — the card's queue holds slot numbers, so where each slot was heard is known exactly.
@Suite struct CardAlignerTests {
    /// A card at `ppm` off the host clock, reporting its delay to `granularity` frames, ticked every 10 ms (± 3 ms
    /// jitter, seeded) for `seconds`. Returns the aligner, the worst |heard − due| in slots after the first second,
    /// and whether the slots went to the card in order (each a repeat of the last or a step of one or two).
    static func run(ppm: Double, seconds: Double, granularity: Int = 1, rate: UInt32 = 48_000)
        -> (aligner: CardAligner, worst: Double, ordered: Bool) {
        var aligner = CardAligner(sampleRate: rate, lead: 50_000_000, latency: 0)
        let ratio = (1 + ppm / 1_000_000) * Double(rate) / 1e9  // frames the card plays per ns of host time
        var queue: [UInt64] = []  // slots written, in order; queue[played...] not yet played
        var written = 0
        var start: Double?
        var nextSlot: UInt64 = 1_000_000_000 * UInt64(rate) / 1_000_000_000 / 1000 * 1000  // the stream's first slot
        var now: Double = 1e9
        var random = TestRandom(seed: 42)
        var worst = 0.0
        var ordered = true
        func played(at t: Double) -> Int { start.map { min(written, Int(((t - $0) * ratio).rounded(.down))) } ?? 0 }
        while now < 1e9 + seconds * 1e9 {
            let p = played(at: now)
            if p > 0, now > 2e9, let start, queue[p - 1] != 0 {
                // Frame p-1 (the one playing now) started at start + (p-1)/ratio; it carries slot queue[p-1], due at
                // slotTime(queue[p-1]).
                let began = start + Double(p - 1) / ratio
                worst = max(worst, abs(began - Double(aligner.slotTime(queue[p - 1]))) * Double(rate) / 1e9)
            }
            let delay = ((written - p) + granularity - 1) / granularity * granularity
            let plan = aligner.plan(now: UInt64(now), delay: delay, nextSlot: nextSlot)
            var out: [UInt64] = []
            if let discard = plan.discardThrough {
                while aligner.slotTime(nextSlot) <= discard { nextSlot += 1 }
            }
            out += [UInt64](repeating: 0, count: plan.silenceFrames)
            var rendered: [UInt64] = []
            while aligner.slotTime(nextSlot) <= plan.renderThrough { rendered.append(nextSlot); nextSlot += 1 }
            switch plan.correction {
            case .insert: if let last = rendered.last { rendered.append(last) }
            case .drop: if !rendered.isEmpty { rendered.removeLast() }
            case .none: break
            }
            out += rendered
            if start == nil, !out.isEmpty { start = now }
            for s in out {
                if let last = queue.last, last != 0, s != 0, !(s == last || s == last + 1 || s == last + 2) { ordered = false }
                queue.append(s)
            }
            written += out.count
            aligner.wrote(frames: out.count, delayAfter: written - played(at: now))
            now += 10e6 + Double(Int.random(in: -3_000_000...3_000_000, using: &random))
        }
        return (aligner, worst, ordered)
    }

    @Test func aFastCardGetsSamplesInsertedAndStaysOnTheClock() {
        let (a, worst, ordered) = Self.run(ppm: 200, seconds: 60)
        // 200 ppm of 48 kHz for 60 s: 576 samples.
        #expect((540...610).contains(a.statistics.insertedSamples), "\(a.statistics)")
        #expect(a.statistics.droppedSamples <= 5 && a.statistics.resyncs == 0, "\(a.statistics)")
        #expect(a.timed == true)
        #expect(worst <= 2, "worst \(worst) slots")
        #expect(ordered)
    }

    @Test func aSlowCardGetsSamplesDropped() {
        let (a, worst, ordered) = Self.run(ppm: -150, seconds: 60)
        #expect((400...465).contains(a.statistics.droppedSamples), "\(a.statistics)")
        #expect(a.statistics.insertedSamples <= 5 && a.statistics.resyncs == 0, "\(a.statistics)")
        #expect(worst <= 2, "worst \(worst) slots")
        #expect(ordered)
    }

    @Test func coarsePositionReportsStayWithinTheirGranularity() {
        // A card reporting its position to a millisecond (48 frames), as USB audio does.
        let (a, worst, ordered) = Self.run(ppm: 100, seconds: 60, granularity: 48)
        #expect(a.statistics.resyncs == 0, "\(a.statistics)")
        #expect(worst <= 48, "worst \(worst) slots")
        #expect(Int(a.statistics.insertedSamples) - Int(a.statistics.droppedSamples) >= 250, "\(a.statistics)")
        #expect(ordered)
    }

    @Test func aDeviceWithoutAClockGetsEverySlotInOrderUncorrected() {
        var a = CardAligner(sampleRate: 48_000, lead: 50_000_000, latency: 0)
        var next: UInt64 = 48_000
        var slots: [UInt64] = []
        for k in 0..<500 {
            let now = UInt64(1_000_000_000 + k * 10_000_000)
            let plan = a.plan(now: now, delay: 0, nextSlot: next)
            if let d = plan.discardThrough { while a.slotTime(next) <= d { next += 1 } }
            #expect(plan.silenceFrames == 0 && plan.correction == .none)
            let first = next
            while a.slotTime(next) <= plan.renderThrough { next += 1 }
            slots += Array(first..<next)
            a.wrote(frames: Int(next - first), delayAfter: 0)
        }
        #expect(a.timed == false)
        #expect(a.statistics == CardAligner.Statistics())
        #expect(zip(slots, slots.dropFirst()).allSatisfy { $1 == $0 + 1 })
        #expect(slots.first == 48_000 && slots.count > 48_000 * 5 - 100)
    }

    @Test func latencyMovesTheOutputEarlier() {
        var a = CardAligner(sampleRate: 48_000, lead: 50_000_000, latency: 20_000_000)
        let plan = a.plan(now: 1_000_000_000, delay: 0, nextSlot: 48_000)
        // The next frame is heard 20 ms after ALSA plays it: it carries the slot due then.
        #expect(plan.discardThrough.map { $0 / 1_000_000 } == 1_019 || plan.discardThrough.map { $0 / 1_000_000 } == 1_020)
        #expect(plan.renderThrough == 1_070_000_000)
    }
}
