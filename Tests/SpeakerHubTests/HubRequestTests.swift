import OrderedJSON
import Foundation
import SpeakerHubCore
import TestSupport
import Testing

@Suite("Hub query and call parsing, sessions, JSON and media info (pure)")
struct HubRequestTests {
    @Test func queriesArePercentDecodedAndPlusIsASpace() throws {
        let q = try HubQuery("MediaUrl=http%3A%2F%2Fh%2Fa+b.mp3&SessionID=1000&&Flag")
        #expect(q["MediaUrl"] == "http://h/a b.mp3")
        #expect(q["SessionID"] == "1000")
        #expect(q["Flag"] == "")
        #expect(try HubQuery(nil as String?).values.isEmpty)
        for bad in ["a=%", "a=%4", "a=%g0", "a=%ff", "a=1&a=2", String(repeating: "x", count: HubQuery.maxLength + 1),
                    (0...HubQuery.maxParameters).map { "p\($0)=1" }.joined(separator: "&")] {
            #expect(throws: HubError(.malformedQuery, "")) { try HubQuery(bad) }
        }
    }

    @Test func callsReadTheirParametersAsPublished() throws {
        func call(_ name: String, _ query: String?) throws(HubError) -> HubCall { try HubRequest(name: name, query: query).call }
        #expect(try call("init_session", nil) == .initSession(priority: 100))
        #expect(try call("init_session", "Priority=7") == .initSession(priority: 7))
        #expect(try HubRequest(name: "device_count", query: "SessionID=1000").sessionID == 1000)
        #expect(try call("set_volume_device", "SessionID=1&DeviceID=34317244381360&Volume=50") == .setVolumeDevice(deviceID: 34317244381360, volume: 50))
        #expect(try call("play_hub_media_selected_speakers", "SessionID=1&PersistentID=18446744073709551615&DeviceIDList=3,1,3")
            == .playHubMedia(persistentID: UInt64.max, .selected([3, 1])))
        #expect(try call("resume_hub_media_party_mode", "SessionID=1&PersistentID=9") == .resumeHubMedia(persistentID: 9, .party))
        #expect(try call("play_web_media", "SessionID=1&MediaUrl=rtsp://h:554/s") == .playWebMedia(url: "rtsp://h:554/s", .session))
        #expect(try call("add_device_tosession", "SessionID=1&DeviceID=2") == .addDeviceToSession(deviceID: 2))
        // Unknown parameters are ignored (a browser's cache-buster, say).
        #expect(try call("is_playing", "SessionID=1&_=123") == .isPlaying)

        // A SessionID the hub cannot have issued is read as such (the hub answers SessionNotFound), not refused here.
        for spelled in ["", "+1", "01", "18446744073709551616", "abc", "-1"] {
            let request = try HubRequest(name: "device_count", query: "SessionID=\(spelled)")
            #expect(request.sessionID == nil && request.unissuedSession != nil, "\(spelled)")
        }
        #expect(try HubRequest(name: "device_count", query: "SessionID=1000").unissuedSession == nil)

        let refusals: [(String, String?, HubError.Code)] = [
            ("nope", "SessionID=1", .unknownCall), ("", nil, .unknownCall),
            ("device_count", nil, .missingParameter),
            ("set_volume", "SessionID=1&Volume=-1", .malformedParameter), ("set_volume", "SessionID=1&Volume=051", .malformedParameter),
            ("init_session", "Priority=1000001", .malformedParameter),
            ("play_hub_media_selected_speakers", "SessionID=1&PersistentID=1&DeviceIDList=", .malformedParameter),
            ("play_hub_media_selected_speakers", "SessionID=1&PersistentID=1", .missingParameter),
            ("play_hub_media_selected_speakers", "SessionID=1&PersistentID=1&DeviceIDList=" + (0...64).map(String.init).joined(separator: ","), .malformedParameter),
            ("play_web_media", "SessionID=1&MediaUrl=file:///etc/passwd", .malformedParameter),
            ("play_web_media", "SessionID=1&MediaUrl=http://a%20b/", .malformedParameter),
        ]
        for (name, query, code) in refusals {
            #expect(throws: HubError(code, "")) { try HubRequest(name: name, query: query) }
        }
        // Leading zeros are digits: 051 is 51 (refused above), 050 is 50.
        #expect(throws: Never.self) { try HubRequest(name: "set_volume", query: "SessionID=1&Volume=050") }
    }

    @Test func sessionsExpireAfterTheirLastRequestAndPriorityDecidesPlayback() throws {
        var s = HubSessions(timeout: .seconds(60), capacity: 3)
        let a = try s.open(priority: 100, now: .zero)
        let b = try s.open(priority: 50, now: .zero)
        #expect(a == 1000 && b == 1001)
        #expect(s.mayControlPlayback(b))
        s.takePlayback(a)
        #expect(!s.mayControlPlayback(b) && s.mayControlPlayback(a))
        #expect(throws: HubError(.playbackBusy, "")) { try s.checkControl(b) }
        let c = try s.open(priority: 100, now: .zero)
        #expect(throws: HubError(.tooManySessions, "")) { try s.open(priority: 1, now: .zero) }
        #expect(s.mayControlPlayback(c))
        #expect(s.takePlayback(c) == a)
        #expect(s.state(of: a, player: .playing) == .stopped)
        #expect(s.state(of: c, player: .paused) == .paused)
        #expect(s.state(of: b, player: .playing) == .initialized)

        try s.touch(a, now: .seconds(59))
        try s.touch(a, now: .seconds(118))
        #expect(throws: HubError(.sessionNotFound, "")) { try s.touch(b, now: .seconds(60)) }
        #expect(throws: HubError(.sessionNotFound, "")) { try s.touch(b, now: .seconds(61)) }
        // The owner gone, anyone may take the playback.
        s.close(c)
        let d = try s.open(priority: 0, now: .seconds(120))
        #expect(d == 1003 && s.mayControlPlayback(d))
    }

    @Test func sessionsAreBoundedPerClientAndUnusedOnesExpireSooner() throws {
        var s = HubSessions(timeout: .seconds(3600), capacity: 100, perClient: 3, unusedTimeout: .seconds(300))
        let a = try s.open(priority: 100, client: "10.0.0.1", now: .zero)
        let b = try s.open(priority: 100, client: "10.0.0.1", now: .seconds(1))
        let c = try s.open(priority: 100, client: "10.0.0.1", now: .seconds(2))
        let x = try s.open(priority: 100, client: "10.0.0.2", now: .seconds(2))
        s.takePlayback(a)
        try s.touch(b, now: .seconds(3))
        // A fourth from 10.0.0.1 closes its least recently used session that does not own the playback: c.
        let d = try s.open(priority: 100, client: "10.0.0.1", now: .seconds(4))
        #expect(s.entries[c] == nil && s.entries[a] != nil && s.entries[b] != nil && s.entries[d] != nil && s.entries[x] != nil)
        #expect(throws: HubError(.sessionNotFound, "")) { try s.touch(c, now: .seconds(5)) }
        // Never used after init_session: gone after 5 minutes; used: kept for the hour.
        try s.touch(a, now: .seconds(10))
        #expect(throws: HubError(.sessionNotFound, "")) { try s.touch(x, now: .seconds(302)) }
        try s.touch(b, now: .seconds(302))
        try s.touch(a, now: .seconds(3000))
        s.expire(now: .seconds(3000))
        #expect(s.entries[d] == nil, "never used: expired at 5 minutes")
        #expect(s.entries[a] != nil)
    }

    @Test func answersAreValidJSONWhateverTheStringsHold() throws {
        let nasty = "quote\" back\\ nl\n tab\t nul\u{0} bell\u{7} <script> & \u{2028} ünï 🎵"
        let json = OrderedJSON.object([("A", .string(nasty)), ("B", .array([.int(-47), .bool(true), .string("")]))])
        let decoded = try JSONSerialization.jsonObject(with: Data(json.rendered.utf8)) as? [String: Any]
        #expect(decoded?["A"] as? String == nasty)
        #expect(!json.rendered.contains("<"))
        #expect(HubError(.sessionNotFound, "x").answer.body == #"{"Result":"false","Error":"SessionNotFound","Message":"x"}"#)
        #expect(HubError(.sessionNotFound, "x").answer.status == 404)
        #expect(HubAnswer.success.body == #"{"Result":"true"}"#)
    }

    @Test func mediaInfoReadsWAVTagsAndNeverTrapsOnOtherBytes() {
        let info = MediaInfo.read(wavFile(seconds: 3, title: "T", artist: "Ar", album: "Al"))
        #expect(info == MediaInfo(title: "T", artist: "Ar", album: "Al"))
        #expect(MediaInfo.read(wavFile(seconds: 2)) == MediaInfo())
        #expect(MediaInfo.read(Array("ID3 not a wav".utf8)) == MediaInfo())
        // A header cut anywhere gives what it can, never a trap.
        let whole = wavFile(seconds: 1, title: "Cut")
        for n in 0..<200 { _ = MediaInfo.read(Array(whole.prefix(n))) }
        var random = TestRandom(seed: 3)
        for _ in 0..<500 {
            let tail = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = MediaInfo.read(Array("RIFF".utf8) + tail)
        }
        #expect(MediaInfo.persistentID(of: "a.wav") == MediaInfo.persistentID(of: "a.wav"))
        #expect(MediaInfo.persistentID(of: "a.wav") != MediaInfo.persistentID(of: "b.wav"))
        // FNV-1a 64 of "a" (the algorithm's published test vector), so the ids never change between releases.
        #expect(MediaInfo.persistentID(of: "a") == 0xaf63_dc4c_8601_ec8c)
    }
}

