import Foundation
import Speaker
import SpeakerSession
import SpeakerSimulator
import Testing
import TestSupport

/// `tuneup sim speaker --record DIR` (issue 30): a rejoining speaker's recording is not rewritten.
@Suite("Simulated speaker recordings")
struct SimulatedSpeakerRecordingTests {
    /// A speaker that joins the same stream again (its link was lost, it was off) records the new part to a file of
    /// its own; the first part stays, and the new part's render log says which part it is.
    @Test func aSpeakerJoiningAStreamAgainKeepsWhatItRecordedBefore() async throws {
        try await withTimeLimit {
            let dir = try TemporaryDirectory.make("tuneup-rec-parts")
            let sim = try await SpeakerSimulation.start(count: 1, recordDirectory: dir)
            let parts = sim.endpoints[0].split(separator: ":")
            let (host, port) = (String(parts[0]), UInt16(parts[1])!)
            var session = try await SpeakerSession.connect(host: host, port: port)
            try await session.joinSession()
            try await session.play(streamId: 77, format: .cd, source: .localFile, title: "first")
            await sim.speakers[0].powerOff()
            await session.close()
            sim.speakers[0].powerOn()
            session = try await SpeakerSession.connect(host: host, port: port)
            try await session.joinSession()
            try await session.play(streamId: 77, format: .cd, source: .localFile, title: "again")
            try await session.stop(streamId: 77)
            await session.close()
            await sim.speakers[0].flushRecordings()
            await sim.shutdown()
            let (files, log) = try await offThePool {
                (try FileManager.default.contentsOfDirectory(atPath: dir).sorted(),
                 try String(contentsOfFile: dir + "/speaker-0-stream-77-part-2.render.log", encoding: .utf8))
            }
            #expect(files == ["speaker-0-stream-77-part-2.render.log", "speaker-0-stream-77-part-2.wav",
                              "speaker-0-stream-77.render.log", "speaker-0-stream-77.wav"], "\(files)")
            #expect(log.split(separator: "\n")[1].contains("part 2 of stream 77") && log.contains("speaker-0-stream-77.wav"), "\(log)")
            #expect(try RenderLog(text: log).streamId == 77)
        }
    }
}
