import Speaker
import SpeakerPlayback

/// One stretch of a speaker's output: `count` DAC slots from `slot` on, carrying source frames `sourceFrame...` in
/// order (`source`), one source frame played again (`repeated`, a drift correction), or silence.
public struct RenderRun: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case source, repeated, silence }
    public var slot: UInt64
    public var count: UInt64
    /// The first source frame (`source`), the repeated frame (`repeated`); 0 for silence.
    public var sourceFrame: UInt64
    public var kind: Kind

    public init(slot: UInt64, count: UInt64, sourceFrame: UInt64, kind: Kind) {
        self.slot = slot
        self.count = count
        self.sourceFrame = sourceFrame
        self.kind = kind
    }
}

/// What a renderer counted.
public struct RenderStatistics: Sendable, Hashable {
    /// Source frames that reached the output (repeats not counted).
    public var renderedFrames: UInt64 = 0
    /// Drift corrections: a frame played twice (the DAC ran ahead of the stream by half a sample).
    public var repeatedSamples: UInt64 = 0
    /// Of those, repeats of a silent slot (the frame before was lost): logged as silence.
    public var repeatedSilence: UInt64 = 0
    /// Drift corrections: a frame left out (the DAC fell behind by half a sample).
    public var skippedSamples: UInt64 = 0
    /// Frames never received (lost packets), played as silence in their place.
    public var lostFrames: UInt64 = 0
    /// Gaps in the packets' sequence numbers.
    public var lostPackets: UInt64 = 0
    /// Packets that arrived after their frames were due (dropped), and frames jumped over to catch up.
    public var latePackets: UInt64 = 0
    public var lateFrames: UInt64 = 0
    /// Of `lateFrames`, those jumped over before any frame reached the output (a speaker that joined a playing stream
    /// and was handed earlier packets, or one whose first packets came late): before the output's first frame, so not
    /// a gap in what it played.
    public var lateFramesBeforeOutput: UInt64 = 0
    /// Times the output lost its lock on the stream by more than `SpeakerRenderer.correctionLimit` (a clock step).
    public var resyncs: UInt64 = 0
    /// Missing packets that arrived after all (retransmitted on a `resendRequest`, or reordered).
    public var recoveredPackets: UInt64 = 0

    /// Samples (frames) changed by drift correction.
    public var correctedSamples: UInt64 { repeatedSamples + skippedSamples }

    /// Adds `other`'s counts to these.
    public mutating func add(_ other: RenderStatistics) {
        renderedFrames += other.renderedFrames
        repeatedSamples += other.repeatedSamples
        repeatedSilence += other.repeatedSilence
        skippedSamples += other.skippedSamples
        lostFrames += other.lostFrames
        lostPackets += other.lostPackets
        latePackets += other.latePackets
        lateFrames += other.lateFrames
        lateFramesBeforeOutput += other.lateFramesBeforeOutput
        resyncs += other.resyncs
        recoveredPackets += other.recoveredPackets
    }
}

/// Something a renderer reports while rendering.
public enum RenderEvent: Sendable, Hashable {
    /// The first source frame reached the output (after play, resume or a re-lock).
    case firstAudio(slot: UInt64, frame: UInt64)
    /// Stream time passed a whole second (frame index / rate).
    case elapsed(milliseconds: UInt32)
    /// The last frame of an end-of-stream packet was rendered.
    case ended
}

/// A speaker's renderer of one stream (docs/speaker-protocol.md §7): a pure value that takes audio packets with their
/// arrival time and fills the DAC's output slots, all on the speaker's DAC clock.
///
/// The DAC plays slot n at DAC time `n × 10⁹ / rate`. For each slot the renderer computes when the next source frame
/// is due (its presentation time through the `ClockMap`) and the error e = due − slot time:
/// - not yet locked: silence until a frame is due within half a slot, then lock; a frame already late by more is
///   jumped over (a speaker joining mid-stream, packets that came late);
/// - locked: |e| ≤ half a slot plays the frame; e beyond half a slot (the DAC runs fast) plays the previous frame again,
///   beyond minus half a slot (slow) leaves one frame out — one sample of correction each, counted, so the output stays
///   within half a sample of where the stream says it belongs; |e| above `correctionLimit` (a clock step) unlocks.
/// Frames of packets never received are played as silence at their place (the first-frame field places them).
/// Volume scales the output (50 = unity: the samples unchanged).
public struct SpeakerRenderer: Sendable {
    public static let correctionLimit: Int64 = 2_000_000

    public let streamId: UInt32
    public let format: AudioFormat
    /// The controller-to-DAC clock map in use (nil: nothing can be placed; silence).
    public var map: ClockMap?
    /// 0...50 (0 also when muted).
    public var volume: Int = 50
    public private(set) var statistics = RenderStatistics()
    public private(set) var ended = false
    /// The next slot to render.
    public private(set) var nextSlot: UInt64
    /// Lost-packet recovery (§7.1): the gaps in the sequence numbers, asked for through `resendRequests(at:)`.
    public private(set) var recovery: LossRecovery
    /// How far ahead of the DAC clock the output renders (a sound card's queue): a missing packet must arrive this
    /// much before its frames are due to be of use.
    public var renderLead: UInt64 = 0
    private var fullPacketFrames = 0

    private var pending: [(arrival: UInt64, packet: AudioPacket)] = []
    private var buffer: [AudioPacket] = []
    /// The frame after the last of `buffer[0]` (kept with the buffer): `dropConsumed`'s test at every slot, without
    /// copying the packet (its reference counting was a tenth of a receiver's CPU).
    private var firstEnd: UInt64 = 0
    private var cursor: UInt64 = 0
    private var started = false
    /// After a sample-exact resume (`reset(resumingAt:)`): the frames before it were played before the pause and are
    /// not played again (their slots stay silent).
    private var floor: UInt64?
    private var locked = false
    private var announced = false
    private var endFrame: UInt64?
    private var highestSequence: UInt32?
    private var lastFrame: [UInt8]
    private var lastWasSilence = true
    private let silence: [UInt8]
    private let halfSlot: Int64
    private let slotPeriod: Double

    /// A renderer whose first slot is the one at or after DAC time `startDAC`.
    public init(streamId: UInt32, format: AudioFormat, map: ClockMap?, startDAC: UInt64,
                recovery: LossRecovery.Policy = LossRecovery.Policy()) {
        self.recovery = LossRecovery(policy: recovery)
        self.streamId = streamId
        self.format = format
        self.map = map
        silence = [UInt8](repeating: 0, count: format.bytesPerFrame)
        lastFrame = silence
        slotPeriod = 1e9 / Double(format.sampleRate)
        halfSlot = Int64(slotPeriod / 2)
        let (high, low) = startDAC.multipliedFullWidth(by: UInt64(format.sampleRate))
        let q = UInt64(1_000_000_000).dividingFullWidth((high, low))
        nextSlot = q.quotient + (q.remainder > 0 ? 1 : 0)
    }

    /// The DAC time of slot `n`.
    public func slotTime(_ n: UInt64) -> UInt64 {
        format.nanoseconds(forFrames: n)
    }

    /// A packet that arrives at DAC time `arrival` (it is usable from then on).
    public mutating func receive(_ packet: AudioPacket, arrival: UInt64) {
        guard packet.streamId == streamId, packet.format == format else { return }
        fullPacketFrames = max(fullPacketFrames, packet.frameCount)
        let due = map.map { $0.speakerTime(forControllerTime: packet.presentationTime) &- renderLead }
        if recovery.received(sequence: packet.sequence, due: due,
                             packetDuration: format.nanoseconds(forFrames: UInt64(fullPacketFrames)), at: arrival) {
            statistics.recoveredPackets += 1
        }
        if let h = highestSequence {
            let ahead = packet.sequence &- h
            if ahead != 0, ahead < 1 << 31 {
                statistics.lostPackets += UInt64(ahead - 1)
                highestSequence = packet.sequence
            } else if ahead != 0, statistics.lostPackets > 0 {
                statistics.lostPackets -= 1  // a reordered packet counted as lost arrived after all
            }
        } else {
            highestSequence = packet.sequence
        }
        var i = pending.endIndex
        while i > pending.startIndex, pending[i - 1].arrival > arrival { i -= 1 }
        pending.insert((arrival, packet), at: i)
    }

    /// The sequence numbers to ask the controller for at DAC time `now` (a `resendRequest`; empty: nothing to ask).
    public mutating func resendRequests(at now: UInt64) -> [UInt32] {
        guard !ended else { return [] }
        return recovery.requests(at: now)
    }

    /// When `resendRequests(at:)` has something to do next (nil: nothing is missing).
    public var nextRecoveryEvent: UInt64? { ended ? nil : recovery.nextEvent }

    /// The first frame of the stream not played yet: the cursor once the output started, else where a sample-exact
    /// resume starts (nil: nothing played since the renderer was opened or reset without a frame).
    public var nextUnplayedFrame: UInt64? { started ? cursor : floor }

    /// Forgets the packets held (pause): the next packet received starts the output anew — from frame `floor` on
    /// when given (a sample-exact resume, docs/speaker-protocol.md §3.2: frames before it were played before the
    /// pause, so they are dropped, their slots silent, and frame `floor` plays at its own time).
    public mutating func reset(resumingAt floor: UInt64? = nil) {
        self.floor = floor
        recovery.reset()
        pending.removeAll()
        buffer.removeAll()
        started = false
        locked = false
        announced = false
        endFrame = nil
        highestSequence = nil
    }

    private mutating func promote(upTo time: UInt64) {
        while let first = pending.first, first.arrival <= time {
            pending.removeFirst()
            let p = first.packet
            if p.endOfStream { endFrame = p.firstFrame + UInt64(p.frameCount) }
            guard p.frameCount > 0 else { continue }
            if !started, let floor, p.firstFrame + UInt64(p.frameCount) <= floor { continue }  // played before the pause
            if started, p.firstFrame + UInt64(p.frameCount) <= cursor {
                statistics.latePackets += 1
                continue
            }
            var i = buffer.endIndex
            while i > buffer.startIndex, buffer[i - 1].firstFrame > p.firstFrame { i -= 1 }
            if i > buffer.startIndex, buffer[i - 1].firstFrame == p.firstFrame { continue }  // a duplicate
            buffer.insert(p, at: i)
            if i == buffer.startIndex { firstEnd = p.firstFrame + UInt64(p.frameCount) }
        }
    }

    private mutating func dropConsumed() {
        guard !buffer.isEmpty, firstEnd <= cursor else { return }  // the first packet still plays: nothing to drop
        var n = 0
        while n < buffer.count, buffer[n].firstFrame + UInt64(buffer[n].frameCount) <= cursor { n += 1 }
        if n > 0 { buffer.removeFirst(n) }
        firstEnd = buffer.first.map { $0.firstFrame + UInt64($0.frameCount) } ?? 0
    }

    /// When frame `cursor` is due on the DAC clock (extrapolated from the next packet when it was never received);
    /// nil when nothing at or after it is held.
    private func due(_ map: ClockMap) -> UInt64? {
        // The fields of buffer[0], not a copy of the packet (no reference counting per slot).
        guard !buffer.isEmpty else { return nil }
        let firstFrame = buffer[0].firstFrame, presentation = buffer[0].presentationTime
        let controllerTime: UInt64
        if firstFrame <= cursor {
            controllerTime = presentation &+ format.nanoseconds(forFrames: cursor - firstFrame)
        } else {
            controllerTime = presentation &- format.nanoseconds(forFrames: firstFrame - cursor)
        }
        return map.speakerTime(forControllerTime: controllerTime)
    }

    /// Renders every slot whose DAC time is at or before `time`: the output PCM is appended to `output`, the runs to
    /// `log`; returns the events.
    public mutating func render(through time: UInt64, output: inout [UInt8], log: inout [RenderRun]) -> [RenderEvent] {
        var events: [RenderEvent] = []
        while true {
            let slot = nextSlot
            let s = slotTime(slot)
            guard s <= time else { break }
            nextSlot += 1
            if !pending.isEmpty, pending[0].arrival <= s { promote(upTo: s) }
            guard let map, !ended else { emitSilence(slot, &output, &log); continue }
            if !started {
                // Start at the earliest frame held once it is nearly due (a reordered earlier packet may still come).
                guard let first = buffer.first else { emitSilence(slot, &output, &log); continue }
                let from = max(first.firstFrame, floor ?? 0)
                let presentation = first.presentationTime &+ format.nanoseconds(forFrames: from - first.firstFrame)
                guard Int64(bitPattern: map.speakerTime(forControllerTime: presentation) &- s) <= halfSlot else {
                    emitSilence(slot, &output, &log)
                    continue
                }
                cursor = from
                started = true
                locked = false
            }
            dropConsumed()
            if endsStream(slot, &output, &log, &events) { continue }
            guard var dueTime = due(map) else { emitSilence(slot, &output, &log); continue }
            var e = Int64(bitPattern: dueTime &- s)
            if !locked {
                if e > halfSlot { emitSilence(slot, &output, &log); continue }
                if e < -halfSlot {
                    let k = UInt64((Double(-e - halfSlot) / slotPeriod).rounded(.up))
                    cursor += max(1, k)
                    statistics.lateFrames += max(1, k)
                    if statistics.renderedFrames == 0 { statistics.lateFramesBeforeOutput += max(1, k) }
                    dropConsumed()
                    guard let d = due(map) else { emitSilence(slot, &output, &log); continue }
                    dueTime = d
                    e = Int64(bitPattern: dueTime &- s)
                    if abs(e) > halfSlot { emitSilence(slot, &output, &log); continue }
                }
                locked = true
            } else {
                if e > Self.correctionLimit || e < -Self.correctionLimit {
                    locked = false
                    statistics.resyncs += 1
                    emitSilence(slot, &output, &log)
                    continue
                }
                if e > halfSlot {
                    statistics.repeatedSamples += 1
                    output.append(contentsOf: lastFrame)
                    if lastWasSilence {
                        statistics.repeatedSilence += 1
                        append(RenderRun(slot: slot, count: 1, sourceFrame: 0, kind: .silence), to: &log)
                    } else {
                        append(RenderRun(slot: slot, count: 1, sourceFrame: cursor &- 1, kind: .repeated), to: &log)
                    }
                    continue
                }
                if e < -halfSlot {
                    statistics.skippedSamples += 1
                    cursor += 1
                    dropConsumed()
                    if endsStream(slot, &output, &log, &events) { continue }
                    emitFrames(1, slot, &output, &log, &events)
                    continue
                }
                // Locked and on time: the slots after this one play the frames after this one for as long as
                // slot-by-slot rendering would (one copy and one log entry for them all).
                let n = runLength(from: slot, error: e, map: map, through: time)
                nextSlot += n - 1
                emitFrames(n, slot, &output, &log, &events)
                continue
            }
            emitFrames(1, slot, &output, &log, &events)
        }
        return events
    }

    /// The error band a run stays inside, with room for the integer truncations of `due` and `slotTime` (a few ns):
    /// the error moves linearly between two frames of one packet, so a run whose first and last errors are inside it
    /// has every error inside half a slot, as slot-by-slot rendering checks.
    private static let runMargin: Int64 = 32

    /// How many slots from `slot` on (at least 1; `slot` is locked with error `e`) play consecutive frames of the packet
    /// that holds the cursor with nothing else to do between them: no drift correction (the error stays within half a
    /// slot), not past the packet, the end of stream or `time`.
    private func runLength(from slot: UInt64, error e: Int64, map: ClockMap, through time: UInt64) -> UInt64 {
        let band = halfSlot - Self.runMargin
        guard !buffer.isEmpty, buffer[0].firstFrame <= cursor, abs(e) <= band else { return 1 }
        var n = buffer[0].firstFrame + UInt64(buffer[0].frameCount) - cursor
        if let endFrame { n = min(n, endFrame &- cursor) }
        n = min(n, slots(from: slot, through: time))
        // (A packet arriving meanwhile cannot change the run: packets do not overlap, so one that precedes the packet
        // playing is late, and one that follows it plays after it.)
        let firstFrame = buffer[0].firstFrame, presentation = buffer[0].presentationTime
        while n > 1 {
            let last = cursor + n - 1
            let due = map.speakerTime(forControllerTime: presentation &+ format.nanoseconds(forFrames: last - firstFrame))
            if abs(Int64(bitPattern: due &- slotTime(slot + n - 1))) <= band { return n }
            n = (n + 1) / 2
        }
        return 1
    }

    /// The slots from `slot` on whose DAC time is at or before `time` (at least 1: `slot`'s is).
    private func slots(from slot: UInt64, through time: UInt64) -> UInt64 {
        guard slotTime(slot) <= time else { return 1 }
        // The last slot at or before `time`: time × rate / 10⁹, then exact by slotTime's own truncation.
        let rate = UInt64(format.sampleRate)
        let product = time.multipliedFullWidth(by: rate)
        guard product.high < 1_000_000_000 else { return UInt64.max - slot }
        var last = UInt64(1_000_000_000).dividingFullWidth(product).quotient
        while last > slot, slotTime(last) > time { last -= 1 }
        while last < .max, slotTime(last + 1) <= time { last += 1 }
        return max(last, slot) - slot + 1
    }

    /// Plays the `n` frames from the cursor on in the slots from `slot` on (`n` is 1 unless `runLength` said more).
    private mutating func emitFrames(_ n: UInt64, _ slot: UInt64, _ output: inout [UInt8], _ log: inout [RenderRun], _ events: inout [RenderEvent]) {
        let frame = cursor
        guard !buffer.isEmpty, buffer[0].firstFrame <= frame else {
            cursor += 1
            statistics.lostFrames += 1
            lastFrame = silence
            lastWasSilence = true
            output.append(contentsOf: silence)
            append(RenderRun(slot: slot, count: 1, sourceFrame: 0, kind: .silence), to: &log)
            return
        }
        cursor += n
        let bpf = format.bytesPerFrame
        let offset = Int(frame - buffer[0].firstFrame) * bpf, count = Int(n) * bpf
        let start = output.count
        // One copy of the frames' bytes, then the gain in place on the output.
        buffer[0].pcm.withUnsafeBytes { src in
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: src[offset..<offset + count]))
        }
        output.withUnsafeMutableBytes { out in
            PCM.scale(UnsafeMutableRawBufferPointer(rebasing: out[start...]), volume: volume, format: format.sampleFormat)
            lastFrame.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: out[(out.count - bpf)...])) }
        }
        lastWasSilence = false
        statistics.renderedFrames += n
        append(RenderRun(slot: slot, count: n, sourceFrame: frame, kind: .source), to: &log)
        if !announced {
            announced = true
            events.append(.firstAudio(slot: slot, frame: frame))
        }
        // Every whole second of stream time the run passes (frame index a multiple of the rate, not 0).
        let rate = UInt64(format.sampleRate)
        var second = max(frame, 1).quotientAndRemainder(dividingBy: rate)
        if second.remainder != 0 { second.quotient += 1 }
        while second.quotient * rate < frame + n {
            events.append(.elapsed(milliseconds: UInt32(truncatingIfNeeded: second.quotient * 1000)))
            second.quotient += 1
        }
    }

    /// Whether the cursor has reached the stream's announced end: then the renderer has ended (an `.ended` event) and
    /// `slot` is silence.
    private mutating func endsStream(_ slot: UInt64, _ output: inout [UInt8], _ log: inout [RenderRun], _ events: inout [RenderEvent]) -> Bool {
        guard let endFrame, cursor >= endFrame else { return false }
        ended = true
        events.append(.ended)
        emitSilence(slot, &output, &log)
        return true
    }

    private mutating func emitSilence(_ slot: UInt64, _ output: inout [UInt8], _ log: inout [RenderRun]) {
        lastFrame = silence
        lastWasSilence = true
        output.append(contentsOf: silence)
        append(RenderRun(slot: slot, count: 1, sourceFrame: 0, kind: .silence), to: &log)
    }

    private func append(_ run: RenderRun, to log: inout [RenderRun]) {
        if let last = log.last, last.kind == run.kind, last.kind != .repeated, last.slot + last.count == run.slot,
           last.kind == .silence || last.sourceFrame + last.count == run.sourceFrame {
            log[log.count - 1].count += run.count
        } else {
            log.append(run)
        }
    }
}

/// What a speaker rendered of one stream: the output PCM and its runs, with the DAC clock that turns slots into true
/// time — the render log tests and benchmarks measure synchronisation and fidelity with.
public struct RenderLog: Sendable {
    public let streamId: UInt32
    public let format: AudioFormat
    public let clock: DACClock
    public var runs: [RenderRun] = []
    public var statistics = RenderStatistics()
    /// A line for the reader, written as a comment after the header (e.g. which part of the stream this is).
    public var note: String?

    public init(streamId: UInt32, format: AudioFormat, clock: DACClock) {
        self.streamId = streamId
        self.format = format
        self.clock = clock
    }

    /// The true time (ns) at which slot `slot` reached the output.
    public func trueTime(ofSlot slot: UInt64) -> Double {
        let (high, low) = slot.multipliedFullWidth(by: 1_000_000_000)
        let dac = UInt64(format.sampleRate).dividingFullWidth((high, low)).quotient
        return clock.trueTime(atDACTime: dac)
    }

    /// The source runs in order of their frames (the first playing of each frame), for `slot(ofSourceFrame:in:)`.
    public func sourceIndex() -> [RenderRun] {
        var out: [RenderRun] = []
        var next: UInt64 = 0
        for r in runs where r.kind == .source {
            guard r.sourceFrame + r.count > next else { continue }  // replayed after a resume: keep the first playing
            var run = r
            if r.sourceFrame < next {
                run.slot += next - r.sourceFrame
                run.count -= next - r.sourceFrame
                run.sourceFrame = next
            }
            out.append(run)
            next = run.sourceFrame + run.count
        }
        return out
    }

    /// The slot where source frame `frame` was first played (nil: never); `index` from `sourceIndex()`.
    public func slot(ofSourceFrame frame: UInt64, in index: [RenderRun]) -> UInt64? {
        var lo = 0, hi = index.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let r = index[mid]
            if r.sourceFrame + r.count <= frame { lo = mid + 1 } else if r.sourceFrame > frame { hi = mid } else {
                return r.slot + (frame - r.sourceFrame)
            }
        }
        return nil
    }

    /// The true time at which source frame `frame` reached the output (nil: never played).
    public func trueTime(ofSourceFrame frame: UInt64, in index: [RenderRun]) -> Double? {
        slot(ofSourceFrame: frame, in: index).map(trueTime(ofSlot:))
    }

    /// The first source frame's slot and frame.
    public var firstSource: RenderRun? { runs.first { $0.kind == .source } }

    /// The log as text, one run a line: `slot dac_ns true_ns kind source_frame count`.
    public func text() -> String {
        var lines = ["# stream=\(streamId) rate=\(format.sampleRate) channels=\(format.channels) sample_format=\(format.sampleFormat.rawValue) offset_ns=\(clock.offset) drift_ppm=\(clock.driftPPM)",
                     "# slot dac_ns true_ns kind source_frame count"]
        if let note { lines.insert("# " + note.split(whereSeparator: \.isNewline).joined(separator: " "), at: 1) }
        lines.reserveCapacity(runs.count + 1)
        for r in runs {
            let (high, low) = r.slot.multipliedFullWidth(by: 1_000_000_000)
            let dac = UInt64(format.sampleRate).dividingFullWidth((high, low)).quotient
            lines.append("\(r.slot) \(dac) \(UInt64(trueTime(ofSlot: r.slot))) \(r.kind.rawValue) \(r.sourceFrame) \(r.count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
