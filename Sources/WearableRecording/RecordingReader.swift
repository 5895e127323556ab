import Foundation
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
        let decoder = JSONDecoder()
        var metadata: RecordingMetadata?
        var any = false
        var number = 0
        for raw in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var bytes = raw[...]
            while let first = bytes.first, first == 0x20 || first == 0x09 || first == 0x0D { bytes = bytes.dropFirst() }
            while let last = bytes.last, last == 0x20 || last == 0x09 || last == 0x0D { bytes = bytes.dropLast() }
            guard !bytes.isEmpty else { continue }
            let parsed = WearableLine(scanningFlat: bytes) ?? (try? decoder.decode(WearableLine.self, from: Data(bytes)))
            guard let line = parsed, ["metadata", "event", "sample", "gesture", "summary"].contains(line.type) else {
                throw NotARecording(message: "\(name):\(number): not a line of a wearable recording")
            }
            if line.type == "metadata" {
                guard !any, metadata == nil, let m = line.metadata, m.format == RecordingMetadata.formatName else {
                    throw NotARecording(message: "\(name):\(number): a metadata line that is not a recording's first")
                }
                metadata = m
                continue
            }
            any = true
            try body(line)
        }
        return metadata
    }
}

extension WearableLine {
    /// A flat sample line (`{"accuracy":3,"deviceTime":20,...,"type":"sample","x":...}`) read without a JSON
    /// decoder: keys of `WearableLine` with numbers or strings without escapes. Nil for anything else (another type,
    /// a nested value, an escape, a key it does not know, a number of the wrong kind): the decoder judges it then.
    init?(scanningFlat bytes: Substring.UTF8View.SubSequence) {
        var line = WearableLine(type: "")
        var i = bytes.startIndex
        let end = bytes.endIndex
        func skipSpace() { while i < end, bytes[i] == 0x20 || bytes[i] == 0x09 { i = bytes.index(after: i) } }
        func string() -> Substring? {
            guard i < end, bytes[i] == UInt8(ascii: "\"") else { return nil }
            i = bytes.index(after: i)
            let start = i
            while i < end, bytes[i] != UInt8(ascii: "\"") {
                if bytes[i] == UInt8(ascii: "\\") || bytes[i] < 0x20 { return nil }
                i = bytes.index(after: i)
            }
            guard i < end else { return nil }
            let s = Substring(bytes[start..<i])
            i = bytes.index(after: i)
            return s
        }
        func token() -> Substring {
            let start = i
            while i < end, bytes[i] != UInt8(ascii: ","), bytes[i] != UInt8(ascii: "}"), bytes[i] != 0x20 { i = bytes.index(after: i) }
            return Substring(bytes[start..<i])
        }
        skipSpace()
        guard i < end, bytes[i] == UInt8(ascii: "{") else { return nil }
        i = bytes.index(after: i)
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < end, bytes[i] == UInt8(ascii: ":") else { return nil }
            i = bytes.index(after: i)
            skipSpace()
            if i < end, bytes[i] == UInt8(ascii: "\"") {
                guard let value = string() else { return nil }
                switch key {
                case "type": line.type = String(value)
                case "sensor": line.sensor = String(value)
                default: return nil
                }
            } else {
                let t = token()
                // JSON numbers only (Double would also take "nan", "inf" or "0x1p3").
                guard let f = t.utf8.first, f == UInt8(ascii: "-") || (f >= 0x30 && f <= 0x39),
                      t.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2B || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }) else { return nil }
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
            if bytes[i] == UInt8(ascii: ",") { i = bytes.index(after: i); continue }
            guard bytes[i] == UInt8(ascii: "}") else { return nil }
            i = bytes.index(after: i)
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
