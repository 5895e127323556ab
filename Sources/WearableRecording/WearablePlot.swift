import Failure
import Foundation
import Spawn
import Support
import Wearable

/// The failures of reading a recording for a plot: a file that is not one, one without samples (exit 65), one that
/// cannot be read (exit 74).
public typealias RecordingError = CodedFailure<RecordingErrors>

public enum RecordingErrors: ErrorDomain {
    public static func category(of code: RecordingError.Code) -> FailureCategory {
        code == .unreadable ? .localFile : .device
    }
}

extension ErrorCodeIn where Domain == RecordingError {
    /// A line that is not a wearable recording's (`NAME:LINE: not a line of a wearable recording`).
    public static let notARecording = Self(rawValue: "not-a-recording")
    /// A recording with no sample to plot.
    public static let noSamples = Self(rawValue: "no-samples")
    /// The file cannot be read.
    public static let unreadable = Self(rawValue: "unreadable")
}

/// A recording laid out as an SVG (`tuneup wearable plot`, docs/cli.md): one panel per sensor, its components against
/// the device time, gaps as breaks, gestures as dashed lines; optionally the yaw, pitch and roll of quaternion sensors.
/// Laying out is pure (text in, text out); `make` reads and writes the files off the cooperative pool.
public struct WearablePlot: Sendable {
    public struct Panel: Sendable {
        public enum Kind: Sendable { case values, orientation }
        public var sensor: String
        public var kind: Kind = .values
        public var unit: String
        /// "accelerometer", or "gameRotation orientation" for an orientation panel.
        public var name: String { kind == .orientation ? "\(sensor) orientation" : sensor }
        /// Per component (x, y, z, w): runs of (seconds, value) points, broken at gaps.
        public var series: [(name: String, runs: [[(Double, Double)]])]
        /// Where samples were missing (seconds).
        public var gaps: [Double]
    }

    public private(set) var panels: [Panel] = []
    /// Each gesture and when (seconds from the recording's start).
    public private(set) var gestures: [(name: String, time: Double)] = []
    public private(set) var sampleCount = 0
    /// Seconds from the first to the last sample or gesture.
    public private(set) var duration: Double = 0

    /// `orientation`: under each quaternion sensor's panel, one of its yaw, pitch and roll (degrees), computed from the
    /// quaternion (so recordings made before the yaw/pitch/roll fields plot too).
    /// What the plot keeps of a sample (not the whole line: a 30-minute recording is 180k of them).
    struct Point {
        var t: Int64
        var x, y, z, w: Double?
        var missingBefore: Int
        /// Its sensor's first sample after a reconnect: the line starts afresh.
        var afterReconnect: Bool
        /// The stretch between reconnects it belongs to (0: before the first).
        var segment = 0
    }

    /// Lays out the recording `text` (`name` names it in errors). Throws `.notARecording` for its first line that is
    /// not a recording's, `.noSamples` when it holds none.
    public init(jsonLines text: String, name: String, orientation: Bool = false) throws(RecordingError) {
        try self.init(name: name, orientation: orientation) { (body) throws(WearableRecordingContents.NotARecording) in
            _ = try WearableRecordingContents.forEachLine(jsonLines: text, name: name, body)
        }
    }

    /// Lays out the recording in the file at `path`, read `chunkSize` bytes at a time (a long recording is never held
    /// whole: a 30-minute one is 38 MB of text). Blocking: call it off the cooperative pool. The refusals of
    /// `init(jsonLines:name:orientation:)`, and `.unreadable` for a file that cannot be opened or read.
    public init(file path: String, name: String, orientation: Bool = false, chunkSize: Int = 1 << 20) throws(RecordingError) {
        let fd = try WearableRecordingContents.open(path)
        defer { _ = close(fd) }
        var readFailure: RecordingError?
        do throws(RecordingError) {
            try self.init(name: name, orientation: orientation) { (body) throws(WearableRecordingContents.NotARecording) in
                var reader = WearableRecordingContents.LineReader(name: name)
                var chunk = [UInt8](repeating: 0, count: max(1, chunkSize))
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n < 0, errno == EINTR { continue }
                    if n < 0 {
                        readFailure = RecordingError(.unreadable, "cannot read the recording \(path): \(String(cString: strerror(errno)))")
                        return
                    }
                    if n == 0 { break }
                    try chunk.withUnsafeBufferPointer { (b) throws(WearableRecordingContents.NotARecording) in
                        try reader.feed(UnsafeBufferPointer(rebasing: b[0..<n]), body)
                    }
                }
                _ = try reader.finish(body)
            }
        } catch {
            throw readFailure ?? error
        }
        if let readFailure { throw readFailure }
    }

    /// Lays out what `lines` hands to its argument, one recording line at a time.
    init(name: String, orientation: Bool,
         lines: ((WearableLine) throws(WearableRecordingContents.NotARecording) -> Void) throws(WearableRecordingContents.NotARecording) -> Void)
        throws(RecordingError) {
        // A recording with its metadata line or without (made before it): both plot. Read line by line into points.
        var bySensor: [String: [Point]] = [:]
        var gestureLines: [(name: String, t: Int64)] = []
        // After a reconnect (an event line with the link's gap) each sensor's line starts afresh: the samples around
        // the gap are not joined.
        var breakPending = Set<String>()
        // The segments between reconnects: a device that restarted counts from 0 again, so each segment after a
        // reconnect is laid out in host time (its first line's hostTime against the first segment's) when its
        // device clock disagrees with the host's by more than a second; else after the previous one and its gap.
        var segment = 0
        var anchors: [Int: Int64] = [:]  // per segment: hostTime - deviceTime (ms) of its first line with both
        var firsts: [Int: Int64] = [:], lasts: [Int: Int64] = [:], gapsMs: [Int: Int64] = [:]
        var gestureSegments: [Int] = []
        func note(_ t: Int64, _ line: WearableLine) {
            if firsts[segment] == nil { firsts[segment] = t }
            lasts[segment] = max(lasts[segment] ?? t, t)
            if anchors[segment] == nil, let host = line.hostTime { anchors[segment] = Int64((host * 1000).rounded()) - t }
        }
        do {
            try lines { line in
                switch line.type {
                case "event" where line.event == "reconnected":
                    breakPending = Set(bySensor.keys)
                    segment += 1
                    gapsMs[segment] = Int64(((line.gapSeconds ?? 0) * 1000).rounded())
                case "sample":
                    guard let sensor = line.sensor, let t = line.deviceTime else { return }
                    note(t, line)
                    bySensor[sensor, default: []].append(Point(t: t, x: line.x, y: line.y, z: line.z, w: line.w, missingBefore: line.missingBefore ?? 0,
                                                               afterReconnect: breakPending.remove(sensor) != nil, segment: segment))
                case "gesture":
                    if let g = line.gesture, let t = line.deviceTime {
                        note(t, line)
                        gestureLines.append((g, t))
                        gestureSegments.append(segment)
                    }
                default: break
                }
            }
        } catch {
            throw RecordingError(.notARecording, error.message)
        }
        // Each segment's shift (ms) onto the first segment's clock.
        var shifts: [Int: Int64] = [:]
        var reference: Int64?  // the first anchored segment's anchor, shifted
        var previousEnd: Int64?
        for k in 0...segment {
            guard let first = firsts[k], let last = lasts[k] else { continue }
            var shift: Int64 = 0
            if let anchor = anchors[k], let reference {
                let host = anchor - reference
                if abs(host) > WearableRecorder.reanchorThreshold { shift = host }
            } else if let previousEnd, first <= previousEnd {
                shift = previousEnd + (gapsMs[k] ?? 0) - first
            }
            shifts[k] = shift
            if reference == nil, let anchor = anchors[k] { reference = anchor + shift }
            previousEnd = last + shift
        }
        if shifts.values.contains(where: { $0 != 0 }) {
            for key in bySensor.keys {
                bySensor[key] = bySensor[key]!.map { p in
                    var p = p
                    p.t += shifts[p.segment] ?? 0
                    return p
                }
            }
            for i in gestureLines.indices { gestureLines[i].t += shifts[gestureSegments[i]] ?? 0 }
        }
        sampleCount = bySensor.values.reduce(0) { $0 + $1.count }
        guard sampleCount > 0 else {
            throw RecordingError(.noSamples, "\(name) holds no samples to plot")
        }
        let times = bySensor.values.flatMap { [$0.map(\.t).min(), $0.map(\.t).max()] }.compactMap { $0 } + gestureLines.map(\.t)
        let origin = times.min() ?? 0
        let end = times.max() ?? origin
        duration = Double(end - origin) / 1000
        let order = SensorType.allCases.map(\.description)
        for sensor in bySensor.keys.sorted(by: { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }) {
            var points = bySensor.removeValue(forKey: sensor)!
            if zip(points, points.dropFirst()).contains(where: { $0.t > $1.t }) { points.sort { $0.t < $1.t } }
            let unit = WearableText.sensor(named: sensor).map(WearableText.unit) ?? ""
            var series: [(String, [[(Double, Double)]])] = []
            for (component, path) in [("x", \Point.x), ("y", \Point.y), ("z", \Point.z), ("w", \Point.w)] {
                guard points.contains(where: { $0[keyPath: path] != nil }) else { continue }
                var runs: [[(Double, Double)]] = [[]]
                runs[0].reserveCapacity(points.count)
                for p in points {
                    guard let v = p[keyPath: path], v.isFinite else { continue }
                    if p.missingBefore > 0 || p.afterReconnect, !runs[runs.count - 1].isEmpty { runs.append([]) }
                    runs[runs.count - 1].append((Double(p.t - origin) / 1000, v))
                }
                series.append((component, runs))
            }
            let gaps = points.filter { $0.missingBefore > 0 }.map { Double($0.t - origin) / 1000 }
            panels.append(Panel(sensor: sensor, unit: unit, series: series, gaps: gaps))
            if orientation, let angles = Self.orientationSeries(points, origin: origin) {
                panels.append(Panel(sensor: sensor, kind: .orientation, unit: "°", series: angles, gaps: gaps))
            }
        }
        gestures = gestureLines.map { ($0.name, Double($0.t - origin) / 1000) }
    }

    /// Yaw, pitch and roll of a quaternion sensor's samples, broken at gaps and where an angle wraps (±180°); nil when
    /// the lines hold no quaternions.
    static func orientationSeries(_ lines: [Point], origin: Int64) -> [(name: String, runs: [[(Double, Double)]])]? {
        var angles: [(String, [[(Double, Double)]])] = [("yaw", [[]]), ("pitch", [[]]), ("roll", [[]])]
        var any = false
        for l in lines {
            guard let x = l.x, let y = l.y, let z = l.z, let w = l.w, let o = Orientation(Quaternion(x: x, y: y, z: z, w: w)) else { continue }
            any = true
            let t = Double(l.t - origin) / 1000
            for (k, v) in [o.yaw, o.pitch, o.roll].enumerated() {
                let last = angles[k].1[angles[k].1.count - 1].last
                if !(angles[k].1[angles[k].1.count - 1].isEmpty), l.missingBefore > 0 || l.afterReconnect || abs(v - (last?.1 ?? v)) > 180 {
                    angles[k].1.append([])
                }
                angles[k].1[angles[k].1.count - 1].append((t, v))
            }
        }
        return any ? angles : nil
    }

    /// 1, 2 or 5 times a power of ten, giving about `count` ticks over `low...high`.
    static func ticks(_ low: Double, _ high: Double, count: Int = 5) -> [Double] {
        let span = max(high - low, 1e-9)
        let raw = span / Double(count)
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
        var out: [Double] = []
        var t = ceil(low / step) * step
        while t <= high + step * 1e-9 {
            out.append(abs(t) < step * 1e-9 ? 0 : t)
            t += step
        }
        return out
    }

    /// A tick's label with as many decimals as the ticks' `step` needs (ticks 0.0002 apart are not all "0").
    static func label(_ v: Double, step: Double) -> String {
        if v == v.rounded(), abs(v) < 1e6 { return String(Int(v)) }
        guard abs(v) < 1e6, step > 0 else { return String(format: "%g", v) }
        let decimals = max(0, min(9, Int(-floor(log10(step) + 1e-9))))
        return String(format: "%.\(decimals)f", v)
    }

    /// The step between `ticks`' values (1 when there are fewer than two).
    static func step(of ticks: [Double]) -> Double { ticks.count > 1 ? ticks[1] - ticks[0] : 1 }

    /// SVG text and attributes (`Markup.escape`: quotes too); a recording's sensor and gesture names too.
    static func escape(_ s: String) -> String { Markup.escape(s) }

    /// The SVG document.
    public func svg() -> String {
        let width = 1000.0, left = 90.0, right = 30.0, top = 50.0, panelHeight = 200.0, gap = 60.0
        let plotWidth = width - left - right
        let height = top + Double(panels.count) * (panelHeight + gap) + 10
        let colors = ["x": "#d62728", "y": "#2ca02c", "z": "#1f77b4", "w": "#7f7f7f", "yaw": "#d62728", "pitch": "#2ca02c", "roll": "#1f77b4"]
        // A recording of one instant (one sample, or all at one device time) gets a 1 s axis: its ticks 0.2 s apart.
        let tMax = duration > 0 ? duration : 1
        func xPos(_ t: Double) -> Double { left + t / tMax * plotWidth }
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="16">Wearable recording: \(WearableText.counted(panels.filter { $0.kind == .values }.count, "sensor")), \(WearableText.counted(sampleCount, "sample")), \(WearableText.counted(gestures.count, "gesture")), \(String(format: "%.1f", duration)) s</text>

            """
        let timeTicks = Self.ticks(0, tMax, count: 8)
        let timeStep = Self.step(of: timeTicks)
        for (index, panel) in panels.enumerated() {
            let y0 = top + Double(index) * (panelHeight + gap)
            let values = panel.series.flatMap { $0.runs.flatMap { $0.map(\.1) } }
            var low = values.min() ?? -1, high = values.max() ?? 1
            if panel.kind == .orientation {
                // Degrees: a steady scale of whole ticks, at least ±10°.
                low = min(low, -10)
                high = max(high, 10)
            }
            if high - low < 1e-6 { low -= 1; high += 1 }
            let pad = (high - low) * 0.05
            low -= pad
            high += pad
            func yPos(_ v: Double) -> Double { y0 + panelHeight - (v - low) / (high - low) * panelHeight }
            let panelID = panel.kind == .orientation ? "panel-\(panel.sensor)-orientation" : "panel-\(panel.sensor)"
            let kind = panel.kind == .orientation ? " data-kind=\"orientation\"" : ""
            out += "<g class=\"panel\" id=\"\(Self.escape(panelID))\" data-sensor=\"\(Self.escape(panel.sensor))\"\(kind) data-unit=\"\(Self.escape(panel.unit))\">\n"
            out += "<rect x=\"\(left)\" y=\"\(y0)\" width=\"\(plotWidth)\" height=\"\(panelHeight)\" fill=\"none\" stroke=\"#333\"/>\n"
            out += "<g class=\"y-axis\">\n"
            let valueTicks = Self.ticks(low, high)
            for t in valueTicks {
                let y = yPos(t)
                out += String(format: "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", left, y, left + plotWidth, y)
                out += String(format: "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%@</text>\n", left - 6, y + 4,
                                  Self.label(t, step: Self.step(of: valueTicks)))
            }
            let axisLabel = panel.kind == .orientation ? "\(panel.sensor) yaw, pitch, roll (°)"
                : panel.unit == "(unitless)" ? "\(panel.sensor) (quaternion)" : "\(panel.sensor) (\(panel.unit))"
            out += String(format: "<text class=\"y-label\" x=\"18\" y=\"%.1f\" transform=\"rotate(-90 18 %.1f)\" text-anchor=\"middle\">%@</text>\n",
                          y0 + panelHeight / 2, y0 + panelHeight / 2, Self.escape(axisLabel))
            out += "</g>\n<g class=\"x-axis\">\n"
            for t in timeTicks {
                let x = xPos(t)
                out += String(format: "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", x, y0 + panelHeight, x, y0 + panelHeight + 5)
                out += String(format: "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%@</text>\n", x, y0 + panelHeight + 18,
                                  Self.label(t, step: timeStep))
            }
            out += String(format: "<text class=\"x-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">device time (s)</text>\n",
                          left + plotWidth / 2, y0 + panelHeight + 34)
            out += "</g>\n"
            for (name, runs) in panel.series {
                out += "<g class=\"series\" data-component=\"\(name)\">\n"
                for run in runs where run.count == 1 {
                    // A polyline of one point draws nothing: a dot.
                    out += String(format: "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%@\"/>\n", xPos(run[0].0), yPos(run[0].1), colors[name] ?? "#000")
                }
                for run in runs where run.count > 1 {
                    let points = Self.decimate(run, buckets: Int(plotWidth)).map { String(format: "%.1f,%.1f", xPos($0.0), yPos($0.1)) }
                    out += "<polyline fill=\"none\" stroke=\"\(colors[name] ?? "#000")\" stroke-width=\"1\" points=\"\(points.joined(separator: " "))\"/>\n"
                }
                out += "</g>\n"
            }
            for (k, (name, _)) in panel.series.enumerated() {
                let x = left + plotWidth - 40 * Double(panel.series.count - k)
                out += String(format: "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" fill=\"%@\">%@</text>\n", x, y0 - 6, colors[name] ?? "#000", name)
            }
            for g in panel.gaps {
                out += String(format: "<line class=\"gap\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"orange\" stroke-width=\"3\"/>\n",
                              xPos(g), y0 + panelHeight - 6, xPos(g), y0 + panelHeight)
            }
            out += "<g class=\"gestures\">\n"
            for (name, time) in gestures {
                let x = xPos(time)
                out += String(format: "<line class=\"gesture\" data-gesture=\"%@\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9467bd\" stroke-dasharray=\"4 3\"/>\n",
                              Self.escape(name), x, y0, x, y0 + panelHeight)
                if index == 0 {
                    let end = x > left + plotWidth - 70
                    out += String(format: "<text class=\"gesture-label\" x=\"%.1f\" y=\"%.1f\" fill=\"#9467bd\" font-size=\"10\" text-anchor=\"%@\">%@</text>\n",
                                  end ? x - 2 : x + 2, y0 + 12, end ? "end" : "start", Self.escape(name))
                }
            }
            out += "</g>\n</g>\n"
        }
        out += "</svg>\n"
        return out
    }

    /// At most two points (the lowest and the highest, in time order) per bucket of the time axis.
    static func decimate(_ run: [(Double, Double)], buckets: Int) -> [(Double, Double)] {
        guard run.count > buckets * 2, let first = run.first?.0, let last = run.last?.0, last > first else { return run }
        var out: [(Double, Double)] = []
        var i = 0
        for b in 0..<buckets {
            let end = first + (last - first) * Double(b + 1) / Double(buckets)
            var lo: (Double, Double)?, hi: (Double, Double)?
            while i < run.count, run[i].0 <= end || b == buckets - 1 {
                let p = run[i]
                if lo == nil || p.1 < lo!.1 { lo = p }
                if hi == nil || p.1 > hi!.1 { hi = p }
                i += 1
            }
            if let lo, let hi { out += lo.0 <= hi.0 ? [lo, hi] : [hi, lo] }
        }
        return out
    }

    /// The PNG's path for the SVG at `svg`: .png for .svg, else .png added.
    public static func pngPath(for svg: String) -> String {
        (svg.hasSuffix(".svg") ? String(svg.dropLast(4)) : svg) + ".png"
    }

    /// Converts `svg` to a PNG next to it (`pngPath(for:)`) with rsvg-convert, into a private temporary directory
    /// first and then written by `SafeOutput` (`mode`: what its check returned); the PNG's path, or nil when
    /// there is no converter or it failed. Throws when the PNG cannot be written. Blocking: call it off the
    /// cooperative pool.
    public static func convertToPNG(_ svg: String, replacing mode: mode_t?) throws(OutputFileError) -> String? {
        guard SVGRasterizer.tool != nil else { return nil }
        let png = pngPath(for: svg)
        guard let bytes = SVGRasterizer.png(ofFile: svg) else { return nil }
        try SafeOutput.write(bytes, to: png, replacing: mode)
        return png
    }
}

extension WearablePlot {
    /// The file to read: RECORDING when it is a file (any name), else RECORDING.jsonl; a .csv's .jsonl. Blocking.
    public static func inputPath(_ recording: String) -> String {
        if recording.hasSuffix(".csv") { return String(recording.dropLast(4)) + ".jsonl" }
        if recording.hasSuffix(".jsonl") || FileManager.default.fileExists(atPath: recording) { return recording }
        return recording + ".jsonl"
    }

    /// The SVG's default path: the recording's, .jsonl replaced by .svg (or .svg added).
    public static func svgPath(for input: String) -> String {
        (input.hasSuffix(".jsonl") ? String(input.dropLast(".jsonl".count)) : input) + ".svg"
    }

    /// What `make` wrote (`plot --format json`).
    public struct Made: Encodable, Sendable {
        public var svg: String
        public var png: String?
        public var panels: [String]
        public var samples: Int
        public var gestures: Int
        public var gaps: [String: Int]
        public var durationSeconds: Double
    }

    /// A plot made: the recording read, its layout, what was written.
    public struct Result: Sendable {
        /// The file read (`inputPath`).
        public var input: String
        public var plot: WearablePlot
        public var made: Made
        /// An orientation panel was asked for and the recording holds no quaternion sensor.
        public var noOrientation: Bool
    }

    /// Reads `recording` (`inputPath`), lays it out and writes the SVG to `output` (default `svgPath(for:)`), then,
    /// with `png`, a PNG next to it (`convertToPNG`; `made.png` nil when there is no converter or it failed). Output
    /// files follow `SafeOutput`, every one checked before any is written (the recording itself is refused). Reading and laying out a long recording (a 30-minute one is 180k lines) and writing
    /// run on the blocking executor, off the cooperative pool.
    /// - Throws: `RecordingError` (`.unreadable`, `.notARecording`, `.noSamples`), `OutputFileError`, `SupportError`.
    public static func make(recording: String, output: String?, png: Bool, orientation: Bool) async throws -> Result {
        let (input, plot, svg) = try await Blocking.run("plot-read") { () -> Swift.Result<(String, WearablePlot, String), RecordingError> in
            let input = WearablePlot.inputPath(recording)
            do throws(RecordingError) {
                let plot = try WearablePlot(file: input, name: input, orientation: orientation)
                return .success((input, plot, plot.svg()))
            } catch {
                return .failure(error)
            }
        }.get()
        let svgPath = output ?? Self.svgPath(for: input)
        let pngPath = try await Blocking.run("plot-write") { () -> Swift.Result<String?, OutputFileError> in
            do throws(OutputFileError) {
                // Every output is checked before any is written: neither may be the recording (however named), a
                // symbolic link, a device, FIFO, socket or directory.
                let inputs = SafeOutput.identity(of: input).map { [(path: input, identity: $0)] } ?? []
                let svgMode = try SafeOutput.check(svgPath, existing: .replace, inputs: inputs)
                let pngMode = png && SVGRasterizer.tool != nil
                    ? try SafeOutput.check(Self.pngPath(for: svgPath), existing: .replace, inputs: inputs) : nil
                try SafeOutput.write(Array(svg.utf8), to: svgPath, replacing: svgMode)
                return .success(try png ? WearablePlot.convertToPNG(svgPath, replacing: pngMode) : nil)
            } catch {
                return .failure(error)
            }
        }.get()
        let made = Made(svg: svgPath, png: pngPath, panels: plot.panels.map(\.name), samples: plot.sampleCount, gestures: plot.gestures.count,
                        gaps: Dictionary(plot.panels.map { ($0.name, $0.gaps.count) }, uniquingKeysWith: { a, _ in a }),
                        durationSeconds: plot.duration)
        return Result(input: input, plot: plot, made: made,
                      noOrientation: orientation && !plot.panels.contains { $0.kind == .orientation })
    }

    /// The line `plot` prints: what was written, the panels, samples, gestures and the duration.
    public static func text(_ made: Made) -> String {
        "wrote \(made.svg)\(made.png.map { " and \($0)" } ?? ""): \(WearableText.counted(made.panels.count, "panel")) "
            + "(\(made.panels.joined(separator: ", "))), \(WearableText.counted(made.samples, "sample")), "
            + "\(WearableText.counted(made.gestures, "gesture")) over \(String(format: "%.1f", made.durationSeconds)) s"
    }
}
