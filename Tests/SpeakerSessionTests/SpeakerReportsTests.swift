import Foundation
import Speaker
import SpeakerSession
import Testing

/// What the speaker commands print, made by the library: a followed playback's lines and end, the events' lines.
struct SpeakerReportsTests {
    static func stream(_ events: [PlayerEvent]) -> AsyncStream<PlayerEvent> {
        AsyncStream { continuation in
            for e in events { continuation.yield(e) }
            continuation.finish()
        }
    }

    @Test func aFollowedPlaybackReportsEachEventAndEndsAtItsStop() async throws {
        let c = SpeakerController(sessions: [])
        var lines: [PlaybackReportLine] = []
        let failure = try await c.followPlayback(Self.stream([
            .stateChanged(.initialized), .stateChanged(.playing), .speakerJoined(deviceId: 7), .time(seconds: 61),
            .speakerLost(deviceId: 7, reason: "gone"), .ended, .stateChanged(.stopped), .time(seconds: 62),
        ]), sourceErrorLines: true) { lines.append($0) }
        #expect(failure == nil)
        #expect(lines.map(\.text) == ["playing", "speaker-joined 7", "1:01", "speaker-lost 7: gone", "ended", "stopped"],
                "the speakers' own initialized is left out; nothing after the stop")
    }

    @Test func aFailingSourceIsTheEndInsteadOfItsEndAndSaysWhereItStopped() async throws {
        let c = SpeakerController(sessions: [])
        let events: [PlayerEvent] = [
            .stateChanged(.playing), .sourceFailed(seconds: 12.37, category: .connection, message: "the server went silent"),
            .ended, .stateChanged(.stopped),
        ]
        var plain: [String] = []
        let failure = try await c.followPlayback(Self.stream(events), sourceErrorLines: false) { plain.append($0.text) }
        #expect(plain == ["playing", "stopped"])
        #expect(failure?.line == "the source failed at 12.3 s: the server went silent" && failure?.category == .connection)
        var json: [PlaybackReportLine] = []
        _ = try await c.followPlayback(Self.stream(events), sourceErrorLines: true) { json.append($0) }
        #expect(json.map(\.event) == ["state", "source-error", "state"])
        #expect(json[1].at == 12.3 && json[1].message == "the server went silent")
    }

    @Test func eventLinesCarryTheirKindAndReadForPeople() {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let volume = SpeakerEventLine(.speaker(deviceId: 42, .volumeChanged(deviceId: 42, volume: 30, muted: true)), at: date)
        #expect(volume.event == "volume-changed" && volume.volume == 30 && volume.muted == true && volume.deviceId == 42)
        #expect(volume.text.hasSuffix("  42  volume 30 (muted)"))
        let average = SpeakerEventLine(.averageVolume(22.5), at: date)
        #expect(average.text.hasSuffix("  average volume 22.5") && average.deviceId == nil)
        let removed = SpeakerEventLine(.removed(deviceId: 9, address: "10.0.0.9:4000", reason: "it no longer answers discovery"), at: date)
        #expect(removed.text.hasSuffix("  9  removed (10.0.0.9:4000): it no longer answers discovery"))
        #expect(PlayerState.allCases.map(\.name) == ["initialized", "playing", "preparing", "paused", "stopped"])
    }
}
