import Foundation
import HummingbirdWSClient
import Logging
import Recipe
import Records
import HeadsetSimulator
import Spawn
import Station
import StationPage
import Synchronization
import TestSupport
import Testing
import TuneupKit

/// A scan and a prompt answered on the operator page in a real headless Chromium, driven through its DevTools
/// protocol as an operator would: the scan's input has the keyboard (a barcode scanner types into it), a misread is
/// shown on the tile and not taken, the prompt's image is served, PASS is a click; the answers are recorded as
/// given on the page.
@Suite struct PromptBrowserTests {
    /// A 1×1 PNG: the prompt's image.
    static let png: [UInt8] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41,
        0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ]

    @Test func aScanAndAPromptAreAnsweredOnThePage() async throws {
        let directory = try TemporaryDirectory.make("prompt-page")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (path, recipe) = try await offThePool {
            try FileManager.default.createDirectory(atPath: directory + "/images", withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: directory + "/images/led.png", contents: Data(Self.png))
            let path = try writeShippedRecipe(to: directory) { text in
                text.replacingOccurrences(of: "tests:\n", with: """
                    tests:
                      - prompt: { name: led-blue, text: Is the status LED blue?, image: images/led.png, answer: pass-fail }

                    """) + "\nscan:\n  label: PCB serial\n  pattern: \"PCB-[0-9]{13}\"\n  check-digit: gs1\n"
            }
            return (path, try ProvisioningRecipe.load(path: path))
        }
        let simulator = try await PageStation.simulatedHeadset()
        defer { Task { await simulator.shutdown() } }
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let desk = OperatorDesk()
        let prompt = try #require(recipe.recipe.prompts?.first)
        let image = try #require(recipe.image(of: prompt))
        let page = try await PageStation.start(recipe: recipe, path: path, store: store, desk: desk, directory: directory,
                                               images: ["led-blue": PromptImage(path: image.path, mediaType: image.mediaType)])
        defer { page.close() }
        let (station, devTools) = (page.station, page.devTools)

        let slot = Slot(address: simulator.endpoints[0])
        let running = Task { try await station.run(slots: [slot]) }
        let scan = try await withTimeLimit(60) {
            while true {
                if running.isCancelled { throw TestFailure("the station ended") }
                if let found = desk.waiting.first(where: { $0.step == "scan" }) { return found }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        // The page is opened again with its WebSocket held shut until the test lets it connect: a scan given while
        // the page is still connecting is kept and sent when the socket opens, not dropped.
        _ = try await devTools.call("Page.enable", "{}")
        _ = try await devTools.evaluate("window.beforeReload = 'yes'")
        _ = try await devTools.call("Page.addScriptToEvaluateOnNewDocument", String(decoding: try JSONSerialization.data(
            withJSONObject: ["source": DevTools.heldWebSocket]), as: UTF8.self))
        _ = try await devTools.call("Page.reload", "{}")
        var seen = ""
        try await DevTools.waitUntil("the page loaded again with its socket held (last seen: \(seen))", within: 60) {
            seen = try await devTools.evaluate("[document.readyState, typeof window.releaseSockets, document.body.dataset.link, window.beforeReload].join(' ')")
            return seen == "complete function connecting "
        }
        // The scan's input takes the keyboard by itself: the text goes where the page put the focus.
        try await DevTools.waitUntil("the page focused the scan's input", within: 60) {
            try await devTools.evaluate("document.activeElement && document.activeElement.dataset.prompt || ''") == "\(scan.id)"
        }
        try await devTools.type("PCB-4006381333932")
        _ = try await devTools.evaluate("document.activeElement.form.requestSubmit(), 'sent'")
        #expect(try await devTools.evaluate("document.body.dataset.unsent || 'none'") == "1", "the scan waits for the socket")
        _ = try await devTools.evaluate("window.releaseSockets(), 'released'")
        try await DevTools.waitUntil("the misread is shown on the tile", within: 60) {
            try await devTools.evaluate("(document.querySelector('.prompt .refusal') || {}).textContent || ''").contains("check digit")
        }
        #expect(desk.waiting.first?.id == scan.id, "a misread is not taken")
        try await devTools.type("PCB-4006381333931")
        _ = try await devTools.evaluate("document.activeElement.form.requestSubmit(), 'sent'")

        // The prompt: its text, its image (served from the recipe's folder) and PASS/FAIL.
        try await DevTools.waitUntil("the LED prompt is on the tile with its image", within: 60) {
            try await devTools.evaluate("""
                (() => { const i = document.querySelector('.prompt[data-step="prompt:led-blue"] img');
                         return i && i.complete && i.naturalWidth === 1 ? 'shown' : ''; })()
                """) == "shown"
        }
        #expect(try await devTools.evaluate("document.querySelector('.prompt .ask').textContent").hasSuffix("Is the status LED blue?"))
        _ = try await devTools.evaluate("document.querySelector('.prompt button.pass').click(), 'clicked'")
        let results = try await withTimeLimit(120) { try await running.value }
        #expect(results.map(\.outcome) == [.pass], "\(results)")
        try await DevTools.waitUntil("the tile's prompt is gone", within: 60) {
            try await devTools.evaluate("String(document.querySelectorAll('.prompt').length)") == "0"
        }
        let runID = try #require(results.first?.run)
        let run = try #require(try await store.run(RunID(runID)))
        #expect(run.answers.map(\.value) == ["PCB-4006381333931", "pass"])
        #expect(run.answers.allSatisfy { $0.source == "page" && $0.answeredBy == "ann" })
        await page.stop()
    }
}

/// A station serving its operator page (as `ann`, station "page"), with a headless Chromium showing that page and
/// attached over DevTools: the common start of the page tests that act as an operator.
struct PageStation {
    let feed: StationFeed
    let server: PageServer
    let station: Station
    let chromium: ChildProcess
    let devTools: DevTools

    /// One simulated headset on TCP whose units all pass, on no clock (time scale 0).
    static func simulatedHeadset() async throws -> SimulatorServer {
        var options = SimulatorOptions(timeScale: 0)
        options.production = ProductionLine(seed: 1, failShare: 0)
        return try await SimulatorServer.listenTCP(count: 1, statePath: nil, options: options)
    }

    static func start(recipe: LoadedRecipe, path: String, store: any RecordStore, desk: OperatorDesk, directory: String,
                      images: [String: PromptImage] = [:]) async throws -> PageStation {
        let feed = StationFeed(store: store, station: "page", recipe: path, operatorName: "ann", desk: desk, images: images)
        await feed.start()
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0))
        var connection = ConnectionOptions()
        connection.session.timeout = .seconds(30)
        let station = Station(recipe: recipe, store: store, options: StationOptions(
            devices: .real, station: "page", operatorName: "ann", toolVersion: "test", connection: connection, deviceWait: .seconds(10)), desk: desk) {
            feed.handle($0)
        }
        let profile = directory + "/chromium"
        let chromium = try await offThePool {
            try ChildProcess(try Browser.chromium(), Browser.arguments(profile, ["--remote-debugging-port=0", "--remote-allow-origins=*", server.url]),
                             environment: try HeadlessChromium.environment(), stdout: .null, stderr: .null)
        }
        do {
            let devTools = try await DevTools.attach(profile: profile, pageURL: server.url)
            return PageStation(feed: feed, server: server, station: station, chromium: chromium, devTools: devTools)
        } catch {
            chromium.terminate()
            throw error
        }
    }

    /// Ends the DevTools connection and the browser at once (for a test that fails: `defer`).
    func close() {
        devTools.close()
        chromium.terminate()
    }

    /// Ends the browser (waiting for it), the page server and the feed.
    func stop() async {
        close()
        _ = await chromium.exited(within: 10)
        await server.stop()
        feed.stop()
    }
}

/// A minimal client of Chromium's DevTools protocol: attached to the page's target, it evaluates script in the page
/// and types text (as a keyboard, or a barcode scanner, would) into the element that has the focus.
final class DevTools: Sendable {
    private let send: AsyncStream<String>.Continuation
    final class Replies: Sendable {
        let state = Mutex<(next: Int, waiting: [Int: CheckedContinuation<String, any Error>])>((1, [:]))
    }
    private let replies = Replies()
    private let task = Mutex<Task<Void, any Error>?>(nil)
    private let session = Mutex<String?>(nil)

    private init(url: String) {
        let (outgoing, send) = AsyncStream.makeStream(of: String.self)
        self.send = send
        let logger = {
            var logger = Logger(label: "test.devtools")
            logger.logLevel = .critical
            return logger
        }()
        let replies = self.replies
        task.withLock { $0 = Task {
            defer { replies.state.withLock { r in for (_, w) in r.waiting { w.resume(throwing: TestFailure("the DevTools connection ended")) }; r.waiting = [:] } }
            try await Self.connect(url: url, logger: logger, outgoing: outgoing, replies: replies)
        } }
    }

    private static func connect(url: String, logger: Logger, outgoing: AsyncStream<String>, replies: Replies) async throws {
            _ = try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 24), logger: logger) { inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { for await text in outgoing { try await outbound.write(.text(text)) } }
                    group.addTask {
                        for try await message in inbound.messages(maxSize: 1 << 24) {
                            guard case let .text(text) = message,
                                  let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                                  let id = object["id"] as? Int else { continue }
                            let waiter = replies.state.withLock { $0.waiting.removeValue(forKey: id) }
                            waiter?.resume(returning: text)
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
    }

    /// Waits for the browser's DevTools port (the profile's DevToolsActivePort file), connects, and attaches to the
    /// page at `pageURL`.
    static func attach(profile: String, pageURL: String) async throws -> DevTools {
        var endpoint: String?
        try await DevTools.waitUntil("chromium's DevTools port", within: 60) {
            let text = try? await offThePool { try String(contentsOfFile: profile + "/DevToolsActivePort", encoding: .utf8) }
            let lines = text?.split(separator: "\n") ?? []
            guard lines.count >= 2 else { return false }
            endpoint = "ws://127.0.0.1:\(lines[0])\(lines[1])"
            return true
        }
        let devTools = DevTools(url: try #require(endpoint))
        var target: String?
        try await DevTools.waitUntil("the page's target", within: 60) {
            let reply = try await devTools.call("Target.getTargets", "{}", attached: false)
            let infos = (((try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any])?["result"] as? [String: Any])?["targetInfos"] as? [[String: Any]]) ?? []
            target = infos.first { $0["type"] as? String == "page" && ($0["url"] as? String ?? "").hasPrefix(pageURL) }?["targetId"] as? String
            return target != nil
        }
        let attached = try await devTools.call("Target.attachToTarget", "{\"targetId\":\"\(try #require(target))\",\"flatten\":true}", attached: false)
        let session = ((try JSONSerialization.jsonObject(with: Data(attached.utf8)) as? [String: Any])?["result"] as? [String: Any])?["sessionId"] as? String
        devTools.session.withLock { $0 = session }
        return devTools
    }

    /// Sends a command (its params as JSON text) and returns the reply's JSON text; a reply that is an error throws.
    func call(_ method: String, _ params: String, attached: Bool = true) async throws -> String {
        let session = attached ? self.session.withLock { $0 } : nil
        let (replies, send) = (self.replies, self.send)
        let reply = try await withTimeLimit(60) {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
                let id = replies.state.withLock { r -> Int in
                    defer { r.next += 1 }
                    r.waiting[r.next] = continuation
                    return r.next
                }
                let sessionField = session.map { ",\"sessionId\":\"\($0)\"" } ?? ""
                send.yield("{\"id\":\(id),\"method\":\"\(method)\",\"params\":\(params)\(sessionField)}")
            }
        }
        if let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any], object["error"] != nil {
            throw TestFailure("DevTools \(method) failed: \(reply)")
        }
        return reply
    }

    /// The value of `expression` in the page, as text.
    func evaluate(_ expression: String) async throws -> String {
        let params = String(decoding: try JSONSerialization.data(withJSONObject: ["expression": expression, "returnByValue": true]), as: UTF8.self)
        let reply = try await call("Runtime.evaluate", params)
        let object = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any]
        let value = ((object?["result"] as? [String: Any])?["result"] as? [String: Any])?["value"]
        return value.map { "\($0)" } ?? ""
    }

    /// `waitUntil` at the pace of a person looking at the page: a condition every 20 ms (each evaluation is a task on
    /// the page's main thread).
    static func waitUntil(_ what: @autoclosure () -> String, within seconds: Double, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try await !condition() {
            if ContinuousClock.now > deadline { throw TestFailure("\(what()) did not happen within \(seconds) s") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A page script that holds every WebSocket the page opens shut (`readyState` 0) until `releaseSockets()` is
    /// called, then connects it for real: the page as it is while its socket is still connecting.
    static let heldWebSocket = """
        (() => {
          const Real = window.WebSocket, held = [];
          window.releaseSockets = () => { for (const go of held.splice(0)) go(); };
          window.WebSocket = class {
            constructor(url) {
              this.readyState = 0;
              held.push(() => {
                const real = new Real(url);
                this.real = real;
                real.onopen = e => { this.readyState = 1; if (this.onopen) this.onopen(e); };
                real.onmessage = e => { if (this.onmessage) this.onmessage(e); };
                real.onclose = e => { this.readyState = 3; if (this.onclose) this.onclose(e); };
              });
            }
            send(text) { this.real.send(text); }
            close() { if (this.real) this.real.close(); }
          };
        })();
        """

    /// Types `text` into the focused element.
    func type(_ text: String) async throws {
        let params = String(decoding: try JSONSerialization.data(withJSONObject: ["text": text]), as: UTF8.self)
        _ = try await call("Input.insertText", params)
    }

    func close() {
        send.finish()
        task.withLock { $0?.cancel() }
    }
}
