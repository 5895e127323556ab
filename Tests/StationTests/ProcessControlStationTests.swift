import Foundation
import Recipe
import Records
import HeadsetSimulator
import Station
import TestSupport
import TuneupKit
import Testing

/// Traceability, attachments, quarantine and SPC alarms as the station does them, on blank simulated units and real
/// databases (SQLite; PostgreSQL through a station's outbox).
@Suite struct ProcessControlStationTests {
    /// The shipped recipe with `max-rework: N`.
    static func maxRework(_ n: Int) -> @Sendable (String) -> String { { $0 + "\nmax-rework: \(n)\n" } }

    @Test func runsCarryTraceabilityAndTheTestsAttachments() async throws {
        let line = try await LineFixture.make(units: 1) { text in
            text.replacingOccurrences(of: "  - name: battery-level\n", with: """
                  - name: battery-level
                    attach:
                      - readings
                      - file: "fixture-logs/{hardware-id}.log"
                        media-type: text/plain

                """) + "\nmetadata:\n  line: A\n  shift: early\n"
        }
        defer { Task { await line.close() } }
        // The fixture's log of this unit, where the recipe says it is.
        let hardwareID = try await line.info(0).hardwareID
        let log = "fixture log of \(hardwareID)\n"
        try await offThePool {
            try FileManager.default.createDirectory(atPath: line.directory + "/fixture-logs", withIntermediateDirectories: true)
            try log.write(toFile: line.directory + "/fixture-logs/\(hardwareID).log", atomically: true, encoding: .utf8)
        }
        var connection = ConnectionOptions()
        connection.session.timeout = .seconds(30)
        let options = StationOptions(
            devices: .real, station: "trace", operatorName: "ann", toolVersion: "test", connection: connection, deviceWait: .seconds(10),
            workOrder: "WO-4711", lot: "L-48", fixture: "fx-1", metadata: ["shift": "late", "bench": "3"])
        let station = Station(recipe: line.recipe, store: line.store, options: options)
        let results = try await withTimeLimit(120) { try await station.run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass], "\(results)")

        let runID = try #require(results[0].run)
        let run = try #require(try await line.store.run(RunID(runID)))
        #expect(run.start.operatorName == "ann" && run.start.workOrder == "WO-4711" && run.start.lot == "L-48" && run.start.fixture == "fx-1")
        #expect(run.start.metadata == ["line": "A", "shift": "late", "bench": "3"], "the station's metadata over the recipe's: \(run.start.metadata)")
        #expect(run.attachments.map(\.name) == ["battery-level-readings.csv", "battery-level-file.log"])
        #expect(run.attachments.allSatisfy { $0.step == "test:battery-level" })
        let readings = try #require(try await line.store.attachment(run: run.id, name: "battery-level-readings.csv"))
        let text = String(decoding: readings.content ?? Data(), as: UTF8.self)
        #expect(readings.mediaType == "text/csv" && text.hasPrefix("attempt,seconds,value,unit,low,high,judgement\r\n1,"), "\(text)")
        #expect(text.contains(",percent,20.0,100.0,pass\r\n"), "\(text)")
        let file = try #require(try await line.store.attachment(run: run.id, name: "battery-level-file.log"))
        #expect(file.content == Data(log.utf8) && file.mediaType == "text/plain" && file.sha256 == Traceability.sha256(Data(log.utf8)))
    }

    @Test func aMissingFileToAttachIsTheStepsError() async throws {
        let line = try await LineFixture.make(units: 1) { text in
            text.replacingOccurrences(of: "  - name: battery-level\n", with: "  - name: battery-level\n    attach: [{ file: nowhere.log }]\n")
        }
        defer { Task { await line.close() } }
        let results = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(results.first?.outcome == .error && results.first?.failedStep == "test:battery-level", "\(results)")
        #expect(results.first?.message?.contains("nowhere.log") == true, "\(results.first?.message ?? "")")
    }

    /// A unit that fails `max-rework` times is refused (no run, nothing done to it) until it is released; then it is
    /// provisioned again.
    static func quarantine(_ line: LineFixture, store: any RecordStore, release: @escaping @Sendable (String) async throws -> Void) async throws {
        for _ in 0..<2 {
            let failed = try await withTimeLimit(120) { try await line.station(store: store).run(slots: line.slots) }
            #expect(failed.map(\.outcome) == [.fail], "\(failed)")
        }
        let events = EventLog()
        let station = line.station(store: store, events: events)
        let refused = try await withTimeLimit(120) { try await station.run(slots: line.slots) }
        let result = try #require(refused.first)
        #expect(result.outcome == .quarantined && result.run == nil, "\(result)")
        #expect(result.message?.contains("tuneup records release") == true)
        #expect(station.totals.quarantined == 1 && station.totals.completed == 0)
        #expect(events.stepsStarted.isEmpty, "nothing is done to a quarantined unit: \(events.stepsStarted)")
        let hardwareID = try #require(result.hardwareID)
        #expect(events.all.contains(.quarantined(slot: line.slots[0].name, hardwareID: hardwareID, failures: 2, maxRework: 2)))
        let recorded = try await store.runs(hardwareID: hardwareID, station: nil)
        #expect(recorded.map(\.outcome) == [.fail, .fail], "no run for a refused unit: \(recorded)")

        try await release(hardwareID)
        let again = try await withTimeLimit(120) { try await line.station(store: store).run(slots: line.slots) }
        #expect(again.map(\.outcome) == [.fail], "released, it is provisioned (and fails) again: \(again)")
    }

    @Test func aUnitThatFailedMaxReworkTimesIsQuarantinedUntilReleasedOnSQLite() async throws {
        let line = try await LineFixture.make(units: 1, failShare: 1, edit: Self.maxRework(2))
        defer { Task { await line.close() } }
        let store = line.store
        try await Self.quarantine(line, store: store) { hardwareID in
            _ = try await store.release(hardwareID, by: "bob", reason: "mic replaced", at: Date())
        }
        let unit = try #require(try await store.units().first)
        #expect(unit.releases.map(\.releasedBy) == ["bob"] && unit.releases.first?.failures == 2)
        #expect(unit.runs.map(\.outcome) == [.fail, .fail, .fail])
    }

    @Test func quarantineHoldsAcrossALineOnPostgreSQL() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let url = try await offThePool { try pg.createDatabase() }
        let server = try await PostgresRecordStore.open(url: url)
        let line = try await LineFixture.make(units: 1, failShare: 1, edit: Self.maxRework(2))
        defer { Task { await line.close(); await server.close() } }
        let outbox = try await SQLiteRecordStore.open(path: line.directory + "/q.outbox.sqlite")
        let store = OutboxRecordStore(server: server, outbox: outbox, station: "q", leaseSize: 4, serverWait: .seconds(10),
                                      retryInterval: .milliseconds(100))
        try await Self.quarantine(line, store: store) { hardwareID in
            // Released where a line releases: on its database. The runs must be there first.
            try await waitUntil("the failed runs reached the server", within: 60) {
                (try? await server.runs(hardwareID: hardwareID, station: nil).count) == 2
            }
            _ = try await server.release(hardwareID, by: "bob", reason: "reworked", at: Date())
        }
        let left = await store.finish(within: .seconds(60))
        #expect(left.isEmpty, "\(left)")
        let unit = try #require(try await server.units().first)
        #expect(unit.runs.map(\.outcome) == [.fail, .fail, .fail] && unit.releases.count == 1)
    }

    /// A measurement that has drifted out of its limits: over the last 3 units its Cpk falls below 1.33 (below 0), and the
    /// watching station stops taking units (those in progress finish) and says why.
    @Test func anSPCAlarmStopsTheStation() async throws {
        var options = SimulatorOptions(timeScale: 0)
        options.production = ProductionLine(seed: 5)
        let simulated = try await SimulatedLine.start(.init(slots: 2, units: 8, dwell: .milliseconds(1500), gap: .milliseconds(500), simulator: options))
        let line = try await LineFixture.make(units: 1) { text in
            text.replacingOccurrences(of: "limits: { low: -42, high: -34 }", with: "limits: { low: -30, high: -29 }")
                .replacingOccurrences(of: "marginal: { low: -41, high: -35 }", with: "marginal: { low: -29.9, high: -29.1 }")
                .replacingOccurrences(of: "retry: { attempts: 3, delay: 200ms }", with: "retry: { attempts: 1 }")
                + "\nspc:\n  window: 3\n  min-cpk: 1.33\n  measurements: { anc-correction: 0 }\n"
        }
        defer { Task { await simulated.shutdown(); await line.close() } }
        let events = EventLog()
        let station = line.station(events: events, sessionTimeout: .seconds(2))
        // The watch ends by itself: no cancellation.
        try await withTimeLimit(180) { try await station.watch(slots: simulated.endpoints.map { Slot(address: $0) }) }
        let alarm = try #require(station.alarm)
        #expect(alarm.kind == .cpk && alarm.measurement == "mic-sensitivity-left" && alarm.value < 1.33 && alarm.window == 3, "\(alarm)")
        #expect(station.stopReason == alarm.message)
        let all = events.all
        let alarmAt = try #require(all.firstIndex(of: .alarm(alarm)))
        #expect(all.firstIndex(of: .stopping(reason: alarm.message)).map { $0 > alarmAt } == true, "the alarm, then stopping")
        // Three units made the window; at most one more (in the other slot) was under way and finished.
        #expect((3...4).contains(station.totals.completed), "\(station.totals)")
        #expect(try await line.store.runs().count == station.totals.completed)
        #expect(all.filter { if case .alarm = $0 { return true } else { return false } }.count == 1)
    }

    /// A station restarted mid-window continues the window it had: 2 units of a 3-unit window recorded by its
    /// earlier process (mic-sensitivity-left at both ends of its limits), and the restarted station's first unit makes the
    /// window full and its Cpk low: the alarm comes with that unit, not 3 units later.
    @Test func aRestartedStationContinuesItsSPCWindowFromTheRecords() async throws {
        let line = try await LineFixture.make(units: 1) { text in
            text + "\nspc:\n  window: 3\n  min-cpk: 1.33\n  measurements: { anc-correction: 0 }\n"
        }
        defer { Task { await line.close() } }
        // What the earlier process of the station recorded (the shipped limits: -42...-34 dBFS).
        for (k, value) in [-34.2, -41.8].enumerated() {
            let run = try await line.store.startRun(RunStart(
                hardwareID: "earlier-\(k)", station: "test-station", slot: "1", recipeHash: line.recipe.contentHash,
                startedAt: Date(timeIntervalSinceNow: Double(k - 60))))
            _ = try await line.store.recordStep(StepRecord(
                name: "test:mic-sensitivity-left", startedAt: Date(), endedAt: Date(), outcome: .pass,
                measurements: [Records.Measurement(name: "mic-sensitivity-left", value: value, unit: "dBFS", low: -42, high: -34, outcome: .pass)]),
                in: run)
            try await line.store.finishRun(run, outcome: .pass, at: Date())
        }
        // Another station's and another recipe's units are not this window's.
        for (station, hash) in [("elsewhere", line.recipe.contentHash), ("test-station", "another-recipe")] {
            let run = try await line.store.startRun(RunStart(hardwareID: "other-\(station)", station: station, slot: "1", recipeHash: hash))
            _ = try await line.store.recordStep(StepRecord(
                name: "test:mic-sensitivity-left", startedAt: Date(), endedAt: Date(), outcome: .pass,
                measurements: [Records.Measurement(name: "mic-sensitivity-left", value: -38, unit: "dBFS", low: -42, high: -34, outcome: .pass)]),
                in: run)
            try await line.store.finishRun(run, outcome: .pass, at: Date())
        }

        let events = EventLog()
        let station = line.station(events: events)
        let results = try await withTimeLimit(120) { try await station.run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass], "\(results)")
        let window = try #require(station.processWindow)
        #expect(window.firstPasses.count == 3, "\(window.firstPasses)")
        #expect(window.values["mic-sensitivity-left"]?.prefix(2).map(\.value) == [-34.2, -41.8])
        let alarm = try #require(station.alarm, "the window continued from the records is full and its Cpk low")
        #expect(alarm.kind == .cpk && alarm.measurement == "mic-sensitivity-left" && alarm.window == 3, "\(alarm)")
        #expect(events.all.contains(.alarm(alarm)))
    }
}
