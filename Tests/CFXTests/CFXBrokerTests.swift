import CFX
import CFXPublisher
import Foundation
import Recipe
import Records
import HeadsetSimulator
import Station
import Synchronization
import TestSupport
import Testing
import TuneupKit

/// The publisher against a real broker (a throwaway RabbitMQ with AMQP 1.0, one per test process) and a real
/// consumer (tools/cfx-consume.py, Qpid Proton's Python binding): every message of every unit arrives, once by
/// UniqueID, and says what the records say. Real time (a broker outage of 20 s): tools/test.sh runs it in its
/// real-time group.
@Suite(.serialized) struct CFXBrokerTests {
    /// Blank simulated units, a records file, the shipped recipe and a spool directory.
    struct Line: Sendable {
        let server: SimulatorServer
        let store: SQLiteRecordStore
        let recipe: LoadedRecipe
        let directory: String

        static func make(units: Int, failShare: Double = 0, seed: UInt64 = 1, edit: @escaping @Sendable (String) -> String = { $0 }) async throws -> Line {
            let directory = try TemporaryDirectory.make("cfx")
            let recipe = try await offThePool { try ProvisioningRecipe.load(path: try writeShippedRecipe(to: directory, edit: edit)) }
            var options = SimulatorOptions(timeScale: 0)
            options.production = ProductionLine(seed: seed, failShare: failShare)
            let server = try await SimulatorServer.listenTCP(count: units, statePath: nil, options: options)
            let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
            return Line(server: server, store: store, recipe: recipe, directory: directory)
        }

        var slots: [Slot] { server.endpoints.map { Slot(address: $0) } }
        var spool: String { directory + "/cfx-spool" }

        func station(_ name: String, onEvent: @escaping @Sendable (StationEvent) -> Void) -> Station {
            var connection = ConnectionOptions()
            connection.session.timeout = .seconds(30)
            return Station(recipe: recipe, store: store, options: StationOptions(
                devices: .real, station: name, operatorName: "ana", toolVersion: "test", connection: connection, deviceWait: .seconds(10)), onEvent: onEvent)
        }

        func close() async {
            await server.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// One-line notices of a publisher, in order.
    final class Notices: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// What the records say each run's messages are (the same mapper), by UniqueID.
    static func expected(_ store: SQLiteRecordStore, station: String) async throws -> [String: CFXEnvelope] {
        let mapper = CFXMapper(source: CFXMapper.handle(station: station))
        var expected: [String: CFXEnvelope] = [:]
        for run in try await store.runs(hardwareID: nil, station: station) {
            let full = try #require(try await store.run(run.id))
            let identities = try await store.identities(of: run.start.hardwareID)
            for message in mapper.messages(for: CFXUnitRun(run: full, identities: identities)) { expected[message.uniqueID] = message }
        }
        return expected
    }

    /// Checks what the consumer received against the records: every expected message exactly once by UniqueID, each
    /// body the records' message byte for byte, per unit WorkStarted, UnitsPersonalized (when the identity was
    /// written), UnitsTested, WorkCompleted. Returns (received, distinct).
    @discardableResult
    static func check(_ received: [(id: String, body: String)], against expected: [String: CFXEnvelope], units: Int,
                      sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> (received: Int, distinct: Int) {
        let distinct = Set(received.map(\.id))
        #expect(distinct == Set(expected.keys), "missing \(Set(expected.keys).subtracting(distinct).count), unexpected \(distinct.subtracting(expected.keys).count)", sourceLocation: sourceLocation)
        for message in received {
            let want = try #require(expected[message.id], sourceLocation: sourceLocation)
            #expect(message.body == want.text(), sourceLocation: sourceLocation)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(message.body.utf8)) as? [String: Any])
            #expect(body["UniqueID"] as? String == message.id, sourceLocation: sourceLocation)
        }
        // Per unit (transaction): each kind once; UnitsPersonalized for the units that were given their identity.
        var kinds: [String: [CFXMessageKind]] = [:]
        for (_, message) in expected {
            let transaction = message.text().range(of: "\"Transaction(ID|Id)\":\"[^\"]+\"", options: .regularExpression).map { String(message.text()[$0]) } ?? ""
            kinds[String(transaction.suffix(38)), default: []].append(message.kind)
        }
        #expect(kinds.count == units, sourceLocation: sourceLocation)
        for (_, list) in kinds {
            #expect(list.filter { $0 == .workStarted }.count == 1, sourceLocation: sourceLocation)
            #expect(list.filter { $0 == .unitsTested }.count == 1, sourceLocation: sourceLocation)
            #expect(list.filter { $0 == .workCompleted }.count == 1, sourceLocation: sourceLocation)
            #expect(list.filter { $0 == .unitsPersonalized }.count <= 1, sourceLocation: sourceLocation)
        }
        return (received.count, distinct.count)
    }

    @Test func everyUnitsMessagesArriveOnceAndSayWhatTheRecordsSay() async throws {
        let broker = try await offThePool { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let line = try await Line.make(units: 4, failShare: 0.5, seed: 3)
        defer { Task { await line.close() } }
        let notices = Notices()
        let publisher = try await CFXPublisher.start(
            CFXOptions(broker: try AMQPAddress(parsing: broker.url(queue)), spool: line.spool, handle: CFXMapper.handle(station: "cfx-1")),
            store: line.store, notice: notices.add)
        let results = try await withTimeLimit(180) {
            try await line.station("cfx-1") { publisher.handle($0) }.run(slots: line.slots)
        }
        #expect(results.count == 4)
        #expect(results.contains { $0.outcome == .pass } && results.contains { $0.outcome != .pass }, "\(results.map(\.outcome))")
        let left = await publisher.drained(within: .seconds(120))
        #expect(left == 0)
        await publisher.close()
        let expected = try await Self.expected(line.store, station: "cfx-1")
        #expect(publisher.status.accepted == expected.count)
        #expect(publisher.status.spooled == expected.count)
        #expect(try await publisher.spool.contents().isEmpty, "an accepted message leaves the spool")
        let received = try await offThePool { try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: expected.count) }
        try Self.check(received, against: expected, units: 4)
        #expect(received.count == expected.count, "no duplicates without an outage")
        #expect(try await offThePool { try broker.queueDepth(queue) } == (0, 0))
        #expect(notices.all.isEmpty, "\(notices.all)")
    }

    /// Each message when its event happens: a unit held at an operator prompt (its identity written) has its
    /// WorkStarted and UnitsPersonalized at the broker while it waits, before it is finished; UnitsTested and
    /// WorkCompleted follow when it is, in that order, each once and as the records say.
    @Test func workStartedAndUnitsPersonalizedArriveWhileTheUnitIsHeld() async throws {
        let broker = try await offThePool { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let line = try await Line.make(units: 1) { text in
            text.replacingOccurrences(of: "  - name: battery-level\n", with: "  - prompt: { name: held, text: Is the unit in its fixture?, answer: pass-fail }\n  - name: battery-level\n")
        }
        defer { Task { await line.close() } }
        let publisher = try await CFXPublisher.start(
            CFXOptions(broker: try AMQPAddress(parsing: broker.url(queue)), spool: line.spool, handle: CFXMapper.handle(station: "cfx-4")),
            store: line.store)
        let station = line.station("cfx-4") { publisher.handle($0) }
        let running = Task { try await station.run(slots: line.slots) }
        try await waitUntil("the unit waits at its prompt", within: 120) { !station.desk.waiting.isEmpty }
        let early = try await offThePool {
            try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: 2, timeout: 30)
        }
        #expect(!station.desk.waiting.isEmpty, "the unit is still held at its prompt")
        let open = try await line.store.runs()
        #expect(open.count == 1 && open.first?.outcome == nil, "its run is open: \(open)")
        let names = early.map { message in
            (try? JSONSerialization.jsonObject(with: Data(message.body.utf8)) as? [String: Any])?["MessageName"] as? String
        }
        #expect(names == [CFXMessageKind.workStarted.rawValue, CFXMessageKind.unitsPersonalized.rawValue], "\(names)")

        _ = await station.desk.answer("pass", source: "terminal")
        let results = try await withTimeLimit(120) { try await running.value }
        #expect(results.map(\.outcome) == [.pass], "\(results)")
        #expect(await publisher.drained(within: .seconds(120)) == 0)
        await publisher.close()
        let late = try await offThePool { try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: 2, timeout: 60) }
        let expected = try await Self.expected(line.store, station: "cfx-4")
        #expect(expected.count == 4)
        try Self.check(early + late, against: expected, units: 1)
        #expect((early + late).map { expected[$0.id]?.kind } == [.workStarted, .unitsPersonalized, .unitsTested, .workCompleted])
        #expect(publisher.status.spooled == 4 && publisher.status.accepted == 4, "each message made once: \(publisher.status)")
    }

    /// Messages the broker never took stay in the spool; a new publisher on the same spool sends them first.
    @Test func aRestartSendsWhatTheSpoolHolds() async throws {
        let broker = try await offThePool { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let line = try await Line.make(units: 2)
        defer { Task { await line.close() } }
        // Nothing listens on this port: the broker is unreachable from the start.
        let nowhere = try await offThePool { try ThrowawayRabbitMQ.freePort() }
        let notices = Notices()
        let first = try await CFXPublisher.start(
            CFXOptions(broker: AMQPAddress(host: "127.0.0.1", port: nowhere, address: queue), spool: line.spool,
                       handle: CFXMapper.handle(station: "cfx-2")),
            store: line.store, notice: notices.add)
        let results = try await withTimeLimit(180) { try await line.station("cfx-2") { first.handle($0) }.run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass, .pass])
        // The station did not wait: its units are done while every message still waits.
        await first.close()
        #expect(first.status.waiting == 8 && first.status.spooled == 8 && first.status.accepted == 0, "\(first.status)")
        let expected = try await Self.expected(line.store, station: "cfx-2")
        #expect(expected.count == 8)
        #expect(try await first.spool.contents().map(\.uniqueID).sorted() == expected.keys.sorted())
        #expect(notices.all.count == 1 && notices.all[0].contains("cannot be reached"), "\(notices.all)")

        let second = try await CFXPublisher.start(
            CFXOptions(broker: try AMQPAddress(parsing: broker.url(queue)), spool: line.spool, handle: CFXMapper.handle(station: "cfx-2")),
            store: line.store)
        #expect(second.status.resent == 8)
        #expect(await second.drained(within: .seconds(120)) == 0)
        await second.close()
        #expect(try await second.spool.contents().isEmpty)
        let received = try await offThePool { try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: 8) }
        try Self.check(received, against: expected, units: 2)
        // In the order they were made: per unit WorkStarted first and WorkCompleted last.
        let order = received.map { expected[$0.id]!.kind }
        #expect(order.first == .workStarted && order.last == .workCompleted)
    }

    /// The broker stops for 20 s while the station works: the station does not wait, the notices say it once and
    /// on recovery, and afterwards every message has arrived once by UniqueID, none lost.
    @Test func aBrokerOutageOf20SecondsLosesNothing() async throws {
        let broker = try await offThePool { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let units = 8
        let line = try await Line.make(units: units, failShare: 0.25, seed: 5)
        defer { Task { await line.close() } }
        let notices = Notices()
        let publisher = try await CFXPublisher.start(
            CFXOptions(broker: try AMQPAddress(parsing: broker.url(queue)), spool: line.spool, handle: CFXMapper.handle(station: "cfx-3"),
                       reconnectDelay: .milliseconds(500)),
            store: line.store, notice: notices.add)
        // One station, two waves of units: the broker stops as the first wave's first unit finishes (its messages
        // may be on the wire), and the second wave runs while it is down.
        let outage = Mutex<Task<ContinuousClock.Instant, any Error>?>(nil)
        let station = line.station("cfx-3") { event in
            publisher.handle(event)
            if case .finished = event {
                outage.withLock { task in
                    if task == nil { task = Task { try await offThePool { try broker.pause() }; return ContinuousClock.now } }
                }
            }
        }
        let first = try await withTimeLimit(240) { try await station.run(slots: Array(line.slots.prefix(units / 2))) }
        let stopped = try await #require(outage.withLock { $0 }).value
        let second = try await withTimeLimit(240) { try await station.run(slots: Array(line.slots.suffix(units / 2))) }
        #expect(first.count + second.count == units)
        // The station went on: the second wave ended with the broker down (it is started again only below). A unit's
        // messages are made and spooled after their events (the last after its `finished`), on the publisher's own
        // time: wait until every unit's are in the spool (a condition, not a delay), then count what waits.
        let expected = try await Self.expected(line.store, station: "cfx-3")
        try await waitUntil("every unit's messages spooled", within: 120) { publisher.status.spooled >= expected.count }
        let waiting = publisher.status.waiting
        #expect(waiting >= 3 * units / 2, "the second wave's messages wait in the spool during the outage: \(publisher.status)")
        #expect(try await publisher.spool.contents().count == waiting)
        try await Task.sleep(until: stopped + .seconds(20))
        try await offThePool { try broker.resume() }
        let left = await publisher.drained(within: .seconds(180))
        #expect(left == 0)
        await publisher.close()
        let received = try await offThePool { try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: expected.count) }
        let (count, distinct) = try Self.check(received, against: expected, units: units)
        let depth = try await offThePool { try broker.queueDepth(queue) }
        #expect(distinct == expected.count, "lost \(expected.count - distinct)")
        #expect(count + depth.ready + depth.unacknowledged >= expected.count)
        print("cfx outage: \(expected.count) messages, \(distinct) distinct received (\(count + depth.ready - distinct) duplicates by UniqueID), 0 lost")
        #expect(notices.all.filter { $0.contains("cannot be reached") }.count == 1, "\(notices.all)")
        #expect(notices.all.filter { $0.contains("answers again") }.count == 1, "\(notices.all)")
    }
}

/// `amqp://` URLs: what `--cfx` takes and what it refuses (pure).
@Suite struct AMQPAddressTests {
    @Test func parsesHostPortAndAddress() throws {
        let plain = try AMQPAddress(parsing: "amqp://mes.local/cfx")
        #expect(plain == AMQPAddress(host: "mes.local", port: 5672, address: "cfx"))
        let rabbit = try AMQPAddress(parsing: "amqp://10.0.0.5:5673//queue/cfx")
        #expect(rabbit == AMQPAddress(host: "10.0.0.5", port: 5673, address: "/queue/cfx"))
        let user = try AMQPAddress(parsing: "amqp://line:s%40cret@[::1]:5672/cfx.events")
        #expect(user == AMQPAddress(host: "::1", port: 5672, address: "cfx.events", user: "line", password: "s@cret"))
        #expect(user.description == "amqp://line@[::1]:5672/cfx.events", "the password is not shown")
    }

    @Test func refusesWithOneLine() {
        for (text, reason) in [
            ("mes.local/cfx", "expected amqp://HOST[:PORT]/ADDRESS"), ("amqps://mes.local/cfx", "TLS"), ("amqp://mes.local", "no ADDRESS"),
            ("amqp://mes.local/", "no ADDRESS"), ("amqp:///cfx", "no HOST"), ("amqp://mes.local:0/cfx", "port"),
            ("amqp://mes.local:99999/cfx", "port"), ("amqp://mes.local:x/cfx", "port"), ("amqp://mes.local/a b", "spaces"),
            ("amqp://@mes.local/cfx", "user"),
        ] {
            do {
                _ = try AMQPAddress(parsing: text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.message.contains(reason), "\(text): \(error.message)")
                #expect(!error.message.contains("\n"))
                #expect(error.code == .badURL)
            }
        }
    }
}
