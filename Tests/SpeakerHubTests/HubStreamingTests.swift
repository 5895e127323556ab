import Foundation
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import TestSupport
import Testing

/// The hub with audio: `StreamingPlayer` streams a file of the media folder (AudioInput decodes it) to simulated speakers, which render
/// it; pause, resume and stop act on the stream; web media is fetched and streamed too. Real time: every wait polls a condition.
@Suite("Hub streaming to simulated speakers")
struct HubStreamingTests {
    @Test func hubMediaIsStreamedAndRenderedPausedResumedAndStopped() async throws {
        try await withHub(streaming: true) { hub in
            let s = "SessionID=\(try await hub.session())"
            let pid = MediaInfo.persistentID(of: "a-song.wav")
            #expect(try await hub.get("/v1/set_party_mode?\(s)").status == 200)
            let play = try await hub.get("/v1/play_hub_media?\(s)&PersistentID=\(pid)")
            #expect(play.status == 200, "\(play.body)")

            func rendered() async throws -> [UInt64] {
                var frames: [UInt64] = []
                for id in hub.ids { frames.append(try await hub.controller.session(id: id).status().renderedFrames) }
                return frames
            }
            // Every speaker renders the stream's audio.
            try await waitUntil("both speakers render audio") { try await rendered().allSatisfy { $0 > 0 } }
            try await waitUntil("a second of the song played") {
                try await hub.get("/v1/playback_status?\(s)").string("TimeElapsed").flatMap(Int.init) ?? 0 >= 1
            }
            #expect(try await hub.get("/v1/is_playing?\(s)").body == #"{"IsPlaying":"true"}"#)
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.isPlaying })

            #expect(try await hub.get("/v1/pause_play?\(s)").status == 200)
            #expect(try await hub.get("/v1/playback_status?\(s)").body == #"{"PlaybackState":"PlayerStatePaused","TimeElapsed":"-1"}"#)
            try await waitUntil("the speakers pause") {
                for id in hub.ids {
                    let state = try await hub.controller.session(id: id).status().state
                    if state != .paused { return false }
                }
                return true
            }
            #expect(try await hub.get("/v1/resume_hub_media?\(s)&PersistentID=\(pid)").status == 200)
            let before = try await rendered()
            try await waitUntil("audio goes on after resume") { try await zip(rendered(), before).allSatisfy { $0 > $1 } }
            #expect(try await hub.get("/v1/stop_play?\(s)").status == 200)
            #expect(try await hub.get("/v1/playback_status?\(s)").object()["PlaybackState"] as? String == "PlayerStateStopped")
            try await waitUntil("the speakers stop") { hub.sim.speakers.allSatisfy { !$0.deviceInfo.isPlaying } }

        }
    }

    /// Web media is fetched and decoded by the hub and streamed in sync like its media folder (it once answered
    /// PlayerStatePlaying while the speakers rendered silence): the speakers render the URL's audio; pausing it stops
    /// it (web media cannot be resumed); a URL that cannot be fetched or played is MediaUnreadable with one line.
    @Test func webMediaIsFetchedDecodedAndStreamedToTheSpeakers() async throws {
        let wav = wavFile(seconds: 20, title: "Web Song", artist: "Net", album: "Stream")
        let server = try await TestHTTPServer(["/song.wav": .body(wav, type: "audio/wav", length: true)])
        defer { Task { await server.stop() } }
        try await withHub(streaming: true) { hub in
            let s = "SessionID=\(try await hub.session())"
            #expect(try await hub.get("/v1/set_party_mode?\(s)").status == 200)
            let url = server.address("/song.wav")
            let web = try await hub.get("/v1/play_web_media?\(s)&MediaUrl=\(url)")
            #expect(web.status == 200, "\(web.body)")
            func rendered() async throws -> [UInt64] {
                var frames: [UInt64] = []
                for id in hub.ids { frames.append(try await hub.controller.session(id: id).status().renderedFrames) }
                return frames
            }
            try await waitUntil("both speakers render the URL's audio") { try await rendered().allSatisfy { $0 > 0 } }
            try await waitUntil("a second of it played") {
                try await hub.get("/v1/playback_status?\(s)").string("TimeElapsed").flatMap(Int.init) ?? 0 >= 1
            }
            #expect(try await hub.get("/page/status").string("Title") == url)
            // Pausing web media stops it; it cannot be resumed.
            #expect(try await hub.get("/v1/pause_play?\(s)").status == 200)
            #expect(try await hub.get("/v1/playback_status?\(s)").object()["PlaybackState"] as? String == "PlayerStateStopped")
            try await waitUntil("the speakers stop") { hub.sim.speakers.allSatisfy { !$0.deviceInfo.isPlaying } }

            for (target, says) in [(server.address("/missing.mp3"), "404"), ("rtsp://127.0.0.1:9/live", "http and https")] {
                let refused = try await hub.get("/v1/play_web_media?\(s)&MediaUrl=\(target)")
                #expect(try refused.status == 500 && refused.string("Error") == "MediaUnreadable", "\(refused.body)")
                let message = try refused.string("Message") ?? ""
                #expect(message.contains(says) && !message.contains("\n"), "\(message)")
            }
            #expect(try await hub.get("/v1/is_playing?\(s)").body == #"{"IsPlaying":"false"}"#)
        }
    }

    @Test func aMediaFileThatCannotBeDecodedIsRefusedWithAClearError() async throws {
        try await withHub(speakers: 1, streaming: true) { hub in
            let s = "SessionID=\(try await hub.session())"
            _ = FileManager.default.createFile(atPath: hub.mediaDir + "/c-not-really.mp3", contents: Data("ID3 not audio".utf8))
            let pid = MediaInfo.persistentID(of: "c-not-really.mp3")
            let answer = try await hub.get("/v1/play_hub_media_party_mode?\(s)&PersistentID=\(pid)")
            #expect(try answer.status == 500 && answer.string("Error") == "MediaUnreadable", "\(answer.body)")
            #expect(answer.body.contains("c-not-really.mp3") && answer.body.contains("not audio"), "\(answer.body)")
            #expect(try await hub.get("/v1/is_playing?\(s)").body == #"{"IsPlaying":"false"}"#)
        }
    }
}
