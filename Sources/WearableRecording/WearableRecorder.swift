import Foundation
import Glibc
import Support
import Wearable

/// Writes a recording as its lines come (docs/wearable.md §10): `PATH.jsonl` (the metadata line first, then every line
/// `stream --format json` prints, samples and gestures with `epochMs`), `PATH.csv` (one row per sample or gesture)
/// and, split by sensor, `PATH.SENSOR.csv` per sensor and `PATH.gestures.csv` with unit-bearing headers. Lines that
/// come before the first sample or gesture (the events) wait for it: its arrival fixes the wall-clock time of device
/// time zero, which the metadata line carries. The writing itself is `RecordingWriter`'s (as it goes, off the pool).
public struct WearableRecorder {
    public let writer: RecordingWriter
    public let jsonlPath: String, csvPath: String
    /// With --split-by-sensor: the per-sensor files, and the gestures' file.
    public let sensorFiles: [SensorType: Int]
    public let gestureFile: Int?
    private let wallClock: @Sendable () -> Int64
    private var metadata: RecordingMetadata?
    private var held: [WearableLine] = []
    private var headerWritten = false
    private var epochZero: Int64?
    /// The device time of the recording's first sample or gesture (elapsed 0 in the split files).
    private var origin: Int64?
    /// The epoch of the recording's first sample or gesture (elapsed 0 in the split files).
    private var startEpoch: Int64?
    /// A reconnect was seen: the device may have restarted (its clock from 0 again), so its next sample or gesture
    /// checks the time zero against the wall clock.
    private var checkAnchor = false
    /// How far the device's clock may disagree with the wall clock after a reconnect before the time zero is moved.
    public static let reanchorThreshold: Int64 = 1000
    public private(set) var samples = 0
    public private(set) var gestures = 0

    /// The wall clock in ms since 1970 UTC.
    public static let systemWallClock: @Sendable () -> Int64 = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The split files' names: `BASE.SENSOR.csv`, `BASE.gestures.csv`.
    public static func splitPath(base: String, sensor: SensorType) -> String { "\(base).\(sensor.description).csv" }
    public static func gesturesPath(base: String) -> String { "\(base).gestures.csv" }

    /// Opens the files (before the device, so a path in the way is refused first); `split`: the sensors for which to
    /// write one CSV each (nil: none), `splitGestures`: also one for the gestures.
    /// `existing`: what to do with a file already there (`.refuse` unless `--overwrite`: `SafeOutput`); the
    /// files get their names when the first sample or gesture arrives (the recording really started) or at `finish`.
    public static func open(base: String, split: [SensorType]?, splitGestures: Bool, existing: SafeOutput.Existing = .refuse,
                            wallClock: @escaping @Sendable () -> Int64 = systemWallClock) async throws(OutputFileError) -> WearableRecorder {
        var files = [RecordingWriter.File(base + ".jsonl", lineEnding: "\n"), RecordingWriter.File(base + ".csv", lineEnding: CSV.lineEnding)]
        var sensorFiles: [SensorType: Int] = [:]
        var gestureFile: Int?
        if let split {
            for sensor in split where sensorFiles[sensor] == nil {
                sensorFiles[sensor] = files.count
                files.append(.init(splitPath(base: base, sensor: sensor), lineEnding: CSV.lineEnding))
            }
            if splitGestures {
                gestureFile = files.count
                files.append(.init(gesturesPath(base: base), lineEnding: CSV.lineEnding))
            }
        }
        try await WearableRecorder.checkBase(base)
        let writer = try await RecordingWriter.open(files, existing: existing)
        writer.append(WearableLine.csvHeader, to: 1)
        for (sensor, index) in sensorFiles { writer.append(CSV.row(splitHeader(sensor)), to: index) }
        if let gestureFile { writer.append(CSV.row(["epoch (ms)", "elapsed (s)", "device time (ms)", "gesture"]), to: gestureFile) }
        return WearableRecorder(writer: writer, jsonlPath: base + ".jsonl", csvPath: base + ".csv", sensorFiles: sensorFiles,
                                gestureFile: gestureFile, wallClock: wallClock)
    }

    private init(writer: RecordingWriter, jsonlPath: String, csvPath: String, sensorFiles: [SensorType: Int], gestureFile: Int?,
                 wallClock: @escaping @Sendable () -> Int64) {
        (self.writer, self.jsonlPath, self.csvPath, self.sensorFiles, self.gestureFile, self.wallClock) =
            (writer, jsonlPath, csvPath, sensorFiles, gestureFile, wallClock)
    }

    /// Every file's path, the JSON Lines first.
    public var paths: [String] { writer.files.map(\.path) }

    /// A sensor's split CSV header: `epoch (ms), elapsed (s), device time (ms)`, its components with their unit,
    /// accuracy, and `missing before` (samples lost just before this one).
    public static func splitHeader(_ sensor: SensorType) -> [String] {
        let unit = RecordingMetadata.unit(sensor)
        func u(_ name: String) -> String { unit.isEmpty ? name : "\(name) (\(unit))" }
        var columns = ["epoch (ms)", "elapsed (s)", "device time (ms)"]
        switch sensor {
        case .rotation: columns += ["x", "y", "z", "w", "accuracy (rad)", "yaw (deg)", "pitch (deg)", "roll (deg)"]
        case .gameRotation: columns += ["x", "y", "z", "w", "yaw (deg)", "pitch (deg)", "roll (deg)"]
        case .uncalibratedMagnetometer: columns += [u("x"), u("y"), u("z"), u("bias x"), u("bias y"), u("bias z")]
        default: columns += [u("x"), u("y"), u("z"), "accuracy"]
        }
        return columns + ["missing before"]
    }

    /// Takes one line of the stream, in order.
    public mutating func take(_ line: WearableLine) {
        if line.type == "metadata" {
            metadata = line.metadata
            return
        }
        if line.type == "event", line.event == "reconnected" { checkAnchor = true }
        if checkAnchor, headerWritten, line.type == "sample" || line.type == "gesture", let t = line.deviceTime, let zero = epochZero {
            // A device that restarted counts from 0 again: its samples would be dated before the recording began.
            // Re-anchored at the reconnect (the wall clock at the first sample after it); a clock that went on is
            // kept as it was.
            checkAnchor = false
            let now = wallClock()
            if abs(zero + t - now) > Self.reanchorThreshold { epochZero = now - t }
        }
        if !headerWritten {
            guard (line.type == "sample" || line.type == "gesture"), let t = line.deviceTime else {
                held.append(line)
                return
            }
            epochZero = wallClock() - t
            origin = t
            startEpoch = epochZero.map { $0 + t }
            checkAnchor = false
            writeHeader()
        }
        write(line)
    }

    /// Writes the metadata line and the lines held for it.
    private mutating func writeHeader() {
        headerWritten = true
        writer.commit()
        if var metadata {
            metadata.epochMsAtDeviceTimeZero = epochZero
            if let epochZero, let origin { metadata.startedUTC = Self.iso8601(epochZero + origin) }
            var line = WearableLine(type: "metadata")
            line.metadata = metadata
            if let text = Self.json(line) { writer.append(text, to: 0) }
        }
        let lines = held
        held = []
        for line in lines { write(line) }
    }

    private mutating func write(_ input: WearableLine) {
        var line = input
        if let t = line.deviceTime, let epochZero { line.epochMs = epochZero + t }
        if let text = Self.json(line) { writer.append(text, to: 0) }
        if let row = line.csvRow { writer.append(row, to: 1) }
        // Elapsed from the first sample in wall-clock terms: across a device restart too.
        let (origin, startEpoch, epochMs) = (self.origin, self.startEpoch, line.epochMs)
        let elapsed = { (t: Int64) in
            if let epochMs, let startEpoch { return String(Double(epochMs - startEpoch) / 1000) }
            return String(Double(t - (origin ?? t)) / 1000)
        }
        func f(_ v: Double?) -> String { v.map { String($0) } ?? "" }
        let epoch = line.epochMs.map { String($0) } ?? ""
        if line.type == "sample" {
            samples += 1
            if let name = line.sensor, let sensor = SensorType(name: name), let index = sensorFiles[sensor], let t = line.deviceTime {
                var row = [epoch, elapsed(t), String(t)]
                switch sensor {
                case .rotation: row += [f(line.x), f(line.y), f(line.z), f(line.w), f(line.estimatedAccuracy), f(line.yaw), f(line.pitch), f(line.roll)]
                case .gameRotation: row += [f(line.x), f(line.y), f(line.z), f(line.w), f(line.yaw), f(line.pitch), f(line.roll)]
                case .uncalibratedMagnetometer: row += [f(line.x), f(line.y), f(line.z), f(line.biasX), f(line.biasY), f(line.biasZ)]
                default: row += [f(line.x), f(line.y), f(line.z), line.accuracy.map { String($0) } ?? ""]
                }
                writer.append(CSV.row(row + [line.missingBefore.map { String($0) } ?? ""]), to: index)
            }
        } else if line.type == "gesture" {
            gestures += 1
            if let index = gestureFile, let t = line.deviceTime {
                writer.append(CSV.row([epoch, elapsed(t), String(t), line.gesture ?? ""]), to: index)
            }
        }
    }

    /// Writes what is held (a recording with no sample: the metadata without its time zero), then finishes the
    /// files. Returns the first write failure, if any. `started` false: a recording that never started (the device
    /// could not be opened or configured) writes nothing more and its files keep their temporary names, for
    /// `writer.remove()`.
    public mutating func finish(started: Bool = true) async -> OutputFileError? {
        if !headerWritten, started { writeHeader() }
        return await writer.finish()
    }

    /// One JSON line as `stream --format json` prints it (sorted keys).
    public static func json(_ line: WearableLine) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try? String(decoding: encoder.encode(line), as: UTF8.self)
    }

    /// `ms` since 1970 as `2026-11-27T18:30:00.123Z`.
    public static func iso8601(_ ms: Int64) -> String {
        var seconds = time_t(ms / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ms % 1000))
    }
}

// MARK: A recording's name

extension WearableRecorder {
    /// The base of a recording's files for `record PATH` (a trailing `.jsonl` or `.csv` dropped): nil, with the
    /// reason, when PATH does not end in a plain file name (empty, a directory's trailing `/`, `.` or `..`: `record .`
    /// would write a hidden `..jsonl`).
    public static func recordingBase(_ path: String) -> (base: String?, problem: String?) {
        var base = path
        for suffix in [".jsonl", ".csv"] where base.hasSuffix(suffix) {
            base = String(base.dropLast(suffix.count))
            break
        }
        let name = base.lastIndex(of: "/").map { String(base[base.index(after: $0)...]) } ?? base
        guard !name.isEmpty, name != ".", name != ".." else {
            return (nil, "record needs a file name for the recording (PATH writes PATH.jsonl and PATH.csv), got '\(path)'")
        }
        return (base, nil)
    }

    /// Checks that the recording's base names a file stem in a directory for files: refused when the base itself is a
    /// directory, device, FIFO or socket (`record /tmp`, `record /dev/full`), or when its directory is one of the
    /// system's directories of devices and kernel objects (/dev, /proc, /sys), where root could create files. Each
    /// file is then checked by `SafeOutput.check` (`RecordingWriter.open`).
    public static func checkBase(_ base: String) async throws(OutputFileError) {
        try await Blocking.perform("record check", unavailable: { OutputFileError(.writeFailed, $0.message) }) { () throws(OutputFileError) in
            var info = stat()
            if stat(base, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
                let directory = info.st_mode & S_IFMT == S_IFDIR
                throw OutputFileError(.notRegularFile, "cannot record to \(base): it is \(SafeOutput.kind(info.st_mode)), not a file name (PATH "
                    + "writes PATH.jsonl and PATH.csv\(directory ? "; for files in it, give \(base.hasSuffix("/") ? base : base + "/")NAME" : ""))")
            }
            let directory = SafeOutput.directoryOf(base)
            guard let resolved = realpath(directory, nil) else { return }  // a missing directory: refused by `SafeOutput.check`
            defer { free(resolved) }
            let real = String(cString: resolved)
            for system in ["/dev", "/proc", "/sys"] where real == system || real.hasPrefix(system + "/") {
                throw OutputFileError(.notRegularFile, "cannot record to \(base): "
                    + (real == system ? "\(system)" : "\(directory) is in \(system), which") + " holds devices or kernel objects, not files")
            }
        }
    }
}
