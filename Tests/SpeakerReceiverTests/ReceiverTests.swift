import Foundation
import Speaker
import SpeakerPlayback
import SpeakerReceiver
import SpeakerSession
import Testing
import TestSupport

/// `SpeakerReceiver` in this process, its ALSA device the system configuration's `file` plugin (over `null`): the
/// output thread runs only while a stream plays.
@Suite("SpeakerReceiver", .serialized)
struct ReceiverTests {
    @Test func theOutputSleepsWithoutADeadlineExceptWhileAStreamPlays() async throws {
        let dir = try TemporaryDirectory.make("tuneup-receiver")
        var configuration = SpeakerReceiver.Configuration()
        configuration.device = "file:'\(dir)/out.raw',raw"
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.audioPort = 0
        configuration.discoveryPort = nil
        configuration.name = "Test receiver"
        let receiver = try await SpeakerReceiver.start(configuration)
        // Before any stream: asleep on its condition, not one tick.
        try await waitUntil("the output asleep") { receiver.outputStatistics.idle }
        #expect(receiver.outputStatistics.ticks == 0 && receiver.outputStatistics.streams == 0)

        let port = UInt16(receiver.endpoint.split(separator: ":").last!)!
        let controller = try await SpeakerController.connect([("127.0.0.1", port)])
        _ = try await controller.setVolumeAll(50)
        try await controller.addAllToSession()
        let events = try await controller.playerEvents()
        let format = try AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        try await controller.play(GeneratedSignal(format: format, seconds: 1, seed: 3), title: "test")
        for await e in events where e == .ended || e == .stateChanged(.stopped) { break }

        // After it: the device drained and closed, asleep again without a deadline; the ticks stop.
        try await waitUntil("the output asleep after the stream") { receiver.outputStatistics.idle }
        let s = receiver.outputStatistics
        #expect(s.streams == 1 && s.ticks > 0, "\(s)")
        #expect(s.timed == false, "the file plugin over null keeps no time")
        #expect(s.aligner == CardAligner.Statistics())
        #expect(s.framesWritten >= 48_000, "\(s)")
        // Every source frame played, or left out by a counted drift correction of the renderer.
        let t = receiver.speaker.renderTotals
        #expect(t.renderedFrames + t.skippedSamples + t.lateFrames == 48_000 && t.lostFrames == 0, "\(t)")
        // Its clock was measured with datagrams (version 4) answered by its clock socket, t2 from the kernel, even
        // before the stream (while the sound-card thread slept).
        let syncs = receiver.speaker.clockSyncCounts
        #expect(syncs.datagrams > 0 && syncs.control == 0 && syncs.kernelTimestamped == syncs.datagrams, "\(syncs)")
        #expect(receiver.speaker.settings.name == "Test receiver")
        #expect(receiver.speaker.deviceInfo.modelName.value == "Tuneup Receiver")
        await controller.close()
        await receiver.shutdown()
        #expect(receiver.outputStatistics.ticks == s.ticks)
    }

    @Test func aDeviceThatDoesNotExistIsRefusedAtStart() async throws {
        var configuration = SpeakerReceiver.Configuration()
        configuration.device = "no-such-device"
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.audioPort = 0
        configuration.discoveryPort = nil
        let error = await #expect(throws: ReceiverError.self) { _ = try await SpeakerReceiver.start(configuration) }
        #expect(error?.code == .deviceUnavailable)
        #expect(error?.message == "ALSA device 'no-such-device' cannot be opened: No such file or directory")
    }
}
