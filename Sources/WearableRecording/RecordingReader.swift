import Foundation
import Glibc
import Wearable

/// A recording read back (`PATH.jsonl` of `record`, with or without the metadata line of recordings made before it).
public struct WearableRecordingContents: Sendable {
    /// The first line's metadata, nil for an older recording.
    public var metadata: RecordingMetadata?
    /// Every other line, in order.
    public var lines: [WearableLine]

    /// A line that is not a recording's: `NAME:LINE: not a line of a wearable recording`.
    public struct NotARecording: Error, Sendable {
        public var message: String
        public init(message: String) { self.message = message }
    }

    /// Parses JSON Lines; blank lines are skipped. Throws for the first line that is not a recording's line (a cut
    /// last line too).
    public init(jsonLines text: String, name: String) throws(NotARecording) {
        var lines: [WearableLine] = []
        metadata = try Self.forEachLine(jsonLines: text, name: name) { lines.append($0) }
        self.lines = lines
    }

    /// Reads the lines one at a time, keeping none (a long recording is read in the memory of its text): `body` gets
    /// every line but the metadata, which is returned. The refusals of `init(jsonLines:name:)`. Sample lines as
    /// `record` writes them (flat, numbers and plain strings) are scanned directly; anything else is decoded with
    /// `JSONDecoder`, which also judges every line the scan does not take.
    public static func forEachLine(jsonLines text: String, name: String,
                                   _ body: (WearableLine) throws(NotARecording) -> Void) throws(NotARecording) -> RecordingMetadata? {
        var reader = LineReader(name: name)
        var failure: NotARecording?
        var text = text
        text.withUTF8 { all in
            do throws(NotARecording) { try reader.feed(all, body) } catch { failure = error }
        }
        if let failure { throw failure }
        return try reader.finish(body)
    }

    /// `forEachLine` over text that comes in pieces (a file read a chunk at a time, so a long recording is never held
    /// whole): `feed` each piece as it comes, lines may be cut anywhere between pieces; `finish` takes the last line
    /// and returns the metadata. The same refusals and line numbers as `forEachLine(jsonLines:)`.
    public struct LineReader {
        let name: String
        let decoder = JSONDecoder()
        var metadata: RecordingMetadata?
        var any = false
        var number = 0
        /// The start of a line cut by the end of the previous piece.
        var pending: [UInt8] = []

        public init(name: String) { self.name = name }

        /// Takes every line `bytes` completes; keeps the rest for the next piece.
        public mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (WearableLine) throws(NotARecording) -> Void) throws(NotARecording) {
            var start = 0
            while let newline = bytes[start...].firstIndex(of: 0x0A) {
                if pending.isEmpty {
                    try take(UnsafeBufferPointer(rebasing: bytes[start..<newline]), body)
                } else {
                    pending.append(contentsOf: bytes[start..<newline])
                    let line = pending
                    pending.removeAll(keepingCapacity: true)
                    try line.withUnsafeBufferPointer { (b) throws(NotARecording) in try take(b, body) }
                }
                start = newline + 1
            }
            pending.append(contentsOf: bytes[start...])
        }

        /// Takes the last line (the text after the last newline) and returns the metadata line's metadata.
        public mutating func finish(_ body: (WearableLine) throws(NotARecording) -> Void) throws(NotARecording) -> RecordingMetadata? {
            let line = pending
            pending = []
            try line.withUnsafeBufferPointer { (b) throws(NotARecording) in try take(b, body) }
            return metadata
        }

        mutating func take(_ all: UnsafeBufferPointer<UInt8>, _ body: (WearableLine) throws(NotARecording) -> Void) throws(NotARecording) {
            number += 1
            var (low, high) = (0, all.count)
            while low < high, all[low] == 0x20 || all[low] == 0x09 || all[low] == 0x0D { low += 1 }
            while high > low, all[high - 1] == 0x20 || all[high - 1] == 0x09 || all[high - 1] == 0x0D { high -= 1 }
            guard low < high else { return }
            let bytes = UnsafeBufferPointer(rebasing: all[low..<high])
            let parsed = WearableLine(scanningFlat: bytes) ?? (try? decoder.decode(WearableLine.self, from: Data(buffer: bytes)))
            guard let line = parsed, ["metadata", "event", "sample", "gesture", "summary"].contains(line.type) else {
                throw NotARecording(message: "\(name):\(number): not a line of a wearable recording")
            }
            if line.type == "metadata" {
                guard !any, metadata == nil, let m = line.metadata, m.format == RecordingMetadata.formatName else {
                    throw NotARecording(message: "\(name):\(number): a metadata line that is not a recording's first")
                }
                metadata = m
                return
            }
            any = true
            try body(line)
        }
    }
}

extension WearableLine {
    /// A flat sample line (`{"accuracy":3,"deviceTime":20,...,"type":"sample","x":...}`) read without a JSON
    /// decoder: keys of `WearableLine` with numbers or strings without escapes. Nil for anything else (another type,
    /// a nested value, an escape, a key it does not know, a number of the wrong kind): the decoder judges it then.
    init?(scanningFlat bytes: UnsafeBufferPointer<UInt8>) {
        var line = WearableLine(type: "")
        var i = 0
        let end = bytes.count
        func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        func skipSpace() { while i < end, bytes[i] == 0x20 || bytes[i] == 0x09 { i += 1 } }
        func string() -> String? {
            guard i < end, bytes[i] == 0x22 else { return nil }
            i += 1
            let start = i
            while i < end, bytes[i] != 0x22 {
                if bytes[i] == 0x5C || bytes[i] < 0x20 { return nil }
                i += 1
            }
            guard i < end else { return nil }
            defer { i += 1 }
            return text(start..<i)
        }
        skipSpace()
        guard i < end, bytes[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < end, bytes[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipSpace()
            if i < end, bytes[i] == 0x22 {
                guard let value = string() else { return nil }
                switch key {
                case "type": line.type = value
                case "sensor": line.sensor = value
                default: return nil
                }
            } else {
                // JSON numbers only (Double would also take "nan", "inf" or "0x1p3").
                let start = i
                while i < end, (bytes[i] >= 0x30 && bytes[i] <= 0x39) || bytes[i] == 0x2D || bytes[i] == 0x2B || bytes[i] == 0x2E
                    || bytes[i] == 0x65 || bytes[i] == 0x45 { i += 1 }
                guard i > start, bytes[start] == 0x2D || (bytes[start] >= 0x30 && bytes[start] <= 0x39) else { return nil }
                let t = text(start..<i)
                func int() -> Int? { Int(t) }
                func double() -> Double? { Double(t) }
                switch key {
                case "accuracy": guard let v = int() else { return nil }; line.accuracy = v
                case "timestamp": guard let v = int() else { return nil }; line.timestamp = v
                case "missingBefore": guard let v = int() else { return nil }; line.missingBefore = v
                case "deviceTime": guard let v = Int64(t) else { return nil }; line.deviceTime = v
                case "epochMs": guard let v = Int64(t) else { return nil }; line.epochMs = v
                case "hostTime": guard let v = double() else { return nil }; line.hostTime = v
                case "x": guard let v = double() else { return nil }; line.x = v
                case "y": guard let v = double() else { return nil }; line.y = v
                case "z": guard let v = double() else { return nil }; line.z = v
                case "w": guard let v = double() else { return nil }; line.w = v
                case "estimatedAccuracy": guard let v = double() else { return nil }; line.estimatedAccuracy = v
                case "biasX": guard let v = double() else { return nil }; line.biasX = v
                case "biasY": guard let v = double() else { return nil }; line.biasY = v
                case "biasZ": guard let v = double() else { return nil }; line.biasZ = v
                case "yaw": guard let v = double() else { return nil }; line.yaw = v
                case "pitch": guard let v = double() else { return nil }; line.pitch = v
                case "roll": guard let v = double() else { return nil }; line.roll = v
                default: return nil
                }
            }
            skipSpace()
            guard i < end else { return nil }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            guard bytes[i] == UInt8(ascii: "}") else { return nil }
            i += 1
            skipSpace()
            guard i == end, line.type == "sample" else { return nil }
            self = line
            return
        }
    }
}

extension WearableRecordingContents {
    /// The recording's samples as physical values and its gestures, at their device times (what a replay sends).
    /// Throws for a sample of an unknown sensor or without its values, and when there is nothing to replay.
    public func recordedSamples(name: String) throws(NotARecording)
        -> (samples: [(sensor: SensorType, deviceTime: Int64, value: SensorValue)], gestures: [(gesture: GestureType, deviceTime: Int64)]) {
        var samples: [(sensor: SensorType, deviceTime: Int64, value: SensorValue)] = []
        var gestures: [(gesture: GestureType, deviceTime: Int64)] = []
        for (k, line) in lines.enumerated() {
            func refuse(_ what: String) -> NotARecording { NotARecording(message: "\(name): line \(k + 1 + (metadata == nil ? 0 : 1)): \(what)") }
            if line.type == "gesture" {
                guard let g = line.gesture.flatMap(GestureType.init(name:)), let t = line.deviceTime else { throw refuse("a gesture without its name or deviceTime") }
                gestures.append((g, t))
                continue
            }
            guard line.type == "sample" else { continue }
            guard let s = line.sensor.flatMap(SensorType.init(name:)), let t = line.deviceTime else { throw refuse("a sample without its sensor or deviceTime") }
            guard let x = line.x, let y = line.y, let z = line.z else { throw refuse("a \(s) sample without x, y and z") }
            let value: SensorValue
            switch s {
            case .rotation, .gameRotation:
                guard let w = line.w else { throw refuse("a \(s) sample without w") }
                value = .quaternion(Quaternion(x: x, y: y, z: z, w: w), estimatedAccuracy: s == .rotation ? line.estimatedAccuracy ?? 0 : nil)
            case .uncalibratedMagnetometer:
                guard let bx = line.biasX, let by = line.biasY, let bz = line.biasZ else { throw refuse("a \(s) sample without its bias") }
                value = .uncalibratedVector(Vector(x: x, y: y, z: z), bias: Vector(x: bx, y: by, z: bz))
            default:
                guard let accuracy = VectorAccuracy(rawValue: UInt8(clamping: line.accuracy ?? 3)) else { throw refuse("a \(s) sample with accuracy \(line.accuracy ?? -1)") }
                value = .vector(Vector(x: x, y: y, z: z), accuracy: accuracy)
            }
            samples.append((s, t, value))
        }
        guard !samples.isEmpty || !gestures.isEmpty else { throw NotARecording(message: "\(name) holds no samples or gestures to replay") }
        return (samples, gestures)
    }
}

extension WearableRecordingContents {
    /// Opens the recording at `path` for reading: `.unreadable` with the reason (a directory: "it is a directory";
    /// else the system's, "No such file or directory"). The caller closes the descriptor. Blocking.
    public static func open(_ path: String) throws(RecordingError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw RecordingError(.unreadable, "cannot read the recording \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            _ = close(fd)
            throw RecordingError(.unreadable, "cannot read the recording \(path): it is a directory")
        }
        return fd
    }

    /// The whole text of the recording at `path` (`open`'s refusals; a read error: `.unreadable`). Blocking.
    public static func text(ofFile path: String) throws(RecordingError) -> String {
        let fd = try open(path)
        defer { _ = close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw RecordingError(.unreadable, "cannot read the recording \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
