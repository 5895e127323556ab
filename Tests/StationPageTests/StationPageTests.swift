import Foundation
import Records
import Station
import StationPage
import Synchronization
import TestSupport
import TuneupKit
import Testing

/// The operator page's state, its pushes over a real WebSocket, and what it reads back from the records.
@Suite struct StationPageTests {
    static func emptyStore() async throws -> (SQLiteRecordStore, String) {
        let directory = try TemporaryDirectory.make("station-page")
        return (try await SQLiteRecordStore.open(path: directory + "/records.sqlite"), directory)
    }

    /// A connected client gets the whole state first, then, for a station event, a message with that slot's tile.
    @Test func aStationEventIsPushedToAConnectedWebSocketClient() async throws {
        let (store, directory) = try await Self.emptyStore()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let feed = StationFeed(store: store, station: "ws-station", operatorName: "Ada")
        await feed.start()
        feed.handle(.started(slots: ["slot-a", "slot-b"], recipe: "r.yaml", recipeHash: "h", station: "ws-station"))
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0))
        let socket = PageSocket(port: server.port)
        try await withTimeLimit(60) {
            var received = socket.messages.makeAsyncIterator()
            let first = try decodeMessage(try #require(await received.next()).text)
            #expect(first.sections["header"]?["station"]?.string == "ws-station")
            #expect(first.sections["header"]?["operator"]?.string == "Ada")
            #expect(first.sections["tile:slot-a"]?["state"]?.string == "waiting")
            #expect(first.sections["tile:slot-b"] != nil)

            feed.handle(.arrived(slot: "slot-b", hardwareID: "0123456789abcdef"))
            feed.handle(.progress(slot: "slot-b", hardwareID: "0123456789abcdef", step: "flash-application", fraction: 0.25))
            // The two events may come as one message (coalesced) or two; the last one holds both.
            var tile: AnyJSON?
            var changes = 0
            while let next = await received.next() {
                let message = try decodeMessage(next.text)
                #expect(message.sections["tile:slot-a"] == nil, "only what changed is sent")
                if let t = message.sections["tile:slot-b"] { tile = t }
                changes = message.changes
                if tile?["fraction"]?.number == 0.25 { break }
            }
            #expect(tile?["unit"]?.string == "0123456789abcdef")
            #expect(tile?["state"]?.string == "running")
            #expect(tile?["step"]?.string == "flash-application")
            #expect(changes == feed.sections.changes)
        }
        socket.close()
        await server.stop()
        feed.stop()
    }

    /// A page that does not read gets one message with the latest of everything, not a queue; the station's side
    /// never waits for it.
    @Test func aPageThatDoesNotReadIsCoalescedNotQueued() async throws {
        let sections = Sections()
        let (id, wakeups) = sections.subscribe()
        var cursor: [String: Int] = [:]
        _ = sections.message(since: &cursor)
        for k in 0..<10_000 { sections.update { $0.set("tile:s", ["k": k]) } }
        var iterator = wakeups.makeAsyncIterator()
        // Two pending wake-ups at most (the first message's and the newest change's), whatever the number of changes.
        _ = await iterator.next()
        let message = try #require(sections.message(since: &cursor))
        #expect(message.contains("\"k\":9999") && !message.contains("\"k\":9998"))
        #expect(sections.message(since: &cursor) == nil, "nothing new after it")
        sections.unsubscribe(id)
        #expect(sections.subscriberCount == 0)
    }

    /// Names, operators and messages reach the page as text: the HTML escapes them, the embedded state cannot end
    /// its script element.
    @Test func everythingTheStationSaysIsEscaped() async throws {
        let (store, directory) = try await Self.emptyStore()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let evil = "</script><script>alert(1)</script><b>&"
        let feed = StationFeed(store: store, station: evil, operatorName: evil)
        feed.handle(.started(slots: [evil], recipe: evil, recipeHash: "h", station: evil))
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0))
        defer { Task { await server.stop() } }
        let (status, page) = try await IdleClient.get(port: server.port, path: "/")
        #expect(status == 200)
        #expect(!page.contains("<script>alert(1)"))
        #expect(!page.contains("</script><b>"))
        #expect(page.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;&amp;"), "the title is escaped")
        #expect(page.components(separatedBy: "</script>").count == 3, "two script elements, each ended once")
    }

    /// The last units come from the records, newest first, with their steps and measurements: a restarted station's
    /// page lists what the one before it did.
    @Test func theLastUnitsAreReadFromTheRecordsAfterARestart() async throws {
        let fixture = try await PageFixture.make(units: 3, failShare: 0.5, seed: 11)
        defer { Task { await fixture.close() } }
        let first = fixture.station(name: "restart", operatorName: "Grace") { _ in }
        let results = try await first.run(slots: fixture.slots)
        #expect(results.count == 3)

        let feed = StationFeed(store: fixture.store, station: "restart", operatorName: "Grace", recent: 2)
        await feed.start()
        var cursor: [String: Int] = [:]
        let message = try decodeMessage(try #require(feed.sections.message(since: &cursor)))
        let units = try #require(message.sections["units"]).array
        let runs = try await fixture.store.runs(hardwareID: nil, station: "restart")
        #expect(units.count == 2, "--recent 2 of 3")
        #expect(units.compactMap { $0["run"]?.number }.map { Int64($0) } == runs.suffix(2).reversed().map(\.id.rawValue))
        for row in units {
            let run = try #require(try await fixture.store.run(RunID(Int64(row["run"]?.number ?? 0))))
            #expect(row["outcome"]?.string == run.outcome?.rawValue)
            #expect(row["operator"]?.string == "Grace")
            #expect(row["steps"]?.array.map { $0["name"]?.string } == run.steps.map(\.name))
            #expect(row["steps"]?.array.flatMap { $0["measurements"]?.array ?? [] }.count == run.steps.flatMap(\.measurements).count)
            #expect(row["serial"]?.string == results.first { $0.run == run.id.rawValue }?.serial)
        }
        feed.stop()
    }

    /// A finished unit is listed at once, then its row is replaced by its record; its failure counts in the Pareto
    /// by the record's cause (as `records report` counts it).
    @Test func aFinishedUnitGetsItsRecordAndItsCause() async throws {
        let fixture = try await PageFixture.make(units: 4, failShare: 0.5, seed: 3)
        defer { Task { await fixture.close() } }
        let feed = StationFeed(store: fixture.store, station: "pareto", operatorName: "Lin")
        await feed.start()
        let station = fixture.station(name: "pareto", operatorName: "Lin") { feed.handle($0) }
        let results = try await station.run(slots: fixture.slots)
        let runs = try await fixture.store.runsWithSteps(RecordsFilter(station: "pareto"))
        let expected = RecordsReport(runs: runs).pareto
        try await waitUntil("every unit's record read") {
            let m = try decodeMessage(feed.sections.fullMessage())
            let units: [AnyJSON] = m.sections["units"]?.array ?? []
            let read = units.filter { !($0["steps"]?.array.isEmpty ?? true) }.count
            let counted: Double = (m.sections["pareto"]?.array ?? []).map { $0["count"]?.number ?? 0 }.reduce(0, +)
            let failing: Int = expected.map(\.count).reduce(0, +)
            return units.count == results.count && read == results.count && counted == Double(failing)
        }
        var cursor: [String: Int] = [:]
        let m = try decodeMessage(try #require(feed.sections.message(since: &cursor)))
        let pareto = m.sections["pareto"]?.array ?? []
        #expect(pareto.map { $0["cause"]?.string ?? "" } == expected.map(\.cause))
        #expect(pareto.map { Int($0["count"]?.number ?? 0) } == expected.map(\.count))
        for result in results {
            #expect(m.sections["tile:\(result.slot)"]?["state"]?.string == result.outcome.rawValue)
            #expect(m.sections["tile:\(result.slot)"]?["unit"]?.string == result.hardwareID)
        }
        #expect(Int(m.sections["totals"]?["passed"]?.number ?? -1) == results.filter { $0.outcome == .pass }.count)
        feed.stop()
    }

    /// A running tile shows the unit's serial once it is known; the last units show the operator the run was
    /// recorded with (not one who signed in since); a station that ends right after its last unit still gets that
    /// unit's record and end time on the page (`finish` reads it before the page stops).
    @Test func tilesShowTheSerialAndTheLastUnitsTheRunsOperatorAndRecord() async throws {
        let fixture = try await PageFixture.make(units: 1)
        defer { Task { await fixture.close() } }
        let desk = OperatorDesk()
        let feed = StationFeed(store: fixture.store, station: "ops", operatorName: "Ann", desk: desk)
        await feed.start()
        let serialsWhileRunning = Mutex<[String?]>([])
        var connection = ConnectionOptions()
        connection.session.timeout = .seconds(30)
        let options = StationOptions(devices: .real, station: "ops", operatorName: "Ann", toolVersion: "test", connection: connection,
                                     deviceWait: .seconds(10), pollInterval: .milliseconds(50))
        let station = Station(recipe: fixture.recipe, store: fixture.store, options: options, desk: desk) { event in
            feed.handle(event)
            // Someone signs in while the unit's run (recorded with Ann) goes on.
            if case .runStarted = event { feed.signIn("Bob") }
            if case let .stepStarted(slot, _, step) = event, step == StepName.flashApplication {
                let m = try? decodeMessage(feed.sections.fullMessage())
                serialsWhileRunning.withLock { $0.append(m?.sections["tile:\(slot)"]?["serial"]?.string) }
            }
        }
        let results = try await withTimeLimit(120) { try await station.run(slots: fixture.slots) }
        await feed.finish()
        let result = try #require(results.first)
        #expect(result.outcome == .pass && result.operatorName == "Ann")
        #expect(serialsWhileRunning.withLock { $0 } == [result.serial], "the running tile's serial")

        let m = try decodeMessage(feed.sections.fullMessage())
        #expect(m.sections["header"]?["operator"]?.string == "Bob")
        let row = try #require(m.sections["units"]?.array.first)
        #expect(row["operator"]?.string == "Ann", "the run's operator, not the one signed in now")
        #expect(row["endedAt"] != nil, "the last row's end time")
        #expect(!(row["steps"]?.array.isEmpty ?? true), "the last row's record")
        let runID = try #require(result.run)
        let run = try #require(try await fixture.store.run(RunID(runID)))
        #expect(run.start.operatorName == "Ann")
    }

    @Test func listenAddressesAreCheckedBeforeAnythingStarts() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8080", option: "--ui") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(try ListenAddress(parsing: "[::1]:0", option: "--ui") == ListenAddress(host: "::1", port: 0))
        for bad in ["8080", "host", "host:", ":80", "host:65536", "host:-1", "::1:80", "a b:80"] {
            #expect(throws: PageError.self, "\(bad)") { try ListenAddress(parsing: bad, option: "--ui") }
        }
    }

    /// A port someone holds: one line, a connection-category failure (exit 69).
    @Test func anAddressInUseIsOneLine() async throws {
        let sections = Sections()
        let first = try await PageServer.start(sections, on: ListenAddress(host: "127.0.0.1", port: 0), serverName: "t") { _ in "" }
        defer { Task { await first.stop() } }
        do {
            let second = try await PageServer.start(sections, on: ListenAddress(host: "127.0.0.1", port: first.port), serverName: "t") { _ in "" }
            await second.stop()
            Issue.record("a second server bound the same port")
        } catch let error as PageError {
            #expect(error.code == .cannotServe && error.category == .connection)
            #expect(error.message.contains("in use") && !error.message.contains("\n"), "\(error.message)")
        }
    }
}
