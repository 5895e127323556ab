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
import TuneupKit

/// Simulated blank units on TCP (instant timing; `failShare` of them fail a test), the shipped recipe and a records
/// file in a temporary directory.
struct PageFixture: Sendable {
    let server: SimulatorServer
    let store: SQLiteRecordStore
    let recipe: LoadedRecipe
    let directory: String

    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static func make(units: Int, failShare: Double = 0, seed: UInt64 = 1) async throws -> PageFixture {
        let directory = try TemporaryDirectory.make("station-page")
        let recipe = try await offThePool { try ProvisioningRecipe.load(path: try writeShippedRecipe(to: directory)) }
        var options = SimulatorOptions(timeScale: 0)
        options.production = ProductionLine(seed: seed, failShare: failShare)
        let server = try await SimulatorServer.listenTCP(count: units, statePath: nil, options: options)
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        return PageFixture(server: server, store: store, recipe: recipe, directory: directory)
    }

    var slots: [Slot] { server.endpoints.map { Slot(address: $0) } }

    func station(name: String, operatorName: String = "", store: (any RecordStore)? = nil,
                 onEvent: @escaping @Sendable (StationEvent) -> Void) -> Station {
        var connection = ConnectionOptions()
        connection.session.timeout = .seconds(30)
        return Station(recipe: recipe, store: store ?? self.store, options: StationOptions(
            devices: .real, station: name, operatorName: operatorName, toolVersion: "test", connection: connection, deviceWait: .seconds(10),
            pollInterval: .milliseconds(50)), onEvent: onEvent)
    }

    func close() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A WebSocket client of a page's `/ws`: every text message it receives, with when it arrived.
final class PageSocket: Sendable {
    let messages: AsyncStream<(text: String, at: ContinuousClock.Instant)>
    private let task: Task<Void, any Error>

    init(port: Int) {
        let (stream, continuation) = AsyncStream<(text: String, at: ContinuousClock.Instant)>.makeStream()
        messages = stream
        var logger = Logger(label: "test.page-socket")
        logger.logLevel = .critical
        task = Task {
            defer { continuation.finish() }
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/ws", configuration: .init(maxFrameSize: 1 << 24), logger: logger
            ) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 24) {
                    if case let .text(text) = message { continuation.yield((text, ContinuousClock.now)) }
                }
            }
        }
    }

    func close() { task.cancel() }
}

/// A pushed message, decoded.
struct PageMessage: Decodable {
    var seq: Int
    var changes: Int
    var sections: [String: AnyJSON]
}

/// Any JSON value (for reading a message's sections).
enum AnyJSON: Decodable, Equatable {
    case null, bool(Bool), number(Double), string(String), array([AnyJSON]), object([String: AnyJSON])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([AnyJSON].self) { self = .array(a) }
        else { self = .object(try c.decode([String: AnyJSON].self)) }
    }

    subscript(_ key: String) -> AnyJSON? { if case let .object(o) = self { o[key] } else { nil } }
    var string: String? { if case let .string(s) = self { s } else { nil } }
    var number: Double? { if case let .number(n) = self { n } else { nil } }
    var array: [AnyJSON] { if case let .array(a) = self { a } else { [] } }
}

func decodeMessage(_ text: String) throws -> PageMessage {
    try JSONDecoder().decode(PageMessage.self, from: Data(text.utf8))
}

/// Headless Chromium (Debian's), as the hub's page test runs it.
enum Browser {
    static func chromium() throws -> String { try HeadlessChromium.path() }

    static func run(_ program: String, _ arguments: [String], limit: Double = 90) async throws -> (status: Int32, output: String) {
        try await HeadlessChromium.run(program, arguments, limit: limit)
    }

    static func arguments(_ profile: String, _ extra: [String]) -> [String] { HeadlessChromium.arguments(profile, extra) }

    /// The page's DOM after its script ran (and opened its WebSocket).
    static func dumpDOM(_ url: String) async throws -> String {
        let chromium = try chromium()
        let profile = try TemporaryDirectory.make("page-chromium")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let dom = try await run(chromium, arguments(profile, ["--virtual-time-budget=3000", "--dump-dom", url]))
        guard dom.status == 0 else { throw TestFailure("chromium --dump-dom exited \(dom.status)") }
        return dom.output
    }

    /// A screenshot of the page in the tests' output directory ($TUNEUP_TEST_OUTPUT, else .build/test-output);
    /// returns its bytes.
    static func screenshot(_ url: String, name: String, width: Int = 1100, height: Int = 900) async throws -> (path: String, png: Data) {
        let chromium = try chromium()
        let output = ProcessInfo.processInfo.environment["TUNEUP_TEST_OUTPUT"] ?? (PageFixture.root + "/.build/test-output")
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let shot = output + "/\(name).png"
        try? FileManager.default.removeItem(atPath: shot)
        let profile = try TemporaryDirectory.make("page-chromium")
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let taken = try await run(chromium, arguments(profile, [
            "--hide-scrollbars", "--window-size=\(width),\(height)", "--virtual-time-budget=2000", "--screenshot=\(shot)", url]))
        guard taken.status == 0 else { throw TestFailure("chromium --screenshot exited \(taken.status)") }
        guard let png = FileManager.default.contents(atPath: shot) else { throw TestFailure("no screenshot at \(shot)") }
        return (shot, png)
    }

    /// Width and height of a PNG (its IHDR), nil when it is not one.
    static func pngSize(_ png: Data) -> (Int, Int)? {
        let bytes = [UInt8](png)
        guard bytes.count > 24, Array(bytes.prefix(8)) == [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
              String(decoding: bytes[12..<16], as: UTF8.self) == "IHDR" else { return nil }
        func u32(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (u32(16), u32(20))
    }
}

/// The elements of `html` that carry `attribute="value"` (the opening tags, as text).
func tags(in html: String, with attribute: String) -> [String] {
    var found: [String] = []
    var rest = html[...]
    while let range = rest.range(of: " \(attribute)=\"") {
        let start = rest[..<range.lowerBound].lastIndex(of: "<") ?? range.lowerBound
        let end = rest[range.upperBound...].firstIndex(of: ">") ?? rest.endIndex
        found.append(String(rest[start..<end]))
        rest = rest[end...]
    }
    return found
}

/// The value of `attribute` in an opening tag.
func attribute(_ name: String, of tag: String) -> String? {
    guard let range = tag.range(of: " \(name)=\"") else { return nil }
    return String(tag[range.upperBound...].prefix { $0 != "\"" })
}
