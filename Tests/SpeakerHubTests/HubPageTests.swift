import OrderedJSON
import Foundation
import HummingbirdWSClient
import Logging
import SpeakerHubCore
import SpeakerSession
import Spawn
import Synchronization
import TestSupport
import Testing

/// The control page in a real headless browser (Debian's chromium): the DOM lists the simulated speakers and the
/// media and shows the player; the page's script opened a session of its own; the screenshot is an image of the
/// page's size that is not blank. Fails (does not skip) without chromium: tools/install-deps.sh installs it.
@Suite("Hub control page in headless chromium")
struct HubPageTests {
    static func chromium() throws -> String { try HeadlessChromium.path() }

    static func run(_ program: String, _ arguments: [String], limit: Double = 90) async throws -> (status: Int32, output: String) {
        try await HeadlessChromium.run(program, arguments, limit: limit)
    }

    static func browser(_ profile: String, _ extra: [String]) -> [String] { HeadlessChromium.arguments(profile, extra) }

    @Test func pageListsSpeakersAndMediaAndRendersInChromium() async throws {
        let chromium = try Self.chromium()
        try await withHub { hub in
            let s = "SessionID=\(try await hub.session())"
            let pid = MediaInfo.persistentID(of: "a-song.wav")
            #expect(try await hub.get("/v1/play_hub_media_party_mode?\(s)&PersistentID=\(pid)").status == 200)
            hub.clock.advance(by: .seconds(15))
            let page = try await hub.get("/")
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true)

            let profile = try TemporaryDirectory.make("hub-chromium")
            defer { try? FileManager.default.removeItem(atPath: profile) }
            let url = "http://127.0.0.1:\(hub.port)/"
            let sessionsBefore = await hub.api.sessions.entries.count
            let dom = try await Self.run(chromium, Self.browser(profile, ["--virtual-time-budget=3000", "--dump-dom", url]))
            #expect(dom.status == 0, "chromium --dump-dom exited \(dom.status)")
            for speaker in hub.sim.speakers {
                #expect(dom.output.contains("data-device-id=\"\(speaker.deviceId)\""), "speaker \(speaker.deviceId) row")
                #expect(dom.output.contains(speaker.deviceInfo.deviceName.value), "speaker name")
            }
            #expect(dom.output.contains("I Will Run To You") && dom.output.contains("Hillsong") && dom.output.contains("b-untagged"))
            #expect(dom.output.contains("data-persistent-id=\"\(pid)\""))
            #expect(dom.output.contains("data-state=\"PlayerStatePlaying\"") && dom.output.contains(">Playing<"), "the state by name")
            #expect(dom.output.contains("0:15"), "elapsed time shown")
            #expect(dom.output.contains("id=\"pause\"") && dom.output.contains("id=\"stop\""))
            // A page view holds no session of its own: its JSON-RPC connection opens one when the page first acts, and
            // the hub closes it with the socket. (That the script follows the hub live is the next test's: a dump
            // under virtual time may be taken before the WebSocket connected on a busy machine.)
            #expect(await hub.api.sessions.entries.count == sessionsBefore, "no session left behind by a page view")

            let shot = profile + "/page.png"
            let width = 900, height = 700
            let taken = try await Self.run(chromium, Self.browser(profile, [
                "--hide-scrollbars", "--window-size=\(width),\(height)", "--screenshot=\(shot)", url]))
            #expect(taken.status == 0, "chromium --screenshot exited \(taken.status)")
            let png = try #require(FileManager.default.contents(atPath: shot), "no screenshot at \(shot)")
            #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature")
            func u32(_ at: Int) -> Int { png[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
            #expect(String(decoding: png[12..<16], as: UTF8.self) == "IHDR")
            #expect(u32(16) == width && u32(20) == height, "screenshot is \(u32(16))×\(u32(20))")
            let pixels = try await Self.run("/usr/bin/env", ["python3", "-c", Self.pngStatistics, shot])
            let words = pixels.output.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            try #require(words.count == 4, "pixel statistics: \(pixels.output)")
            #expect(Int(words[0]) == width && Int(words[1]) == height)
            // Not blank: many colours (header, table, text), and much of the page is not the background colour.
            #expect(words[2] >= 8, "only \(words[2]) colours")
            #expect(words[3] >= 0.05, "only \(words[3]) of the pixels differ from the most common colour")
        }
    }

    /// The page follows the hub over its JSON-RPC WebSocket in a running Chromium driven through the DevTools
    /// protocol: it lists the speakers, a volume set by another client moves its slider, moving the progress bar seeks
    /// (the hub's player is at the new position and the page shows it), and an error stays listed while the player
    /// goes on, until it is dismissed.
    @Test func thePageListsSpeakersSeeksAndKeepsErrorsInChromium() async throws {
        let chromium = try Self.chromium()
        try await withHub { hub in
            let s = "SessionID=\(try await hub.session())"
            let pid = MediaInfo.persistentID(of: "a-song.wav")
            #expect(try await hub.get("/v1/play_hub_media_party_mode?\(s)&PersistentID=\(pid)").status == 200)
            let profile = try TemporaryDirectory.make("hub-cdp")
            defer { try? FileManager.default.removeItem(atPath: profile) }
            let browser = try await offThePool {
                try ChildProcess(chromium, HeadlessChromium.arguments(profile, [
                    "--remote-debugging-port=0", "--remote-allow-origins=*", "http://127.0.0.1:\(hub.port)/"]), environment: try HeadlessChromium.environment(),
                                 stdout: .null, stderr: .null)
            }
            defer { browser.terminate() }
            let page = try await DevToolsPage.open(profile: profile)
            defer { page.close() }

            try await waitUntil("the page is connected and lists both speakers", within: 60) {
                // (The page may still be loading: no #player yet.)
                try await page.evaluate("document.getElementById('player')?.dataset.live + ' ' + document.querySelectorAll('tr.speaker').length") == .string("yes 2")
            }
            let listed = try await page.evaluate("[...document.querySelectorAll('tr.speaker')].map(r => r.dataset.deviceId).join(',')")
            #expect(listed == .string(hub.ids.map(String.init).joined(separator: ",")))
            // Another client's change is pushed to the page.
            #expect(try await hub.get("/v1/set_volume_device?\(s)&DeviceID=\(hub.ids[1])&Volume=41").status == 200)
            try await waitUntil("the slider follows the pushed volume", within: 60) {
                try await page.evaluate("document.querySelector('tr.speaker[data-device-id=\"\(hub.ids[1])\"] .volume').value") == .string("41")
            }
            // Seek: the progress bar moved as a user does (input, then change).
            _ = try await page.evaluate("const b = document.getElementById('progress'); b.value = 12; b.dispatchEvent(new Event('input')); b.dispatchEvent(new Event('change')); 1")
            try await waitUntil("the hub's player is at 12 s", within: 60) { await hub.api.player.playback().elapsed == .seconds(12) }
            try await waitUntil("the page shows 0:12", within: 60) { try await page.evaluate("document.getElementById('elapsed').textContent") == .string("0:12") }
            // An error (a seek beyond the end) stays listed while positions come, until dismissed.
            _ = try await page.evaluate("call('Player.Seek', { position: 999 }); 1")
            try await waitUntil("the error is listed", within: 60) {
                try await page.evaluate("document.querySelectorAll('#problems li').length") == .int(1)
            }
            let message = try await page.evaluate("document.querySelector('#problems li span').textContent")
            #expect(message.map { "\($0)" }?.contains("NotSeekable") == true, "\(String(describing: message))")
            try await waitUntil("the position ticker sleeps") { hub.clock.pendingSleeps >= 1 }
            hub.clock.advance(by: .seconds(1))
            try await waitUntil("the page shows the pushed position 0:13", within: 60) {
                try await page.evaluate("document.getElementById('elapsed').textContent") == .string("0:13")
            }
            #expect(try await page.evaluate("document.querySelectorAll('#problems li').length") == .int(1), "the error is still there")
            _ = try await page.evaluate("document.querySelector('#problems .dismiss').click(); 1")
            #expect(try await page.evaluate("document.querySelectorAll('#problems li').length") == .int(0))
            browser.terminate()
            _ = await browser.exited(within: 10)
        }
    }

    /// Decodes an 8-bit RGB or RGBA PNG (zlib, the five scanline filters) and prints: width height distinct-colours
    /// fraction-not-most-common.
    static let pngStatistics = #"""
    import struct, sys, zlib
    d = open(sys.argv[1], 'rb').read()
    pos, idat = 8, b''
    while pos < len(d):
        n, = struct.unpack('>I', d[pos:pos + 4]); t = d[pos + 4:pos + 8]; c = d[pos + 8:pos + 8 + n]; pos += 12 + n
        if t == b'IHDR': w, h, depth, kind = struct.unpack('>IIBB', c[:10])
        elif t == b'IDAT': idat += c
    assert depth == 8 and kind in (2, 6), (depth, kind)
    bpp = 3 if kind == 2 else 4
    raw, stride, i = zlib.decompress(idat), w * bpp, 0
    prev, counts = bytearray(stride), {}
    for y in range(h):
        f = raw[i]; i += 1
        line = bytearray(raw[i:i + stride]); i += stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            k = bytes(line[x:x + 3]); counts[k] = counts.get(k, 0) + 1
        prev = line
    print(w, h, len(counts), 1 - max(counts.values()) / (w * h))
    """#
}

/// One page of a Chromium started with `--remote-debugging-port=0`, driven over the DevTools protocol's WebSocket
/// (Runtime.evaluate): the port from the profile's DevToolsActivePort, the page from `/json/list`.
final class DevToolsPage: Sendable {
    let socket: RPCSocket

    private init(socket: RPCSocket) { self.socket = socket }

    static func open(profile: String) async throws -> DevToolsPage {
        var port = 0
        try await waitUntil("chromium's DevToolsActivePort", within: 60) {
            let text = (try? await offThePool { try String(contentsOfFile: profile + "/DevToolsActivePort", encoding: .utf8) }) ?? ""
            port = text.split(separator: "\n").first.flatMap { Int($0) } ?? 0
            return port > 0
        }
        var target = ""
        try await waitUntil("chromium's page target", within: 60) {
            guard let list = try? await httpGet(port, "/json/list"), case let .array(pages)? = try? OrderedJSON.parse(Array(list.body.utf8)) else { return false }
            // Its webSocketDebuggerUrl names the host as the request's Host header did (no port): the id is enough.
            guard let page = pages.first(where: { $0["type"] == .string("page") }), case let .string(id)? = page["id"] else { return false }
            target = "ws://127.0.0.1:\(port)/devtools/page/\(id)"
            return true
        }
        return DevToolsPage(socket: RPCSocket(url: target))
    }

    private let next = Mutex(1)

    /// The value of `expression` in the page (nil when it has none, e.g. undefined).
    func evaluate(_ expression: String) async throws -> OrderedJSON? {
        let id = next.withLock { n in defer { n += 1 }; return n }
        let request = OrderedJSON.object([("id", .int(id)), ("method", .string("Runtime.evaluate")),
                                      ("params", .object([("expression", .string(expression)), ("returnByValue", .bool(true))]))])
        socket.send(request.rendered)
        let answer = try await socket.answer(id)
        if let exception = answer["result"]?["exceptionDetails"] { throw TestFailure("\(expression): \(exception.rendered)") }
        return answer["result"]?["result"]?["value"]
    }

    func close() { socket.close() }
}
