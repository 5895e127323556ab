import Speaker
import SpeakerPlayback
import Support

/// Measurements over render logs: how far apart speakers played the same frame, and whether each played the source
/// sample for sample. Shared by the tests and `tuneup-bench speaker-sync`.
public enum PlaybackAnalysis {
    /// For every `stride`-th source frame in `frames` played by at least two of `logs`: the spread (ns) between the
    /// earliest and the latest true time it reached an output.
    public static func spreads(_ logs: [RenderLog], frames: Range<UInt64>, stride step: UInt64) -> [Double] {
        let indexes = logs.map { $0.sourceIndex() }
        var out: [Double] = []
        for f in Swift.stride(from: frames.lowerBound, to: frames.upperBound, by: Int(step)) {
            var lo = Double.infinity, hi = -Double.infinity, n = 0
            for (log, index) in zip(logs, indexes) {
                guard let t = log.trueTime(ofSourceFrame: f, in: index) else { continue }
                lo = min(lo, t)
                hi = max(hi, t)
                n += 1
            }
            if n >= 2 { out.append(hi - lo) }
        }
        return out
    }

    /// The `p`-th percentile (0...100) of `values` by the project's one rule (`Percentile`: nearest rank); 0 when
    /// empty.
    public static func percentile(_ values: [Double], _ p: Double) -> Double {
        Percentile.of(sorted: values.sorted(), p) ?? 0
    }

    /// How one speaker's output compares with the source.
    public struct Fidelity: Sendable, Hashable {
        /// Output frames compared with the source frame the log says they carry.
        public var comparedFrames: UInt64 = 0
        /// Of those, frames whose samples differ.
        public var mismatchedFrames: UInt64 = 0
        /// Source frames between the first and the last played that never reached the output.
        public var missingFrames: UInt64 = 0
        /// Frames played twice (drift correction).
        public var repeatedFrames: UInt64 = 0

        /// Every frame equal to its source; every missing frame between the first and the last played accounted for
        /// by the renderer's counts.
        public func isExact(given statistics: RenderStatistics) -> Bool {
            mismatchedFrames == 0 && repeatedFrames + statistics.repeatedSilence == statistics.repeatedSamples
                && missingFrames == statistics.skippedSamples + statistics.lostFrames + statistics.lateFrames - statistics.lateFramesBeforeOutput
        }
    }

    /// Compares `pcm` (the speaker's output from the log's first slot on, at unity volume) with `source`.
    public static func fidelity(_ log: RenderLog, pcm: [UInt8], source: GeneratedSignal) -> Fidelity {
        var result = Fidelity()
        guard let first = log.runs.first else { return result }
        let bpf = log.format.bytesPerFrame
        var next: UInt64?
        for run in log.runs {
            let offset = Int(run.slot - first.slot) * bpf
            guard offset + Int(run.count) * bpf <= pcm.count else { break }
            switch run.kind {
            case .source:
                let expected = source.frames(run.sourceFrame, count: Int(run.count))
                for i in 0..<Int(run.count) where !pcm[offset + i * bpf..<offset + (i + 1) * bpf].elementsEqual(expected[i * bpf..<(i + 1) * bpf]) {
                    result.mismatchedFrames += 1
                }
                result.comparedFrames += run.count
                if let n = next, run.sourceFrame > n { result.missingFrames += run.sourceFrame - n }
                next = max(next ?? 0, run.sourceFrame + run.count)
            case .repeated:
                let expected = source.frames(run.sourceFrame, count: 1)
                if !pcm[offset..<offset + bpf].elementsEqual(expected) { result.mismatchedFrames += 1 }
                result.comparedFrames += 1
                result.repeatedFrames += 1
            case .silence:
                break
            }
        }
        return result
    }
}

extension RenderLog {
    /// Reads a render log written by `text()` (a recording's `.render.log`).
    /// - Throws: `SpeakerPlaybackError(.invalidArgument)` for a text that is not one.
    public init(text: String) throws(SpeakerPlaybackError) {
        func bad(_ why: String) -> SpeakerPlaybackError { SpeakerPlaybackError(.invalidArgument, "not a render log: \(why)") }
        var lines = text.split(separator: "\n")
        guard let header = lines.first, header.hasPrefix("#") else { throw bad("no header") }
        lines.removeFirst()
        var fields: [String: String] = [:]
        for part in header.split(separator: " ") where part.contains("=") {
            let kv = part.split(separator: "=", maxSplits: 1)
            fields[String(kv[0])] = String(kv[1])
        }
        guard let stream = fields["stream"].flatMap(UInt32.init), let rate = fields["rate"].flatMap(UInt32.init),
              let channels = fields["channels"].flatMap(UInt8.init), let sf = fields["sample_format"].flatMap(UInt8.init),
              let sampleFormat = SampleFormat(rawValue: sf), let offset = fields["offset_ns"].flatMap(Int64.init),
              let drift = fields["drift_ppm"].flatMap(Double.init),
              let format = try? AudioFormat(sampleRate: rate, channels: channels, sampleFormat: sampleFormat) else {
            throw bad("header lacks stream, rate, channels, sample_format, offset_ns or drift_ppm")
        }
        self.init(streamId: stream, format: format, clock: DACClock(offset: offset, driftPPM: drift))
        for line in lines where !line.hasPrefix("#") {
            let f = line.split(separator: " ")
            guard f.count == 6, let slot = UInt64(f[0]), let kind = RenderRun.Kind(rawValue: String(f[3])),
                  let source = UInt64(f[4]), let count = UInt64(f[5]) else { throw bad("line '\(line)'") }
            runs.append(RenderRun(slot: slot, count: count, sourceFrame: source, kind: kind))
        }
    }
}
