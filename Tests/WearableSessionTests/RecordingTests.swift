import Foundation
import Synchronization
import TestSupport
import Testing
import Wearable
import WearableRecording
import WearableSession
import WearableSimulator

/// Recordings (docs/wearable.md §10): the metadata line first with the wall-clock time of device time zero, epochMs
/// on every sample, per-sensor CSVs with unit-bearing headers, read back with and without the metadata.
@Suite struct RecordingTests {
    static func directory() throws -> String {
        try TemporaryDirectory.make("recording-tests")
    }

    static func metadata() -> RecordingMetadata {
        var sensors = try! SensorConfiguration(disabled: [.accelerometer, .gyroscope, .rotation, .gameRotation])
        sensors.enable(sensor: .accelerometer, at: ._20ms)
        sensors.enable(sensor: .gameRotation, at: ._20ms)
        var gestures = try! GestureConfiguration(GestureType.allCases.map { .init(gesture: $0, enabled: false) })
        gestures.set(gesture: .headNod, enabled: true)
        return RecordingMetadata(tool: "tuneup test", device: "memory:wearable", information: WearableProfile.standardDevice,
                                 sensorInformation: WearableProfile.standardSensors, gestureInformation: WearableProfile.standardGestures,
                                 sensors: sensors, gestures: gestures)
    }

    static func sample(_ sensor: SensorType, at t: Int64, _ value: SensorValue, missing: Int = 0) throws -> WearableLine {
        let range = WearableProfile.standardSensors[sensor]!.range
        let raw = try SensorSample(sensor: sensor, value: value, in: range)
        return WearableLine(SensorReading(sensor: sensor, timestamp: UInt16(t), deviceTime: t, hostTime: .milliseconds(t + 5), sample: raw,
                                          value: raw.scaled(by: range), missingBefore: missing))
    }

    static func read(_ path: String) async throws -> String {
        try await offThePool { try String(contentsOfFile: path, encoding: .utf8) }
    }

    @Test func theMetadataComesFirstAndEverySampleHasItsEpoch() async throws {
        let dir = try Self.directory()
        let base = dir + "/rec"
        var recorder = try await WearableRecorder.open(base: base, split: [.accelerometer, .gameRotation], splitGestures: true,
                                                       wallClock: { 1_800_000_000_500 })
        var header = WearableLine(type: "metadata")
        header.metadata = Self.metadata()
        recorder.take(header)
        recorder.take(WearableLine(type: "event", event: "opened"))
        let h = 0.5.squareRoot()
        recorder.take(try Self.sample(.accelerometer, at: 100, .vector(Vector(x: 0, y: 0, z: 1), accuracy: .high)))
        recorder.take(try Self.sample(.gameRotation, at: 100, .quaternion(Quaternion(x: 0, y: 0, z: h, w: h), estimatedAccuracy: nil)))
        recorder.take(try Self.sample(.accelerometer, at: 160, .vector(Vector(x: 0.5, y: 0, z: 1), accuracy: .high), missing: 2))
        var nod = WearableLine(type: "gesture")
        (nod.gesture, nod.deviceTime, nod.timestamp) = ("headNod", 170, 170)
        recorder.take(nod)
        recorder.take(WearableLine(type: "summary"))
        #expect(await recorder.finish() == nil)
        #expect(recorder.samples == 3 && recorder.gestures == 1)

        let text = try await Self.read(base + ".jsonl")
        #expect(text.hasPrefix(#"{"metadata":{"#), "the metadata is the first line")
        let contents = try WearableRecordingContents(jsonLines: text, name: "rec.jsonl")
        let m = try #require(contents.metadata)
        // Time zero: the first sample arrived at 1_800_000_000_500 ms with deviceTime 100.
        #expect(m.epochMsAtDeviceTimeZero == 1_800_000_000_400 && m.startedUTC == "2027-01-15T08:00:00.500Z")
        #expect(m.tool == "tuneup test" && m.device == "memory:wearable" && m.sensors.map(\.sensor) == ["accelerometer", "gameRotation"])
        #expect(m.sensors.map(\.periodMs) == [20, 20] && m.gestures == ["headNod"] && m.deviceInformation.productID == 0x4020)
        #expect(m.decodedSensorInformation == WearableProfile.standardSensors && m.decodedDeviceInformation?.availableSensors.count == 4)
        #expect(contents.lines.map(\.type) == ["event", "sample", "sample", "sample", "gesture", "summary"], "the held event follows the metadata")
        #expect(contents.lines.compactMap(\.epochMs) == [1_800_000_000_500, 1_800_000_000_500, 1_800_000_000_560, 1_800_000_000_570])

        let csv = try await Self.read(base + ".csv")
        #expect(csv.hasPrefix("kind,") && csv.components(separatedBy: "\r\n")[0].hasSuffix(",yaw_deg,pitch_deg,roll_deg,epoch_ms,gap_s"))
        #expect(csv.contains(",1800000000560,\r\n"))  // the sample row: epoch_ms, then gap_s empty
        let accel = try await Self.read(base + ".accelerometer.csv").components(separatedBy: "\r\n")
        #expect(accel[0] == "epoch (ms),elapsed (s),device time (ms),x (g),y (g),z (g),accuracy,missing before")
        #expect(accel[1] == "1800000000500,0.0,100,-0.000244144,-0.000244144,0.999771115,3,0")
        #expect(accel[2] == "1800000000560,0.06,160,0.499763485,-0.000244144,0.999771115,3,2" && accel.count == 4, "\(accel)")
        let game = try await Self.read(base + ".gameRotation.csv").components(separatedBy: "\r\n")
        #expect(game[0] == "epoch (ms),elapsed (s),device time (ms),x,y,z,w,yaw (deg),pitch (deg),roll (deg),missing before")
        #expect(game[1].hasPrefix("1800000000500,0.0,100,0.0,0.0,0.707092285,0.707092285,90.0,0.0,0.0,"))
        let gestures = try await Self.read(base + ".gestures.csv")
        #expect(gestures == "epoch (ms),elapsed (s),device time (ms),gesture\r\n1800000000570,0.07,170,headNod\r\n")
        #expect(WearableRecorder.splitHeader(.gyroscope)[3] == "x (deg/s)")
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Without a sample the metadata is still first (no time zero); a recording from before the metadata reads.
    @Test func noSampleAndOlderRecordings() async throws {
        let dir = try Self.directory()
        var recorder = try await WearableRecorder.open(base: dir + "/empty", split: nil, splitGestures: false)
        var header = WearableLine(type: "metadata")
        header.metadata = Self.metadata()
        recorder.take(header)
        recorder.take(WearableLine(type: "event", event: "opened"))
        #expect(await recorder.finish() == nil)
        let contents = try WearableRecordingContents(jsonLines: try await Self.read(dir + "/empty.jsonl"), name: "empty.jsonl")
        #expect(contents.metadata != nil && contents.metadata?.epochMsAtDeviceTimeZero == nil && contents.lines.count == 1)

        let old = #"{"type":"event","event":"opened"}"# + "\n" + #"{"type":"sample","sensor":"accelerometer","deviceTime":20,"x":0,"y":0,"z":1}"#
        let read = try WearableRecordingContents(jsonLines: old, name: "old.jsonl")
        #expect(read.metadata == nil && read.lines.count == 2)
        #expect(throws: WearableRecordingContents.NotARecording.self) { try WearableRecordingContents(jsonLines: "hello", name: "x") }
        #expect(throws: WearableRecordingContents.NotARecording.self) {
            try WearableRecordingContents(jsonLines: #"{"type":"sample","sensor":"accel"#, name: "cut")
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Issue 30 §23: after a device restart (its clock from 0 again) `epochMs` was 7 s before the recording's start.
    /// The first sample after a reconnect re-anchors time zero when the device's clock disagrees with the wall clock
    /// by more than a second; one that went on (a dropped link) keeps it. The split files' elapsed follows.
    @Test func aReconnectToARestartedDeviceReanchorsTheEpoch() async throws {
        let dir = try Self.directory()
        let wall = Mutex<Int64>(1_800_000_000_500)
        var recorder = try await WearableRecorder.open(base: dir + "/restart", split: [.accelerometer], splitGestures: false,
                                                       wallClock: { wall.withLock { $0 } })
        func at(_ now: Int64, _ t: Int64) throws {
            wall.withLock { $0 = 1_800_000_000_000 + now }
            recorder.take(try Self.sample(.accelerometer, at: t, .vector(Vector(x: 0, y: 0, z: 1), accuracy: .high)))
        }
        var reconnected = WearableLine(type: "event", event: "reconnected")
        reconnected.gapSeconds = 0.2
        try at(500, 100)
        try at(7_500, 7_100)
        recorder.take(reconnected)  // a dropped link: the device's clock went on
        try at(8_010, 7_600)
        recorder.take(reconnected)  // a restarted device: from 20 ms again
        try at(9_000, 20)
        try at(9_040, 60)
        #expect(await recorder.finish() == nil)
        let lines = try WearableRecordingContents(jsonLines: try await Self.read(dir + "/restart.jsonl"), name: "restart.jsonl").lines
        #expect(lines.compactMap(\.epochMs) == [1_800_000_000_500, 1_800_000_007_500, 1_800_000_008_000, 1_800_000_009_000, 1_800_000_009_040])
        let elapsed = try await Self.read(dir + "/restart.accelerometer.csv").components(separatedBy: "\r\n").dropFirst()
            .filter { !$0.isEmpty }.map { $0.split(separator: ",")[1] }
        #expect(elapsed == ["0.0", "7.0", "7.5", "8.5", "8.54"])
        try? FileManager.default.removeItem(atPath: dir)
    }
}
