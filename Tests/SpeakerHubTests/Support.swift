import Foundation
import Speaker
import SpeakerHub
import SpeakerHubCore
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import TestSupport
import Transport

/// One HTTP answer, as a raw HTTP/1.1 client read it.
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: [String: String]
    var body: String

    /// The body as a JSON object (a test failure when it is not one).
    func object() throws -> [String: Any] {
        guard let value = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else {
            throw TestFailure("not a JSON object: \(body)")
        }
        return value
    }

    func string(_ key: String) throws -> String? { try object()[key] as? String }
}

/// GET `target` (sent as it is: any bytes a test wants in the request line) from 127.0.0.1:`port` over a TCP link of
/// the project's own, with `Connection: close`; the whole answer is read until the server closes.
func httpGet(_ port: Int, _ target: String) async throws -> HTTPAnswer {
    try await httpRequest(port, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
}

/// Whether `bytes` hold an HTTP head with a Content-Length and that many bytes of body.
private func complete(_ bytes: [UInt8]) -> Bool {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { return false }
    let head = text[..<split.lowerBound].lowercased()
    guard let range = head.range(of: "\r\ncontent-length:") else { return false }
    let digits = head[range.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }
    guard let length = Int(digits) else { return false }
    return text[split.upperBound...].utf8.count >= length
}

/// POST `body` to `target` (as `httpGet` does).
func httpPost(_ port: Int, _ target: String, _ body: String) async throws -> HTTPAnswer {
    try await httpRequest(port, "POST \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
}

/// Sends `request` as it is and reads the answer until the server closes.
func httpRequest(_ port: Int, _ request: String) async throws -> HTTPAnswer {
    let link = try await TCPTransport.connect(host: "127.0.0.1", port: UInt16(port))
    defer { Task { await link.close() } }
    try await link.send(Array(request.utf8))
    var bytes: [UInt8] = []
    while true {
        do { bytes += try await link.receive() } catch is TransportError { break }
        if complete(bytes) { break }  // a server that keeps the connection open (Chromium's DevTools) has answered
    }
    let text = String(decoding: bytes, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { throw TestFailure("no HTTP head in \(text.prefix(200))") }
    let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
    let statusWords = lines[0].split(separator: " ")
    guard statusWords.count >= 2, let status = Int(statusWords[1]) else { throw TestFailure("bad status line \(lines[0])") }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    let body = String(text[split.upperBound...])
    if let length = headers["content-length"].flatMap(Int.init) {
        guard body.utf8.count == length else { throw TestFailure("body is \(body.utf8.count) bytes, Content-Length \(length)") }
    }
    return HTTPAnswer(status: status, headers: headers, body: body)
}

/// A WAV file: 8 kHz mono 16-bit, `seconds` long (a quiet tone), with an INFO chunk when tags are given.
/// One second of a 440 Hz tone, 8 kHz mono s16le.
let oneSecondOf440Hz: [UInt8] = {
    var bytes = [UInt8](repeating: 0, count: 16000)
    for i in 0..<8000 {
        let v = UInt16(bitPattern: Int16(sin(Double(i) * 2 * .pi * 440 / 8000) * 2000))
        bytes[2 * i] = UInt8(v & 0xff)
        bytes[2 * i + 1] = UInt8(v >> 8)
    }
    return bytes
}()

func wavFile(seconds: Int, title: String? = nil, artist: String? = nil, album: String? = nil) -> [UInt8] {
    func u32(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24 & 0xff)] }
    var info: [UInt8] = []
    for (id, value) in [("INAM", title), ("IART", artist), ("IPRD", album)] {
        guard let value else { continue }
        var text = Array(value.utf8) + [0]
        if text.count % 2 == 1 { text.append(0) }
        info += Array(id.utf8) + u32(text.count) + text
    }
    let list = info.isEmpty ? [] : Array("LIST".utf8) + u32(4 + info.count) + Array("INFO".utf8) + info
    // 440 Hz repeats exactly every second at 8 kHz: one second is computed once (in a debug build the sample loop took
    // seconds of a cooperative thread per fixture).
    var samples: [UInt8] = []
    samples.reserveCapacity(seconds * 16000)
    for _ in 0..<seconds { samples += oneSecondOf440Hz }
    // The project's header (RIFF, `fmt `, `data`), with the tags between `fmt ` and `data`, counted in the RIFF size.
    var file = WAV.header(format: try! AudioFormat(sampleRate: 8000, channels: 1, sampleFormat: .s16le), dataBytes: UInt32(samples.count))
    file.insert(contentsOf: list, at: WAV.headerSize - 8)
    file.replaceSubrange(4..<8, with: u32(file.count - 8 + samples.count))
    return file + samples
}

/// Simulated speakers, a controller over them, a media folder, the hub on a free loopback port, on a manual clock.
final class HubFixture: Sendable {
    let sim: SpeakerSimulation
    let controller: SpeakerController
    let speakers: ControllerSpeakers
    let follower: Task<Void, Never>
    let clock: ManualClock
    let api: HubAPI
    let hub: RunningHub
    let mediaDir: String

    var port: Int { hub.port }
    var ids: [UInt64] { sim.speakers.map(\.deviceId) }

    /// The wall clock's time when the fixture starts (since the Unix epoch): 2026-01-01 00:00:00 UTC.
    static let wallClockAtStart = Duration.seconds(1_767_225_600)

    static let songs: [(file: String, seconds: Int, title: String?, artist: String?, album: String?)] = [
        ("a-song.wav", 20, "I Will Run To You", "Hillsong", "Simply Worship"),
        ("b-untagged.wav", 3, nil, nil, nil),
        ("notes.txt", 0, nil, nil, nil),
    ]

    private init(sim: SpeakerSimulation, controller: SpeakerController, speakers: ControllerSpeakers, follower: Task<Void, Never>,
                 clock: ManualClock, api: HubAPI, hub: RunningHub, mediaDir: String) {
        self.sim = sim; self.controller = controller; self.speakers = speakers; self.follower = follower; self.clock = clock; self.api = api
        self.hub = hub; self.mediaDir = mediaDir
    }

    /// `streaming`: the hub plays with `StreamingPlayer` (audio to the speakers, real time); else with `ControlPlayer`
    /// (no audio, elapsed time on the manual clock).
    static func start(speakers: Int = 2, sessionTimeout: Duration = .seconds(3600), streaming: Bool = false) async throws -> HubFixture {
        let dir = try TemporaryDirectory.make("hub-media")
        for song in songs {
            let bytes = song.file.hasSuffix(".wav") ? wavFile(seconds: song.seconds, title: song.title, artist: song.artist, album: song.album)
                : Array("not audio".utf8)
            _ = FileManager.default.createFile(atPath: dir + "/" + song.file, contents: Data(bytes))
        }
        let sim = try await SpeakerSimulation.start(count: speakers)
        let endpoints = sim.endpoints.map { e -> (host: String, port: UInt16) in
            let parts = e.split(separator: ":")
            return (String(parts[0]), UInt16(parts[1])!)
        }
        // Every reply of a simulated speaker comes: a long timeout keeps a loaded machine's delays from looking like
        // a lost reply (the hub would answer 502).
        let controller = try await SpeakerController.connect(endpoints, options: RequestOptions(timeout: .seconds(30)))
        let clock = ManualClock()
        let now: @Sendable () -> Duration = { clock.now.offset }
        // The wall clock: `wallClockAtStart` plus the manual clock's time.
        let wall: @Sendable () -> Duration = { HubFixture.wallClockAtStart + clock.now.offset }
        let player: any HubPlayer = streaming ? StreamingPlayer(controller: controller) : ControlPlayer(controller: controller, now: now)
        let sleep: @Sendable (Duration) async throws -> Void = { try await clock.sleep(for: $0) }
        let speakers = ControllerSpeakers(controller, now: now, sleep: sleep, wallClock: wall,
                                          connect: { host, port in try await SpeakerSession.connect(host: host, port: port, options: RequestOptions(timeout: .seconds(30))) })
        let api = HubAPI(speakers: speakers, player: player, media: try MediaFolder(path: dir), sessionTimeout: sessionTimeout, now: now,
                         sleep: sleep, wallClock: wall)
        let follower = api.followSpeakers()
        let hub = try await SpeakerHubServer.start(api, host: "127.0.0.1", port: 0)
        return HubFixture(sim: sim, controller: controller, speakers: speakers, follower: follower, clock: clock, api: api, hub: hub, mediaDir: dir)
    }

    func get(_ target: String) async throws -> HTTPAnswer { try await httpGet(port, target) }

    /// A new session's id.
    func session(priority: Int? = nil) async throws -> String {
        let answer = try await get("/v1/init_session" + (priority.map { "?Priority=\($0)" } ?? ""))
        guard answer.status == 200, let id = try answer.string("SessionID") else { throw TestFailure("init_session: \(answer.body)") }
        return id
    }

    func stop() async {
        await hub.stop()
        follower.cancel()
        await speakers.close()
        await controller.close()
        await sim.shutdown()
        try? FileManager.default.removeItem(atPath: mediaDir)
    }
}

/// Runs `body` with a started fixture and always stops it.
func withHub(speakers: Int = 2, sessionTimeout: Duration = .seconds(3600), streaming: Bool = false,
             _ body: @escaping @Sendable (HubFixture) async throws -> Void) async throws {
    try await withTimeLimit {
        let fixture = try await HubFixture.start(speakers: speakers, sessionTimeout: sessionTimeout, streaming: streaming)
        do {
            try await body(fixture)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }
}
