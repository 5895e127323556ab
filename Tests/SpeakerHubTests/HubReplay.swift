// The checks the hub fuzzer makes on every input, shared by the fuzzer (tools/fuzz/hub/run.sh compiles this file
// together with Sources/Failure, Sources/SpeakerHubCore and tools/fuzz/hub/FuzzHub.swift) and by
// HubFuzzRegressionTests, which replays every kept input through it on a normal `swift test`. In the fuzzer build
// SpeakerHubCore is not a module.
#if canImport(SpeakerHubCore)
import SpeakerHubCore
#endif
import Synchronization

/// What replaying one input gave, and every invariant it broke.
struct HubReplay {
    /// Each request's status, in order.
    var statuses: [Int] = []
    /// Each request's error name ("" for a success).
    var errors: [String] = []
    /// Broken invariants, in words; empty when the hub behaved.
    var problems: [String] = []
}

/// Replays `bytes` as requests to a fresh `HubAPI` over in-memory model speakers, player and media (the fuzzer
/// exercises the hub's query handling and rules, not the speakers): each line (at most 64) is `NAME` or
/// `NAME?QUERY`, as the router hands them over, a JSON-RPC message (a line starting with `{` or `[`), or `+MINUTES`,
/// which moves the hub's clock on (sessions expire after 60). The whole input is also read as media file bytes.
/// Checks: nothing traps; every answer is a JSON object; a refusal is a 4xx (or 503 when sessions run out) with
/// `"Result":"false"`, an `Error` name and a message; no 5xx from model parts that never fail; session ids are
/// never reused; with no speaker in the session nothing plays.
func replayHubInput(_ bytes: [UInt8]) async -> HubReplay {
    var replay = HubReplay()
    _ = MediaInfo.read(bytes)
    let time = Mutex<Duration>(.zero)
    let speakers = ModelSpeakers()
    let player = ModelPlayer(now: { time.withLock { $0 } })
    let api = HubAPI(speakers: speakers, player: player, media: ModelMedia(), sessionCapacity: 8, now: { time.withLock { $0 } })
    var issued = Set<String>()
    let peer = HubRPCPeer(client: "fuzz")
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).prefix(64) {
        if line.first == UInt8(ascii: "+") {
            let minutes = line.dropFirst().prefix(4).reduce(0) { n, b in (0x30...0x39).contains(b) ? n * 10 + Int(b - 0x30) : n }
            time.withLock { $0 += .seconds(minutes * 60) }
            continue
        }
        // A line starting with `{` or `[` is a JSON-RPC message (docs/hub.md §8): answered with JSON, or not at all.
        if line.first == UInt8(ascii: "{") || line.first == UInt8(ascii: "[") {
            if let answer = await api.rpc(line, peer: peer), !isJSONObject(answer), !isJSONObject("{\"batch\":" + answer + "}") {
                replay.problems.append("JSON-RPC '\(String(decoding: line.prefix(80), as: UTF8.self))': not JSON: \(answer.prefix(200))")
            }
            continue
        }
        let text = String(decoding: line, as: UTF8.self)
        let parts = text.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let answer = await api.handle(name: parts[0], query: parts.count > 1 ? parts[1] : nil)
        let body = answer.body
        replay.statuses.append(answer.status)
        guard isJSONObject(body) else {
            replay.problems.append("'\(text.prefix(80))': not a JSON object: \(body.prefix(200))")
            continue
        }
        if answer.status == 200 {
            replay.errors.append("")
            if case let .object(fields) = answer.json, let id = fields.first(where: { $0.0 == "SessionID" }), case let .string(value) = id.1 {
                if !issued.insert(value).inserted { replay.problems.append("session id \(value) given out twice") }
            }
        } else {
            guard case let .object(fields) = answer.json, fields.count == 3, fields[0].0 == "Result", fields[0].1 == .string("false"),
                  fields[1].0 == "Error", case let .string(name) = fields[1].1, !name.isEmpty,
                  fields[2].0 == "Message", case let .string(message) = fields[2].1, !message.isEmpty, !message.contains("\n") else {
                replay.problems.append("'\(text.prefix(80))': a refusal without Result false, Error and a one-line Message: \(body.prefix(200))")
                continue
            }
            replay.errors.append(name)
            if !((400...499).contains(answer.status) || (answer.status == 503 && name == "TooManySessions")) {
                replay.problems.append("'\(text.prefix(80))': status \(answer.status) \(name)")
            }
        }
        let state = await player.playback().state
        if state == .playing || state == .paused, await speakers.sessionMembers().isEmpty {
            replay.problems.append("'\(text.prefix(80))': the player is \(state.rawValue) with no speaker in the session")
        }
    }
    let live = await api.sessions.entries.count
    if live > 8 { replay.problems.append("\(live) live sessions, above the capacity of 8") }
    return replay
}

/// Three speakers in memory: the session, volumes, names with characters JSON must escape.
actor ModelSpeakers: HubSpeakers {
    private var list: [HubDevice] = (0..<3).map { k in
        HubDevice(deviceID: 34_317_244_381_360 + UInt64(k), deviceName: k == 1 ? "Kitchen \"<&>\"\u{1}" : "Speaker \(k + 1)",
                  groupID: 0, groupName: "harman", modelName: "Omni Adapt", ipAddress: "127.0.0.1", port: 45455 + k,
                  macAddress: "b0:38:29:1b:36:1\(k)", volume: 20, active: false, wifiSignalStrength: -47, role: 21, version: "0.1.6.2",
                  isPlaying: false)
    }
    private var members: [UInt64] = []

    func devices() async throws -> [HubDevice] { list }
    func sessionMembers() async -> [UInt64] { members }

    func addToSession(_ id: UInt64) async throws {
        guard let k = list.firstIndex(where: { $0.deviceID == id }) else { throw HubError(.deviceNotFound, "model: no speaker \(id)") }
        if !members.contains(id) { members.append(id) }
        list[k].active = true
    }

    func removeFromSession(_ id: UInt64) async throws {
        members.removeAll { $0 == id }
        if let k = list.firstIndex(where: { $0.deviceID == id }) { list[k].active = false }
    }

    func setVolume(_ volume: Int, of id: UInt64?) async throws {
        guard (0...50).contains(volume) else { throw HubError(.malformedParameter, "model: volume \(volume)") }
        for k in list.indices where id == nil || list[k].deviceID == id { list[k].volume = volume }
    }

    private var muted: Set<UInt64> = []

    func setMute(_ muted: Bool, of id: UInt64) async throws {
        if muted { self.muted.insert(id) } else { self.muted.remove(id) }
    }

    func mutes() async throws -> [UInt64: Bool] {
        Dictionary(uniqueKeysWithValues: list.map { ($0.deviceID, muted.contains($0.deviceID)) })
    }

    func rename(_ id: UInt64, to name: String) async throws {
        for k in list.indices where list[k].deviceID == id { list[k].deviceName = name }
    }

    func setGroup(_ name: String, members ids: [UInt64]) async throws {
        let groupID = list.first { $0.groupName == name && $0.groupID != 0 }?.groupID ?? ids.first ?? 0
        for k in list.indices {
            if ids.contains(list[k].deviceID) {
                (list[k].groupID, list[k].groupName) = (groupID, name)
            } else if list[k].groupName == name {
                (list[k].groupID, list[k].groupName) = (0, "harman")
            }
        }
    }
}

/// A player in memory on the replay's clock.
actor ModelPlayer: HubPlayer {
    private let now: @Sendable () -> Duration
    private var state = HubPlayerState.initialized
    private var item: HubPlayable?
    private var position = Duration.zero
    private var since = Duration.zero

    init(now: @escaping @Sendable () -> Duration) { self.now = now }

    func play(_ item: HubPlayable, from position: Duration, on speakers: [UInt64]) async throws {
        guard !speakers.isEmpty else { throw HubError(.noSpeakerInSession, "model: play on no speakers") }
        (self.item, self.position, since, state) = (item, position, now(), .playing)
    }

    func pause() async throws {
        guard state == .playing else { return }
        position += now() - since
        state = .paused
    }

    func resume() async throws {
        guard state == .paused else { return }
        since = now()
        state = .playing
    }

    func stop() async throws { state = .stopped }

    func seek(to position: Duration) async throws {
        guard state == .playing || state == .paused else { return }
        (self.position, since) = (position, now())
    }

    func playback() async -> HubPlayback {
        let elapsed = state == .playing ? position + (now() - since) : position
        if state == .playing, case let .media(m)? = item, m.duration > 0, elapsed >= .seconds(m.duration) { state = .stopped }
        return HubPlayback(state: state, elapsed: state == .playing || state == .paused ? elapsed : nil, item: item)
    }
}

/// Two media items.
struct ModelMedia: HubMediaSource {
    func items() async throws -> [HubMediaItem] {
        [HubMediaItem(persistentID: 7_387_446_959_931_482_519, title: "I Will Run To You", artist: "Hillsong", albumTitle: "Simply Worship",
                      duration: 436, location: "a.wav"),
         HubMediaItem(persistentID: 5_829_171_347_867_182_746, title: "I'm Yours", artist: "Jason Mraz", albumTitle: "Wordplay",
                      duration: 257, location: "b.wav")]
    }
}

/// A strict check that `text` is one JSON object (RFC 8259), with nothing after it.
func isJSONObject(_ text: String) -> Bool {
    var p = JSONCheck(bytes: Array(text.utf8))
    p.space()
    guard p.peek == UInt8(ascii: "{"), p.value(depth: 0) else { return false }
    p.space()
    return p.at == p.bytes.count
}

struct JSONCheck {
    let bytes: [UInt8]
    var at = 0

    var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

    mutating func space() {
        while let b = peek, b == 0x20 || b == 0x0a || b == 0x0d || b == 0x09 { at += 1 }
    }

    mutating func literal(_ word: String) -> Bool {
        let w = Array(word.utf8)
        guard at + w.count <= bytes.count, Array(bytes[at..<(at + w.count)]) == w else { return false }
        at += w.count
        return true
    }

    mutating func value(depth: Int) -> Bool {
        guard depth < 32 else { return false }
        space()
        switch peek {
        case UInt8(ascii: "{"):
            at += 1
            space()
            if peek == UInt8(ascii: "}") { at += 1; return true }
            while true {
                space()
                guard string() else { return false }
                space()
                guard peek == UInt8(ascii: ":") else { return false }
                at += 1
                guard value(depth: depth + 1) else { return false }
                space()
                if peek == UInt8(ascii: ",") { at += 1; continue }
                guard peek == UInt8(ascii: "}") else { return false }
                at += 1
                return true
            }
        case UInt8(ascii: "["):
            at += 1
            space()
            if peek == UInt8(ascii: "]") { at += 1; return true }
            while true {
                guard value(depth: depth + 1) else { return false }
                space()
                if peek == UInt8(ascii: ",") { at += 1; continue }
                guard peek == UInt8(ascii: "]") else { return false }
                at += 1
                return true
            }
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    mutating func string() -> Bool {
        guard peek == UInt8(ascii: "\"") else { return false }
        at += 1
        while let b = peek {
            at += 1
            switch b {
            case UInt8(ascii: "\""): return true
            case UInt8(ascii: "\\"):
                guard let e = peek else { return false }
                at += 1
                if e == UInt8(ascii: "u") {
                    guard at + 4 <= bytes.count, bytes[at..<(at + 4)].allSatisfy({ isHex($0) }) else { return false }
                    at += 4
                } else if !Array("\"\\/bfnrt".utf8).contains(e) {
                    return false
                }
            default:
                if b < 0x20 { return false }
            }
        }
        return false
    }

    mutating func number() -> Bool {
        let start = at
        if peek == UInt8(ascii: "-") { at += 1 }
        let digits = at
        while let b = peek, b >= 0x30, b <= 0x39 { at += 1 }
        guard at > digits else { at = start; return false }
        if bytes[digits] == 0x30, at - digits > 1 { return false }
        if peek == UInt8(ascii: ".") {
            at += 1
            let fraction = at
            while let b = peek, b >= 0x30, b <= 0x39 { at += 1 }
            guard at > fraction else { return false }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            at += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
            let exponent = at
            while let b = peek, b >= 0x30, b <= 0x39 { at += 1 }
            guard at > exponent else { return false }
        }
        return true
    }

    func isHex(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) }
}
