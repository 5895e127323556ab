import Foundation
import TestSupport
import Testing
import Wearable
import WearableRecording
import WearableSession
import WearableSimulator

/// The streaming workflow of `wearable stream` and `record` against a simulated wearable served in process, its
/// device clock a `ManualClock` advanced one 40 ms transmission period at a time while the workflow runs (`pump`);
/// each test stops on a count of samples, never after a fixed time.
@Suite struct StreamingTests {
    /// A simulated wearable in process on a manual clock, a session (not yet open) with it, and the task that pumps
    /// its clock until cancelled.
    static func device() throws -> (InProcessWearable, WearableDeviceSession, pump: Task<Void, Never>) {
        let clock = ManualClock()
        let wearable = try InProcessWearable(device: SimulatedWearable(clock: clock))
        let pump = Task {
            while !Task.isCancelled {
                // One transmission period once the device's streamer waits for it.
                while clock.pendingSleeps == 0 {
                    if Task.isCancelled { return }
                    await Task.yield()
                }
                clock.advance(by: .milliseconds(40))
            }
        }
        return (wearable, WearableDeviceSession(peer: "memory:wearable") { try wearable.connect() }, pump)
    }

    /// The lines in order: metadata, opened, configured, samples, closed, summary; the summary counts exactly the
    /// samples handed over; stopping at the caller's word.
    @Test func linesComeInOrderAndTheSummaryCountsWhatWasEmitted() async throws {
        try await withTimeLimit {
            let (wearable, session, pump) = try Self.device()
            defer { pump.cancel() }
            let setup = WearableStreamSetup(sensors: [.accelerometer], period: ._40ms, gestures: [.headNod])
            var lines: [WearableLine] = []
            var finished: [WearableLine] = []
            try await WearableStreaming.stream(session, setup, metadataTool: "test 1", emit: { lines.append($0) },
                                               shouldStop: { lines.filter { $0.type == "sample" }.count >= 3 },
                                               finish: { finished.append($0) })
            let kinds = lines.map { $0.event ?? $0.type }
            #expect(Array(kinds.prefix(3)) == ["metadata", "opened", "configured"], "\(kinds)")
            #expect(Array(kinds.suffix(2)) == ["closed", "summary"], "\(kinds)")
            // Samples, and a head nod if the simulated wearable's gesture schedule came first.
            #expect(Set(kinds.dropFirst(3).dropLast(2)).isSubset(of: ["sample", "gesture"]), "\(kinds)")
            #expect(lines[0].metadata?.tool == "test 1" && lines[0].metadata?.sensors.map(\.sensor) == ["accelerometer"])
            #expect(lines[2].periods == ["accelerometer": 40] && lines[2].gestures == ["headNod"])
            let samples = lines.filter { $0.type == "sample" }
            #expect(samples.count >= 3 && samples.allSatisfy { $0.sensor == "accelerometer" })
            #expect(lines[lines.count - 2].error == nil)
            #expect(finished.count == 1 && finished.first?.counts?["accelerometer"]?.samples == samples.count)
            await wearable.server.shutdown()
        }
    }

    /// A configuration the library refuses: its error, no `opened` line, no summary.
    @Test func aRefusedConfigurationEndsWithItsErrorAlone() async throws {
        try await withTimeLimit {
            let (wearable, session, pump) = try Self.device()
            defer { pump.cancel() }
            // The standard device offers rotation at 40 and 20 ms only.
            let setup = WearableStreamSetup(sensors: [.rotation], period: ._320ms, gestures: [])
            var lines: [WearableLine] = []
            var finished = false
            var refusal: (any Error)?
            do {
                try await WearableStreaming.stream(session, setup, emit: { lines.append($0) }, finish: { _ in finished = true })
            } catch {
                refusal = error
            }
            #expect((refusal as? WearableSessionError)?.code == .rejectedLocally, "\(String(describing: refusal))")
            #expect(lines.isEmpty && !finished, "\(lines.map { $0.event ?? $0.type })")
            await wearable.server.shutdown()
        }
    }

    /// `record`: the files are written as the lines come and `finish` gets what was written; a device that cannot be
    /// opened leaves no files behind.
    @Test func recordWritesTheFilesAndADeviceNotThereLeavesNone() async throws {
        try await withTimeLimit {
            let dir = try TemporaryDirectory.make("streaming-tests")
            let (wearable, session, pump) = try Self.device()
            defer { pump.cancel() }
            let setup = WearableStreamSetup(sensors: [.gyroscope], period: ._40ms, gestures: [])
            var samples = 0
            var written: [WearableStreaming.Written] = []
            // Stopped as a signal would, once two samples came.
            let (stop, stopper) = AsyncStream.makeStream(of: Int32.self)
            try await WearableStreaming.record(session, setup, base: dir + "/r", split: [.gyroscope], splitGestures: false, tool: "test",
                                               stopSignals: stop, emit: { line in
                if line.type == "sample" { samples += 1 }
                if samples == 2 { stopper.yield(SIGINT) }
            }, finish: { written.append($0) })
            let w = try #require(written.first)
            #expect(w.jsonl == dir + "/r.jsonl" && w.csv == dir + "/r.csv" && w.split == [dir + "/r.gyroscope.csv"])
            #expect(w.samples == samples && w.samples >= 1)
            let rows = try await offThePool { try String(contentsOfFile: dir + "/r.gyroscope.csv", encoding: .utf8) }
                .components(separatedBy: "\r\n").filter { !$0.isEmpty }
            #expect(rows.count == samples + 1, "a header and a row per sample")
            await wearable.server.shutdown()

            let gone = WearableDeviceSession(peer: "memory:gone") { throw WearableSessionError(.connectionFailed, "no such device", category: .connection) }
            var failed: [WearableLine] = []
            var notOpened: (any Error)?
            do {
                try await WearableStreaming.record(gone, setup, base: dir + "/none", split: nil, splitGestures: false, tool: "test",
                                                   emit: { failed.append($0) }, finish: { _ in })
            } catch {
                notOpened = error
            }
            #expect((notOpened as? WearableSessionError)?.code == .connectionFailed, "\(String(describing: notOpened))")
            #expect(failed.map { $0.event ?? $0.type } == ["failedToOpen"] && failed.first?.device == "memory:gone")
            let left = try await offThePool { try FileManager.default.contentsOfDirectory(atPath: dir) }
            #expect(!left.contains { $0.hasPrefix("none") }, "\(left)")
            try await offThePool { try FileManager.default.removeItem(atPath: dir) }
        }
    }
}
