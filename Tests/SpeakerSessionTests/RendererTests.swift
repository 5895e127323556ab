import Speaker
import SpeakerSimulator
import Support
import Testing

/// The renderer plays a run of frames at once when slot-by-slot rendering would do nothing else between them. Its
/// output must not depend on how much it is asked to render per call: rendering one slot per call (every run one
/// frame long) and in steps of many milliseconds give the same PCM, render log, counts and events.
@Suite struct RendererRunTests {
    struct Outcome {
        var pcm: [UInt8] = []
        var log: [RenderRun] = []
        var events: [RenderEvent] = []
        var statistics: RenderStatistics?
    }

    /// 2.5 s of seeded noise in full packets, some lost and some arriving late (a retransmission) or reordered;
    /// the DAC drifting by `ppm` (a drift correction every 1/ppm frames).
    static func stream(ppm: Int32, seed: UInt64) throws -> (format: AudioFormat, map: ClockMap, packets: [(AudioPacket, UInt64)], start: UInt64) {
        let format = try AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        var rng = SeededRandom(seed: seed)
        let controllerStart: UInt64 = 7_000_000_000
        let map = try ClockMap(controllerReference: controllerStart, speakerReference: 123_456_789_011, rate: ppm * 1000)
        let perPacket = AudioPacket.maxFrames(for: format)
        let frames = 48_000 * 5 / 2
        var packets: [(AudioPacket, UInt64)] = []
        var first = 0, sequence: UInt32 = 0
        while first < frames {
            let count = min(perPacket, frames - first)
            let pcm = (0..<count * format.bytesPerFrame).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let presentation = controllerStart + format.nanoseconds(forFrames: UInt64(first))
            let packet = try AudioPacket(streamId: 9, sequence: sequence, firstFrame: UInt64(first), presentationTime: presentation,
                                         format: format, endOfStream: first + count == frames, pcm: pcm)
            let due = map.speakerTime(forControllerTime: presentation)
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<3: break  // lost for good
            case 3..<8: packets.append((packet, due - UInt64.random(in: 1_000_000...3_000_000, using: &rng)))  // resent, just in time
            case 8..<10: packets.append((packet, due + 10_000_000))  // too late: every frame of it is due before it comes
            default: packets.append((packet, due - 200_000_000 + UInt64.random(in: 0...5_000_000, using: &rng)))
            }
            first += count
            sequence += 1
        }
        return (format, map, packets, map.speakerTime(forControllerTime: controllerStart) - 50_000_000)
    }

    /// Renders the stream, handing over the packets as their arrival comes, in calls `step` says how far to reach.
    static func render(ppm: Int32, seed: UInt64, volume: Int, step: (inout SeededRandom, SpeakerRenderer) -> UInt64) throws -> Outcome {
        let (format, map, packets, start) = try stream(ppm: ppm, seed: seed)
        var renderer = SpeakerRenderer(streamId: 9, format: format, map: map, startDAC: start)
        renderer.volume = volume
        var queue = packets.sorted { $0.1 < $1.1 }
        var rng = SeededRandom(seed: seed ^ 0x5eed)
        var outcome = Outcome()
        var calls = 0
        while !renderer.ended, calls < 1_000_000 {
            calls += 1
            let through = step(&rng, renderer)
            // Packets are received at their arrival; a renderer uses them from then on, whenever it is told.
            while let next = queue.first, next.1 <= through {
                renderer.receive(next.0, arrival: next.1)
                queue.removeFirst()
            }
            outcome.events += renderer.render(through: through, output: &outcome.pcm, log: &outcome.log)
        }
        outcome.statistics = renderer.statistics
        #expect(renderer.ended)
        return outcome
    }

    /// A renderer that starts after its first frames were due (a speaker joining a playing stream and handed
    /// earlier packets) jumps over them before its first output: late, but before what it played, so counted apart.
    @Test func framesJumpedOverBeforeTheFirstOutputAreCountedApart() throws {
        let format = try AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        let start: UInt64 = 7_000_000_000
        let map = try ClockMap(controllerReference: start, speakerReference: start, rate: 0)
        let perPacket = AudioPacket.maxFrames(for: format)
        // The renderer's first slot is 30 ms after frame 0 was due; every packet was there 200 ms early.
        var renderer = SpeakerRenderer(streamId: 9, format: format, map: map, startDAC: start + 30_000_000)
        for k in 0..<20 {
            let first = UInt64(k * perPacket)
            let packet = try AudioPacket(
                streamId: 9, sequence: UInt32(k), firstFrame: first, presentationTime: start + format.nanoseconds(forFrames: first),
                format: format, endOfStream: k == 19, pcm: [UInt8](repeating: UInt8(k), count: perPacket * format.bytesPerFrame))
            renderer.receive(packet, arrival: start - 200_000_000)
        }
        var pcm: [UInt8] = [], log: [RenderRun] = []
        _ = renderer.render(through: start + 200_000_000, output: &pcm, log: &log)
        let stats = renderer.statistics
        let firstPlayed = try #require(log.first { $0.kind == .source }?.sourceFrame)
        #expect(stats.lateFrames >= 1_400 && stats.lateFramesBeforeOutput == stats.lateFrames, "\(stats)")
        #expect(firstPlayed == stats.lateFramesBeforeOutput, "\(stats), first frame played \(firstPlayed)")
        #expect(stats.renderedFrames > 0)
    }

    @Test(arguments: [(Int32(0), 50), (Int32(450), 50), (Int32(-380), 31), (Int32(2_500), 0)])
    func theOutputDoesNotDependOnHowMuchIsRenderedPerCall(ppm: Int32, volume: Int) throws {
        let oneSlot = try Self.render(ppm: ppm, seed: 11, volume: volume) { _, r in r.slotTime(r.nextSlot) }
        let steps = try Self.render(ppm: ppm, seed: 11, volume: volume) { rng, r in
            r.slotTime(r.nextSlot) + UInt64.random(in: 0...40_000_000, using: &rng)
        }
        // The stream was played with what the test meant to exercise: losses, late packets, corrections, seconds.
        #expect(oneSlot.statistics!.renderedFrames > 100_000)
        #expect(oneSlot.statistics!.lostFrames > 0 && oneSlot.statistics!.latePackets > 0)
        #expect(ppm == 0 || oneSlot.statistics!.correctedSamples > 0)
        #expect(oneSlot.events.filter { if case .elapsed = $0 { true } else { false } }.count == 2)
        #expect(steps.statistics == oneSlot.statistics)
        #expect(steps.events == oneSlot.events)
        // Rendering one slot at a time stops at the slot that ends the stream; a longer call renders silence after it.
        var log = steps.log
        if let last = log.last, last.kind == .silence, let mine = oneSlot.log.last, mine.kind == .silence, mine.slot == last.slot {
            log[log.count - 1].count = mine.count
        }
        let firstDifferentRun = (0..<min(log.count, oneSlot.log.count)).first { log[$0] != oneSlot.log[$0] } ?? (log.count == oneSlot.log.count ? nil : min(log.count, oneSlot.log.count))
        #expect(firstDifferentRun == nil, "runs differ from \(firstDifferentRun ?? 0): \(log.dropFirst(firstDifferentRun ?? 0).prefix(3)) vs \(oneSlot.log.dropFirst(firstDifferentRun ?? 0).prefix(3))")
        let tail = steps.pcm.dropFirst(oneSlot.pcm.count)
        #expect(steps.pcm.count >= oneSlot.pcm.count && tail.allSatisfy { $0 == 0 })
        let firstDifferentByte = (0..<min(steps.pcm.count, oneSlot.pcm.count)).first { steps.pcm[$0] != oneSlot.pcm[$0] }
        #expect(firstDifferentByte == nil, "the output differs from byte \(firstDifferentByte ?? 0)")
        // Far fewer runs than frames: the log is runs, and so is the rendering.
        #expect(oneSlot.log.count < 2_000)
    }
}

/// A sample-exact resume on the renderer (docs/speaker-protocol.md §3.2): after `reset(resumingAt: n)` the frames
/// before n — played before the pause — are dropped, their slots silent, and frame n plays at its own time; without
/// a floor the first frame sent plays first, as before.
@Suite struct RendererResumeTests {
    static let format = try! AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .s16le)

    /// Packets of frames `from..<from + count`, frame i holding i + 1, presented from `at` on (identity map).
    static func packets(from: UInt64, count: Int, at: UInt64, sequence: UInt32) throws -> [AudioPacket] {
        let per = 480
        return try stride(from: 0, to: count, by: per).enumerated().map { k, offset in
            let first = from + UInt64(offset)
            let pcm = (0..<min(per, count - offset)).flatMap { j -> [UInt8] in
                let v = UInt16(truncatingIfNeeded: first + UInt64(j) + 1)
                return [UInt8(v & 0xFF), UInt8(v >> 8)]
            }
            return try AudioPacket(streamId: 3, sequence: sequence + UInt32(k), firstFrame: first,
                                   presentationTime: at + format.nanoseconds(forFrames: UInt64(offset)), format: format, pcm: pcm)
        }
    }

    /// The output's samples (0: silence).
    static func samples(_ pcm: [UInt8]) -> [UInt16] { stride(from: 0, to: pcm.count, by: 2).map { UInt16(pcm[$0]) | UInt16(pcm[$0 + 1]) << 8 } }

    @Test func framesBeforeTheResumeFrameAreNotPlayedAgainAndItPlaysAtItsTime() throws {
        for floor: UInt64? in [nil, 1_030] {
            let map = try ClockMap(controllerReference: 0, speakerReference: 0, rate: 0)
            var r = SpeakerRenderer(streamId: 3, format: Self.format, map: map, startDAC: 1_000_000_000)
            for p in try Self.packets(from: 0, count: 4_800, at: 1_000_000_000, sequence: 0) { r.receive(p, arrival: 900_000_000) }
            var out: [UInt8] = [], log: [RenderRun] = []
            // Paused 1_030 frames in (21.458 ms): frames 0...1029 played.
            _ = r.render(through: 1_000_000_000 + Self.format.nanoseconds(forFrames: 1_029), output: &out, log: &log)
            #expect(r.nextUnplayedFrame == 1_030)
            r.reset(resumingAt: floor)
            #expect(r.nextUnplayedFrame == floor)
            // Resumed from frame 1_000 (another member's) at 2 s.
            for p in try Self.packets(from: 1_000, count: 960, at: 2_000_000_000, sequence: 10) { r.receive(p, arrival: 1_900_000_000) }
            out = []
            _ = r.render(through: 2_010_000_000, output: &out, log: &log)
            let s = Self.samples(out)
            // This output starts at slot 48_000 + 1_030 (after frame 1029's); the resume's first frame is due at 2 s, slot 96_000.
            let start = 96_000 - (48_000 + 1_030)
            let played = s.filter { $0 != 0 }
            if let floor {
                // Silent until frame 1030's own time (30 slots after the resume's first frame), then 1030, 1031, ...
                let firstSound = try #require(s.firstIndex { $0 != 0 })
                #expect(firstSound == start + Int(floor - 1_000), "first sound at \(firstSound), resume at \(start)")
                #expect(played.first == UInt16(floor + 1))
            } else {
                #expect(played.first == 1_001)
            }
            #expect(zip(played, played.dropFirst()).allSatisfy { $1 == $0 + 1 })
            #expect(r.statistics.lateFrames == 0 && r.statistics.skippedSamples == 0 && r.statistics.repeatedSamples == 0)
        }
    }
}
