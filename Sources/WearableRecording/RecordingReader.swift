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
        let decoder = JSONDecoder()
        var lines: [WearableLine] = []
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            guard let line = try? decoder.decode(WearableLine.self, from: Data(trimmed.utf8)),
                  ["metadata", "event", "sample", "gesture", "summary"].contains(line.type) else {
                throw NotARecording(message: "\(name):\(number): not a line of a wearable recording")
            }
            if line.type == "metadata" {
                guard lines.isEmpty, metadata == nil, let m = line.metadata, m.format == RecordingMetadata.formatName else {
                    throw NotARecording(message: "\(name):\(number): a metadata line that is not a recording's first")
                }
                metadata = m
                continue
            }
            lines.append(line)
        }
        self.lines = lines
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
