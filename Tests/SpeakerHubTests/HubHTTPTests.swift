import CSndfile
import Foundation
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import TestSupport
import Testing

/// Every call of the v1 API over real HTTP on loopback, against simulated speakers, on a manual clock.
@Suite("HKWHub v1 API over HTTP against simulated speakers")
struct HubHTTPTests {
    static func expectResult(_ a: HTTPAnswer, _ what: String) throws {
        #expect(a.status == 200, "\(what): \(a.status) \(a.body)")
        #expect(try a.string("Result") == "true", "\(what): \(a.body)")
        #expect(a.headers["content-type"]?.hasPrefix("application/json") == true)
    }

    @Test func devicesVolumeAndTheSpeakerSessionAnswerAsPublished() async throws {
        try await withHub { hub in
            let sid = try await hub.session()
            #expect(sid == "1000")
            let s = "SessionID=\(sid)"
            #expect(try await hub.get("/v1/device_count?\(s)").body == #"{"DeviceCount":"2"}"#)

            let list = try await hub.get("/v1/device_list?\(s)").object()["DeviceList"] as? [[String: Any]] ?? []
            #expect(list.count == 2)
            let first = try #require(list.first)
            // The published field set and kinds: ids as strings, numbers and booleans as JSON values.
            #expect(Set(first.keys) == ["GroupName", "Role", "MacAddress", "WifiSignalStrength", "Port", "Active", "DeviceName", "Version",
                                        "ModelName", "IPAddress", "GroupID", "Volume", "IsPlaying", "DeviceID"])
            let info0 = hub.sim.speakers[0].deviceInfo
            #expect(first["DeviceID"] as? String == String(hub.ids[0]))
            #expect(first["GroupID"] as? String == String(info0.groupId))
            #expect(first["DeviceName"] as? String == info0.deviceName.value)
            #expect(first["Volume"] as? Int == Int(info0.volume.value))
            #expect(first["Port"] as? Int == Int(info0.port))
            #expect(first["Active"] as? Bool == false)
            #expect(first["IsPlaying"] as? Bool == false)
            // The answer text keeps the published order.
            let raw = try await hub.get("/v1/device_info?\(s)&DeviceID=\(hub.ids[1])").body
            #expect(raw.hasPrefix(#"{"GroupName":"#) && raw.hasSuffix(#""DeviceID":"\#(hub.ids[1])"}"#), "\(raw)")

            try Self.expectResult(try await hub.get("/v1/add_device_to_session?\(s)&DeviceID=\(hub.ids[1])"), "add")
            #expect(hub.sim.speakers[1].deviceInfo.active)
            #expect(try await hub.get("/v1/device_info?\(s)&DeviceID=\(hub.ids[1])").object()["Active"] as? Bool == true)
            try Self.expectResult(try await hub.get("/v1/add_device_tosession?\(s)&DeviceID=\(hub.ids[0])"), "the spec's spelling")
            try Self.expectResult(try await hub.get("/v1/remove_device_from_session?\(s)&DeviceID=\(hub.ids[1])"), "remove")
            #expect(hub.sim.speakers[1].deviceInfo.active == false)
            try Self.expectResult(try await hub.get("/v1/set_party_mode?\(s)"), "party")
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.active })

            try Self.expectResult(try await hub.get("/v1/set_volume?\(s)&Volume=30"), "set_volume")
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.volume.value == 30 })
            try Self.expectResult(try await hub.get("/v1/set_volume_device?\(s)&DeviceID=\(hub.ids[0])&Volume=11"), "set_volume_device")
            #expect(hub.sim.speakers[0].deviceInfo.volume.value == 11)
            #expect(try await hub.get("/v1/get_volume_device?\(s)&DeviceID=\(hub.ids[0])").body == #"{"Volume":"11"}"#)
            // The average of 11 and 30, rounded.
            #expect(try await hub.get("/v1/get_volume?\(s)").body == #"{"Volume":"21"}"#)

            try Self.expectResult(try await hub.get("/v1/close_session?\(s)"), "close")
            let closed = try await hub.get("/v1/device_count?\(s)")
            #expect(try closed.status == 404 && closed.string("Error") == "SessionNotFound", "\(closed.body)")
        }
    }

    @Test func mediaListPlayPauseResumeStopAndElapsedTime() async throws {
        try await withHub { hub in
            let s = "SessionID=\(try await hub.session())"
            let media = try await hub.get("/v1/media_list?\(s)").object()["MediaList"] as? [[String: Any]] ?? []
            // The two WAV files, by name; the text file is not media.
            #expect(media.count == 2)
            let song = try #require(media.first)
            #expect(song["Title"] as? String == "I Will Run To You")
            #expect(song["Artist"] as? String == "Hillsong")
            #expect(song["AlbumTitle"] as? String == "Simply Worship")
            #expect(song["Duration"] as? Int == 20)
            #expect(media[1]["Title"] as? String == "b-untagged" && media[1]["Duration"] as? Int == 3)
            // Other formats' durations come from their headers (a FLAC of 7.5 s: 7).
            let flac = hub.mediaDir + "/c-tone.flac"
            try await offThePool {
                try SoundFiles.write(flac, format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), rate: 8000, channels: 1,
                                     samples: (0..<60_000).map { Int16(truncatingIfNeeded: $0 &* 37) }, title: "Tone In FLAC")
            }
            let withFLAC = try await hub.get("/v1/media_list?\(s)").object()["MediaList"] as? [[String: Any]] ?? []
            #expect(withFLAC.count == 3 && withFLAC[2]["Duration"] as? Int == 7, "\(withFLAC.last ?? [:])")
            try FileManager.default.removeItem(atPath: flac)
            let pid = try #require(song["PersistentID"] as? String)
            #expect(pid == String(MediaInfo.persistentID(of: "a-song.wav")))
            // Stable: the same ids on the next read.
            let listed = try await hub.get("/v1/media_list?\(s)").body
            #expect(try await hub.get("/v1/media_list?\(s)").body == listed)

            #expect(try await hub.get("/v1/playback_status?\(s)").body == #"{"PlaybackState":"PlayerStateInitialized","TimeElapsed":"-1"}"#)
            // No speaker in the session: the play fails.
            let none = try await hub.get("/v1/play_hub_media?\(s)&PersistentID=\(pid)")
            #expect(try none.status == 409 && none.string("Error") == "NoSpeakerInSession")

            try Self.expectResult(try await hub.get("/v1/add_device_to_session?\(s)&DeviceID=\(hub.ids[0])"), "add")
            try Self.expectResult(try await hub.get("/v1/play_hub_media?\(s)&PersistentID=\(pid)"), "play")
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying)
            #expect(hub.sim.speakers[1].deviceInfo.isPlaying == false)
            #expect(try await hub.get("/v1/is_playing?\(s)").body == #"{"IsPlaying":"true"}"#)
            hub.clock.advance(by: .seconds(15))
            #expect(try await hub.get("/v1/playback_status?\(s)").body == #"{"PlaybackState":"PlayerStatePlaying","TimeElapsed":"15"}"#)

            try Self.expectResult(try await hub.get("/v1/pause_play?\(s)"), "pause")
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying == false)
            #expect(try await hub.get("/v1/playback_status?\(s)").body == #"{"PlaybackState":"PlayerStatePaused","TimeElapsed":"-1"}"#)
            #expect(try await hub.get("/v1/is_playing?\(s)").body == #"{"IsPlaying":"false"}"#)
            let again = try await hub.get("/v1/pause_play?\(s)")
            #expect(try again.status == 409 && again.string("Error") == "NotPlaying")
            hub.clock.advance(by: .seconds(100))
            try Self.expectResult(try await hub.get("/v1/resume_hub_media?\(s)&PersistentID=\(pid)"), "resume")
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying)
            hub.clock.advance(by: .seconds(2))
            // Paused time does not count: 15 + 2.
            #expect(try await hub.get("/v1/playback_status?\(s)").body == #"{"PlaybackState":"PlayerStatePlaying","TimeElapsed":"17"}"#)
            // At its end (20 s) the item stops by itself.
            hub.clock.advance(by: .seconds(3))
            #expect(try await hub.get("/v1/playback_status?\(s)").body == #"{"PlaybackState":"PlayerStateStopped","TimeElapsed":"-1"}"#)
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying == false)

            // Party mode: every speaker joins and plays.
            try Self.expectResult(try await hub.get("/v1/play_hub_media_party_mode?\(s)&PersistentID=\(pid)"), "party play")
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.isPlaying && $0.deviceInfo.active })
            try Self.expectResult(try await hub.get("/v1/stop_play?\(s)"), "stop")
            #expect(hub.sim.speakers.allSatisfy { !$0.deviceInfo.isPlaying })
            try Self.expectResult(try await hub.get("/v1/stop_play?\(s)"), "stop with nothing playing is safe")
            let stopped = try await hub.get("/v1/resume_hub_media?\(s)&PersistentID=\(pid)")
            #expect(try stopped.status == 409 && stopped.string("Error") == "NotResumable", "stopped playback cannot resume")

            // Selected speakers: exactly these play; the other leaves the session.
            try Self.expectResult(try await hub.get("/v1/play_hub_media_selected_speakers?\(s)&PersistentID=\(pid)&DeviceIDList=\(hub.ids[1])"), "selected")
            #expect(hub.sim.speakers[1].deviceInfo.isPlaying && !hub.sim.speakers[0].deviceInfo.isPlaying)
            #expect(hub.sim.speakers[0].deviceInfo.active == false)
            try Self.expectResult(try await hub.get("/v1/pause_play?\(s)"), "pause")
            try Self.expectResult(try await hub.get("/v1/resume_hub_media_party_mode?\(s)&PersistentID=\(pid)"), "resume party")
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.isPlaying })
            try Self.expectResult(try await hub.get("/v1/pause_play?\(s)"), "pause")
            try Self.expectResult(try await hub.get("/v1/resume_hub_media_selected_speakers?\(s)&PersistentID=\(pid)&DeviceIDList=\(hub.ids[0])"), "resume selected")
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying && !hub.sim.speakers[1].deviceInfo.isPlaying)
            // A speaker taken out of the session while playing stops; pause and resume go on with the others.
            try Self.expectResult(try await hub.get("/v1/play_hub_media_party_mode?\(s)&PersistentID=\(pid)"), "party again")
            try Self.expectResult(try await hub.get("/v1/remove_device_from_session?\(s)&DeviceID=\(hub.ids[1])"), "remove one")
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying && !hub.sim.speakers[1].deviceInfo.isPlaying)
            try Self.expectResult(try await hub.get("/v1/pause_play?\(s)"), "pause the rest")
            try Self.expectResult(try await hub.get("/v1/resume_hub_media?\(s)&PersistentID=\(pid)"), "resume the rest")
            #expect(hub.sim.speakers[0].deviceInfo.isPlaying)
            // Removing the last speaker of the session stops playback (the SDK's rule).
            try Self.expectResult(try await hub.get("/v1/remove_device_from_session?\(s)&DeviceID=\(hub.ids[0])"), "remove last")
            #expect(try await hub.get("/v1/playback_status?\(s)").object()["PlaybackState"] as? String == "PlayerStateStopped")
        }
    }

    @Test func webMediaPlaysOnTheSessionPartyOrSelectedSpeakersAndCannotResume() async throws {
        try await withHub { hub in
            let s = "SessionID=\(try await hub.session())"
            let url = "http%3A%2F%2Fseonman.github.io%2Fmusic%2Fhyolyn.mp3"
            try Self.expectResult(try await hub.get("/v1/play_web_media_party_mode?\(s)&MediaUrl=\(url)"), "web party")
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.isPlaying })
            // Pausing web media stops it: it cannot be resumed.
            try Self.expectResult(try await hub.get("/v1/pause_play?\(s)"), "pause web")
            #expect(try await hub.get("/v1/playback_status?\(s)").object()["PlaybackState"] as? String == "PlayerStateStopped")
            try Self.expectResult(try await hub.get("/v1/play_web_media_selected_speakers?\(s)&MediaUrl=\(url)&DeviceIDList=\(hub.ids[1]),\(hub.ids[1])"), "web selected")
            #expect(hub.sim.speakers[1].deviceInfo.isPlaying && !hub.sim.speakers[0].deviceInfo.isPlaying)
            try Self.expectResult(try await hub.get("/v1/play_web_media?\(s)&MediaUrl=http://example.com/a.mp3"), "web on the session")
            #expect(try await hub.get("/v1/is_playing?\(s)").body == #"{"IsPlaying":"true"}"#)
            let unknown = try await hub.get("/v1/play_web_media_selected_speakers?\(s)&MediaUrl=\(url)&DeviceIDList=12345")
            #expect(try unknown.status == 404 && unknown.string("Error") == "DeviceNotFound")
        }
    }

    @Test func prioritiesPreemptionAndExpiryOnTheInjectedClock() async throws {
        try await withHub(sessionTimeout: .seconds(3600)) { hub in
            let a = try await hub.session()
            let low = try await hub.session(priority: 50)
            let c = try await hub.session(priority: 100)
            #expect([a, low, c] == ["1000", "1001", "1002"])
            let pid = MediaInfo.persistentID(of: "b-untagged.wav")
            try Self.expectResult(try await hub.get("/v1/play_hub_media_party_mode?SessionID=\(a)&PersistentID=\(pid)"), "a plays")
            // A lower priority cannot interrupt, pause or stop it.
            for call in ["play_hub_media?PersistentID=\(pid)&", "pause_play?", "stop_play?"] {
                let busy = try await hub.get("/v1/\(call)SessionID=\(low)")
                #expect(try busy.status == 409 && busy.string("Error") == "PlaybackBusy", "\(call): \(busy.body)")
            }
            #expect(try await hub.get("/v1/playback_status?SessionID=\(a)").object()["PlaybackState"] as? String == "PlayerStatePlaying")
            #expect(try await hub.get("/v1/playback_status?SessionID=\(low)").object()["PlaybackState"] as? String == "PlayerStateInitialized")
            // An equal priority interrupts: a's state becomes stopped, its id stays valid.
            try Self.expectResult(try await hub.get("/v1/play_hub_media?SessionID=\(c)&PersistentID=\(pid)"), "c pre-empts")
            #expect(try await hub.get("/v1/playback_status?SessionID=\(a)").body == #"{"PlaybackState":"PlayerStateStopped","TimeElapsed":"-1"}"#)
            #expect(try await hub.get("/v1/playback_status?SessionID=\(c)").object()["PlaybackState"] as? String == "PlayerStatePlaying")
            #expect(try await hub.get("/v1/device_count?SessionID=\(a)").status == 200)

            // Expiry: 60 minutes after the last request, not after the first.
            hub.clock.advance(by: .seconds(3599))
            #expect(try await hub.get("/v1/device_count?SessionID=\(a)").status == 200)
            hub.clock.advance(by: .seconds(3599))
            #expect(try await hub.get("/v1/device_count?SessionID=\(a)").status == 200)
            hub.clock.advance(by: .seconds(3600))
            for id in [a, c, low] {
                let gone = try await hub.get("/v1/device_count?SessionID=\(id)")
                #expect(gone.status == 404, "\(gone.body)")
                #expect(try gone.string("Error") == "SessionNotFound")
                #expect(try gone.string("Result") == "false")
            }
            // The owner expired: anyone may take the playback now; ids are never reused.
            let d = try await hub.session(priority: 1)
            #expect(d == "1003")
            try Self.expectResult(try await hub.get("/v1/stop_play?SessionID=\(d)"), "orphaned playback")
            let never = try await hub.get("/v1/is_playing?SessionID=999")
            #expect(try never.status == 404 && never.string("Error") == "SessionNotFound")
        }
    }

    /// One client cannot lock the others out (4,086 init_session calls once filled the hub for an hour): a client
    /// address holds at most 32 sessions, its oldest make room for its newest, and other clients are not touched.
    @Test func aClientThatFloodsInitSessionDisplacesOnlyItsOwnSessions() async throws {
        try await withHub { hub in
            let first = try await hub.session()
            try Self.expectResult(try await hub.get("/v1/set_party_mode?SessionID=\(first)"), "the first session is used")
            let other = await hub.api.handle(name: "init_session", query: nil, client: "192.0.2.7")
            let otherID = try #require(other.body.split(separator: "\"").dropFirst(3).first.map(String.init), "\(other.body)")
            var ids: [String] = []
            for _ in 0..<200 { ids.append(try await hub.session()) }
            let perClient = await hub.api.sessions.perClient
            // Over HTTP every call comes from 127.0.0.1: that client keeps its newest sessions only.
            #expect(await hub.api.sessions.entries.values.filter { $0.client == "127.0.0.1" }.count == perClient)
            let displaced = try await hub.get("/v1/device_count?SessionID=\(first)")
            #expect(try displaced.status == 404 && displaced.string("Error") == "SessionNotFound")
            #expect(try displaced.string("Message")?.contains("its client opened more than \(perClient) sessions") == true, "\(displaced.body)")
            #expect(try await hub.get("/v1/device_count?SessionID=\(ids.last!)").status == 200)
            // The other client's session is untouched.
            let answer = await hub.api.handle(name: "device_count", query: "SessionID=\(otherID)", client: "192.0.2.7")
            #expect(answer.status == 200, "\(answer.body)")
        }
    }

    @Test func missingOrMalformedParametersAnswerAClearJSONError() async throws {
        try await withHub { hub in
            let sid = try await hub.session()
            let s = "SessionID=\(sid)"
            let cases: [(target: String, status: Int, error: String)] = [
                ("/v1/device_count", 400, "MissingParameter"),
                // A SessionID the hub never issued answers SessionNotFound however it is spelled.
                ("/v1/device_count?SessionID=abc", 404, "SessionNotFound"),
                ("/v1/device_count?SessionID=-1", 404, "SessionNotFound"),
                ("/v1/device_count?SessionID=99999999999999999999999", 404, "SessionNotFound"),
                ("/v1/device_count?SessionID=0\(sid)", 404, "SessionNotFound"),
                ("/v1/device_count?SessionID=+\(sid)", 404, "SessionNotFound"),
                ("/v1/device_count?SessionID=", 404, "SessionNotFound"),
                ("/v1/device_count?SessionID=%zz", 400, "MalformedQuery"),
                ("/v1/device_count?SessionID=%ff", 400, "MalformedQuery"),
                ("/v1/device_count?SessionID=1000&SessionID=1000", 400, "MalformedQuery"),
                ("/v1/set_volume?\(s)", 400, "MissingParameter"),
                ("/v1/set_volume?\(s)&Volume=51", 400, "MalformedParameter"),
                ("/v1/set_volume?\(s)&Volume=2.5", 400, "MalformedParameter"),
                ("/v1/set_volume_device?\(s)&Volume=5", 400, "MissingParameter"),
                ("/v1/init_session?Priority=high", 400, "MalformedParameter"),
                ("/v1/device_info?\(s)&DeviceID=1", 404, "DeviceNotFound"),
                ("/v1/get_volume_device?\(s)&DeviceID=1", 404, "DeviceNotFound"),
                ("/v1/play_hub_media?\(s)&PersistentID=5", 404, "MediaNotFound"),
                ("/v1/play_hub_media?\(s)", 400, "MissingParameter"),
                ("/v1/play_hub_media_selected_speakers?\(s)&PersistentID=5&DeviceIDList=1,,2", 400, "MalformedParameter"),
                ("/v1/play_web_media?\(s)&MediaUrl=ftp://host/a.mp3", 400, "MalformedParameter"),
                ("/v1/play_web_media?\(s)&MediaUrl=http://", 400, "MalformedParameter"),
                ("/v1/resume_hub_media?\(s)&PersistentID=\(MediaInfo.persistentID(of: "a-song.wav"))", 409, "NotResumable"),
                ("/v1/no_such_call?\(s)", 404, "UnknownCall"),
                ("/v2/device_count?\(s)", 404, "UnknownCall"),
                ("/v1/device_count?SessionID=424242", 404, "SessionNotFound"),
            ]
            for c in cases {
                let a = try await hub.get(c.target)
                #expect(a.status == c.status, "\(c.target): \(a.status) \(a.body)")
                let object = try a.object()
                #expect(object["Result"] as? String == "false", "\(c.target)")
                #expect(object["Error"] as? String == c.error, "\(c.target): \(a.body)")
                #expect((object["Message"] as? String)?.isEmpty == false, "\(c.target)")
            }
            // A missing parameter is named.
            #expect(try await hub.get("/v1/set_volume?\(s)").string("Message")?.contains("Volume") == true)
            // Nothing of the above changed the speakers.
            #expect(hub.sim.speakers.allSatisfy { !$0.deviceInfo.active && !$0.deviceInfo.isPlaying })
        }
    }

    @Test func randomQueriesNeverBreakTheHub() async throws {
        try await withHub(speakers: 1) { hub in
            let sid = try await hub.session()
            var random = TestRandom(seed: 10)
            let alphabet = Array("SessionIDVolumePersistentIDeviceListMediaUrl=&%+,:/0123456789abcdefxyz_-.\"'<>".utf8)
            // 60 seeded queries over HTTP (tools/fuzz/hub fuzzes the query handling in depth).
            for _ in 0..<60 {
                let name = HubRequest.callNames.randomElement(using: &random)!
                var query = "SessionID=\(sid)&"
                for _ in 0..<Int.random(in: 0...40, using: &random) {
                    let b = Int.random(in: 0...9, using: &random) == 0 ? UInt8.random(in: 0x21...0x7e, using: &random) : alphabet.randomElement(using: &random)!
                    // Bytes a request line should not carry go %-encoded, as a client would send them; '%' stays raw.
                    let plain = Array("=&%+,:/_.-".utf8).contains(b) || (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7a)
                    query += plain ? String(UnicodeScalar(b)) : "%" + String(b, radix: 16, uppercase: true)
                }
                let a = try await hub.get("/v1/\(name)?\(query)")
                #expect([200, 400, 404, 409].contains(a.status), "\(name)?\(query): \(a.status) \(a.body)")
                _ = try a.object()
            }
            // (A random close_session may have closed the first session.)
            let after = try await hub.session()
            #expect(try await hub.get("/v1/device_count?SessionID=\(after)").body == #"{"DeviceCount":"1"}"#)
        }
    }
}
