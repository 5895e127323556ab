import Foundation
import Testing
import Wearable
import WearableRecording
import WearableSession
import WearableSimulator

/// A recording played back as a device (docs/wearable.md §8.1), on the injected clock: recorded from the simulated
/// head with a dropped notification, written as JSON Lines, read back, replayed, recorded again: the same values at
/// the same device times, the same gaps, and each sample sent within one transmission period of its recorded time.
@Suite(.timeLimit(.minutes(1))) struct ReplayTests {
    static let sensors: [SensorType] = [.accelerometer, .gameRotation]

    /// Streams `ticks` transmission periods from `f` and returns the readings, each with the device-clock tick (ms)
    /// at which it arrived, and the gestures.
    static func record(_ f: Fixture, ticks: Int) async throws -> ([(SensorReading, Int64)], [GestureReading]) {
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        let gestures = await f.session.gestureReadings()
        try await f.session.configureSensors { c in for s in sensors { c.enable(sensor: s, at: ._20ms) } }
        try await f.session.configureGestures { c in for g in GestureType.allCases { c.set(gesture: g, enabled: true) } }
        var iterator = readings.makeAsyncIterator()
        var out: [(SensorReading, Int64)] = []
        for tick in 1...ticks {
            while f.clock.pendingSleeps == 0 { await Task.yield() }
            f.clock.advance(by: .milliseconds(40))
            while f.clock.pendingSleeps == 0 { await Task.yield() }
            // Everything the device sent in this transmission has been counted by its statistics; take as many.
            let sent = f.device.statistics.recordsSent.values.reduce(0, +)
            while out.count < sent, let r = await iterator.next() { out.append((r, Int64(tick) * 40)) }
        }
        await f.session.close()
        var made: [GestureReading] = []
        for await g in gestures { made.append(g) }
        return (out, made)
    }

    @Test func aRecordingReplaysWithTheSameValuesGapsAndTiming() async throws {
        let motion = HeadMotion(script: [.init(.still, duration: 0.3), .init(.turn(degrees: 40), duration: 0.8),
                                         .init(.nod(degrees: 20, count: 1), duration: 0.8), .init(.still, duration: 1)])
        let original = try Fixture(profile: roomyProfile(motion: motion, bootTimestamp: 65000))
        original.device.dropSensorNotifications([7, 20])
        let (recorded, recordedGestures) = try await Self.record(original, ticks: 60)
        await original.wearable.server.shutdown()
        #expect(recorded.contains { $0.0.missingBefore > 0 }, "the dropped notifications are gaps")
        #expect(recordedGestures.map(\.gesture) == [.headNod])

        // Through the recording format: JSON Lines, read back.
        let lines = recorded.map { WearableLine($0.0) } + recordedGestures.map(WearableLine.init)
        let text = lines.compactMap { WearableRecorder.json($0) }.joined(separator: "\n")
        let contents = try WearableRecordingContents(jsonLines: text, name: "rec.jsonl")
        let parts = try contents.recordedSamples(name: "rec.jsonl")
        let replay = try #require(WearableReplay(samples: parts.samples.map { .init(sensor: $0.sensor, deviceTime: $0.deviceTime, value: $0.value) },
                                                 gestures: parts.gestures.map { .init(gesture: $0.gesture, deviceTime: $0.deviceTime) }))
        var profile = roomyProfile(motion: HeadMotion(seed: 99))
        profile.replay = replay
        let player = try Fixture(profile: profile)
        let (replayed, replayedGestures) = try await Self.record(player, ticks: 62)
        await player.wearable.server.shutdown()

        func key(_ r: SensorReading) -> String { "\(r.sensor) \(r.deviceTime) \(r.timestamp) \(r.sample) gap \(r.missingBefore)" }
        #expect(replayed.count == recorded.count)
        #expect(replayed.map { key($0.0) } == recorded.map { key($0.0) }, "same samples, values, times and gaps")
        #expect(replayed.map(\.0.value) == recorded.map(\.0.value))
        #expect(replayedGestures.map(\.gesture) == [.headNod] && replayedGestures.map(\.deviceTime) == recordedGestures.map(\.deviceTime))
        // Timing on the device clock: each sample arrives as long after the first as it did when recorded, within
        // one transmission period (40 ms).
        let firstRecorded = recorded[0].1, firstReplayed = replayed[0].1
        for (a, b) in zip(recorded, replayed) {
            #expect(abs((a.1 - firstRecorded) - (b.1 - firstReplayed)) <= 40, "\(a.0.sensor) at \(a.0.deviceTime)")
        }
    }

    @Test func nothingToReplayIsRefused() throws {
        #expect(WearableReplay(samples: [], gestures: []) == nil)
        let contents = try WearableRecordingContents(jsonLines: #"{"type":"event","event":"opened"}"#, name: "empty.jsonl")
        #expect(throws: WearableRecordingContents.NotARecording.self) { try contents.recordedSamples(name: "empty.jsonl") }
        let noValues = try WearableRecordingContents(jsonLines: #"{"type":"sample","sensor":"accelerometer","deviceTime":20}"#, name: "x")
        #expect(throws: WearableRecordingContents.NotARecording.self) { try noValues.recordedSamples(name: "x") }
    }

    /// Issue 30 §24: a replay sent its 20 ms samples to a link that configured 40 ms, and accepted a sensor the
    /// recording lacks (`counts:{}`). A recording at 40 ms: the device offers that sensor alone, at 40 ms or longer;
    /// at 80 ms every other sample goes out; another sensor or a shorter period is refused, by the library from the
    /// device's information and by the device itself without the checks.
    @Test func aReplayResamplesOrRefusesAsADeviceWould() async throws {
        let samples = (0..<50).map { i in
            WearableReplay.Sample(sensor: .accelerometer, deviceTime: 1000 + Int64(i) * 40,
                                  value: .vector(Vector(x: Double(i) / 64, y: 0, z: 1), accuracy: .high))
        }
        let replay = try #require(WearableReplay(samples: samples, gestures: []))
        #expect(replay.periods == [.accelerometer: ._40ms])
        let profile = roomyProfile(motion: HeadMotion(seed: 1)).replaying(replay)
        #expect(profile.deviceInformation.availableSensors == [.accelerometer])
        #expect(profile.sensorInformation[.accelerometer]?.availablePeriods == [._40ms, ._80ms, ._160ms, ._320ms])

        let f = try Fixture(profile: profile)
        try await f.session.open()
        for checked in [true, false] {
            await #expect(throws: WearableSessionError.self) {
                try await f.session.configureSensors(checked: checked) { c in c.enable(sensor: .gyroscope, at: ._40ms) }
            }
            await #expect(throws: WearableSessionError.self) {
                try await f.session.configureSensors(checked: checked) { c in c.enable(sensor: .accelerometer, at: ._20ms) }
            }
        }
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { c in c.enable(sensor: .accelerometer, at: ._80ms) }
        var iterator = readings.makeAsyncIterator()
        var times: [Int64] = []
        for _ in 0..<60 {
            await f.pump(ticks: 1)
            // Everything the device sent so far has been counted by its statistics; take as many.
            let sent = f.device.statistics.recordsSent.values.reduce(0, +)
            while times.count < sent, let r = await iterator.next() { times.append(r.deviceTime) }
        }
        await f.session.close()
        #expect(times == (0..<25).map { 1000 + Int64($0) * 80 }, "\(times)")
        await f.wearable.server.shutdown()
    }
}
