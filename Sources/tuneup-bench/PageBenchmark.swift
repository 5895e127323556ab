import ArgumentParser
import Foundation
import HummingbirdWSClient
import Logging
import Records
import Spawn
import Station
import StationPage
import Support
import Synchronization

extension Bench {
    struct Page: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The operator page's push latency: a station event to a connected WebSocket client's receipt.",
            discussion: """
                Serves a station's page (StationPage, on loopback) with a connected WebSocket client, and feeds it \
                --events station events (unit progress across --slots slots, one every --interval milliseconds), as \
                a running station's listener does. Each event's latency is from the listener's call to the arrival \
                of the first message that includes it (messages are coalesced for a client that reads slowly). \
                Goal: p99 <= 150 ms. Also prints the listener's own time per event (the station's cost).
                """)
        @Option(help: "Station events fed to the page.") var events = 500
        @Option(help: "Milliseconds between events.") var interval = 5.0
        @Option(help: "Slots the events are spread over.") var slots = 8
        @Flag(help: "Measure to a headless Chromium's DOM: the page acknowledges each message once it is drawn.") var browser = false

        func run() async throws {
            guard events >= 1, slots >= 1, interval >= 0 else { throw ValidationError("--events and --slots must be at least 1, --interval at least 0") }
            let r = try await PageBenchmark(events: events, interval: interval, slots: slots, browser: browser).run()
            print("\(r.latencies.count) events over \(slots) slots, one every \(interval) ms; \(r.messages) messages " +
                  (browser ? "drawn and acknowledged by headless Chromium (event to DOM, plus the acknowledgement's way back)" : "received"))
            print(String(format: "push latency: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (goal p99 <= 150 ms)",
                         r.percentile(0.5), r.percentile(0.9), r.percentile(0.99), r.latencies.max() ?? 0))
            print(String(format: "listener time per event (the station's cost): mean %.1f µs, max %.1f µs", r.listenerMean, r.listenerMax))
        }
    }
}

struct PageBenchmark {
    var events: Int
    var interval: Double
    var slots: Int
    var browser = false

    struct Result {
        var latencies: [Double]
        var messages: Int
        var listenerMean: Double
        var listenerMax: Double
        func percentile(_ p: Double) -> Double { Percentile.of(sorted: latencies.sorted(), p * 100) ?? 0 }
    }

    func run() async throws -> Result {
        let directory = NSTemporaryDirectory() + "tuneup-bench-page-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let feed = StationFeed(store: store, station: "bench", operatorName: "bench")
        await feed.start()
        let names = (0..<slots).map { "tcp:127.0.0.1:\(4300 + $0)" }
        feed.handle(.started(slots: names, recipe: "bench.yaml", recipeHash: "", station: "bench"))
        for (k, slot) in names.enumerated() { feed.handle(.arrived(slot: slot, hardwareID: String(format: "%016x", k))) }
        // Receipts: the `changes` count of each message and when it arrived (or, with a browser, when the page's
        // acknowledgement that it drew it arrived).
        let receipts = Receipts()
        let record: @Sendable (Int) -> Void = { changes in
            let now = ContinuousClock.now
            receipts.value.withLock { $0.append((changes, now)) }
        }
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0), applied: browser ? record : nil)
        var logger = Logger(label: "bench.page")
        logger.logLevel = .critical
        var chromium: ChildProcess?
        if browser {
            let path = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
            guard let path else { throw BenchError("--browser needs Debian's chromium (tools/install-deps.sh)") }
            chromium = try ChildProcess(path, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                                               "--user-data-dir=\(directory)/chromium", "--remote-debugging-port=0", server.url],
                                        stdout: .null, stderr: .null)
        }
        let client = Task {
            guard !browser else { return }
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/ws", configuration: .init(maxFrameSize: 1 << 24), logger: logger) {
                inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 24) {
                    let now = ContinuousClock.now
                    guard case let .text(text) = message, let changes = Self.changes(in: text) else { continue }
                    receipts.value.withLock { $0.append((changes, now)) }
                }
            }
        }
        let connectDeadline = ContinuousClock.now + .seconds(60)
        while receipts.value.withLock({ $0.isEmpty }) {
            guard ContinuousClock.now < connectDeadline else {
                chromium?.terminate()
                throw BenchError("the page did not connect within 60 s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }

        var sent: [(changes: Int, at: ContinuousClock.Instant)] = []
        var listener: [Double] = []
        let fractions = (0..<events).map { Double($0 % 100) / 100 }
        for i in 0..<events {
            let slot = names[i % slots]
            let event = StationEvent.progress(slot: slot, hardwareID: String(format: "%016x", i % slots), step: "flash-application", fraction: fractions[i])
            let start = ContinuousClock.now
            feed.handle(event)
            let end = ContinuousClock.now
            listener.append((end - start) / .microseconds(1))
            sent.append((feed.sections.changes, start))
            if interval > 0 { try await Task.sleep(for: .milliseconds(interval)) }
        }
        let last = sent.last?.changes ?? 0
        let deadline = ContinuousClock.now + .seconds(10)
        while receipts.value.withLock({ ($0.last?.changes ?? 0) < last }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        client.cancel()
        if let chromium {
            chromium.terminate()
            _ = await chromium.exited(within: 10)
        }
        await server.stop()
        feed.stop()

        let got = receipts.value.withLock { $0 }
        guard (got.last?.changes ?? 0) >= last else { throw BenchError("the client did not receive every event within 10 s") }
        var latencies: [Double] = []
        var r = 0
        for s in sent {
            while r < got.count, got[r].changes < s.changes { r += 1 }
            guard r < got.count else { break }
            latencies.append((got[r].at - s.at) / .milliseconds(1))
        }
        return Result(latencies: latencies, messages: got.count, listenerMean: listener.reduce(0, +) / Double(listener.count),
                      listenerMax: listener.max() ?? 0)
    }

    final class Receipts: Sendable {
        let value = Mutex<[(changes: Int, at: ContinuousClock.Instant)]>([])
    }

    /// The `changes` count at the start of a message: `{"seq":N,"changes":K,...`.
    static func changes(in text: String) -> Int? {
        guard let range = text.range(of: "\"changes\":") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }
}

/// The operator page beside a benchmarked station: its feed (the station's listener), its server, and a connected
/// WebSocket client that counts what it receives.
struct PageProbe: Sendable {
    let feed: StationFeed
    let server: PageServer
    let client: Task<Void, any Error>
    let received: Counter

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    static func start(store: any RecordStore) async throws -> PageProbe {
        let feed = StationFeed(store: store, station: "bench", operatorName: "bench")
        await feed.start()
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0))
        let received = Counter()
        let (connected, signal) = AsyncStream<Void>.makeStream()
        var logger = Logger(label: "bench.page")
        logger.logLevel = .critical
        let client = Task<Void, any Error> {
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/ws", configuration: .init(maxFrameSize: 1 << 24), logger: logger) {
                inbound, _, _ in
                for try await _ in inbound.messages(maxSize: 1 << 24) {
                    received.value.withLock { $0 += 1 }
                    signal.yield(())
                }
            }
        }
        for await _ in connected { break }
        return PageProbe(feed: feed, server: server, client: client, received: received)
    }

    /// Stops the client, the server and the feed; the messages the client received.
    func stop() async -> Int {
        client.cancel()
        await server.stop()
        feed.stop()
        return received.value.withLock { $0 }
    }
}
