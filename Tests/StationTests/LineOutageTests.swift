import Foundation
import Synchronization
import Records
import HeadsetSimulator
import Station
import TestSupport
import TuneupKit
import Testing

/// A line of four stations on one PostgreSQL server, in watch mode on a simulated line where units keep arriving:
/// the server is stopped for 30 s while they run. They keep provisioning from their leases into their outboxes, and
/// once it is back every unit is on the server once, with its identities, and no value was issued twice.
@Suite struct LineOutageTests {
    @Test func fourStationsKeepGoingThroughA30SecondOutageAndLoseNothing() async throws {
        try await withDedicatedPostgres { pg in
            let url = try await offThePool { try pg.createDatabase() }
            let server = try await PostgresRecordStore.open(url: url)
            let fixture = try await LineFixture.make(units: 1)
            var options = SimulatorOptions(timeScale: 0)
            options.production = ProductionLine(seed: 21)
            let unitCount = 32
            let simulated = try await SimulatedLine.start(.init(slots: 4, units: unitCount, dwell: .seconds(3), gap: .milliseconds(500), simulator: options))
            defer { Task { await simulated.shutdown(); await fixture.close(); await server.close() } }

            let lineEvents = Mutex<[String]>([])
            let lineDone = Task {
                for await event in simulated.events {
                    lineEvents.withLock { $0.append("\(event)") }
                    if event == .done { return true }
                }
                return false
            }
            let logs = (0..<4).map { _ in EventLog() }
            var stores: [OutboxRecordStore] = []
            var stations: [Station] = []
            for k in 0..<4 {
                let outbox = try await SQLiteRecordStore.open(path: "\(fixture.directory)/s\(k).outbox.sqlite")
                let store = OutboxRecordStore(server: server, outbox: outbox, station: "s\(k)", leaseSize: 8,
                                              serverWait: .seconds(1), retryInterval: .milliseconds(500))
                stores.append(store)
                stations.append(fixture.station(name: "s\(k)", store: store, events: logs[k], sessionTimeout: .seconds(2)))
            }
            let tasks = stations.enumerated().map { k, station in
                Task { try await station.watch(slots: [Slot(address: simulated.endpoints[k])]) }
            }
            try await waitUntil("every station provisioned a unit", within: 120) { stations.allSatisfy { $0.totals.completed >= 1 } }

            try await offThePool { try pg.pause() }
            let before = stations.map(\.totals.completed).reduce(0, +)
            // The fault's length (not a wait for a state): the server stays down for 30 s while the stations run.
            try await Task.sleep(for: .seconds(Double(ProcessInfo.processInfo.environment["TUNEUP_TEST_OUTAGE"] ?? "30") ?? 30))
            let during = stations.map(\.totals.completed).reduce(0, +) - before
            #expect(during >= 4, "the stations kept provisioning while the server was down: \(during) units")
            #expect(stores.contains { $0.serverProblem != nil })
            try await offThePool { try pg.start() }

            // Every unit has come and gone. (A unit that the line put in while a station was still busy with a unit
            // taken out mid-run is counted as an error there, or not at all: the line is a physical one.)
            do {
                #expect(try await withTimeLimit(240) { await lineDone.value })
            } catch {
                // Where the line stands and what each station did last, so a line that never empties can be read.
                let lastEvents = logs.enumerated().map { k, log in "s\(k): " + log.all.suffix(6).map { "\($0)" }.joined(separator: " | ") }
                Issue.record("the line did not empty: \(error); line: \(lineEvents.withLock { $0.suffix(12) }); \(lastEvents.joined(separator: "\n"))")
                for task in tasks { task.cancel() }
                throw error
            }
            for task in tasks { task.cancel() }
            for task in tasks { try await withTimeLimit(60) { try await task.value } }
            let passed = stations.map(\.totals.passed).reduce(0, +)
            let completed = stations.map(\.totals.completed).reduce(0, +)
            let problems = logs.flatMap(\.all).compactMap { event -> String? in
                guard case let .finished(result) = event, result.outcome != .pass else { return nil }
                return "\(result.slot) \(result.outcome) at \(result.failedStep ?? "-"): \(result.message ?? "")"
            }
            #expect(passed >= unitCount - 4, "most units pass: \(stations.map(\.totals)); not passed: \(problems)")
            for store in stores {
                let left = await store.finish(within: .seconds(60))
                #expect(left.isEmpty && left.conflicts == 0, "\(store.station): \(left)")
            }

            let units = try await server.units()
            let runs = units.flatMap(\.runs)
            #expect(runs.count == completed, "every run recorded once: \(runs.count) on the server, \(completed) at the stations")
            #expect(runs.filter { $0.outcome == .pass }.count == passed)
            #expect(units.allSatisfy { $0.runs.filter { $0.outcome == .pass }.count <= 1 })
            let live = units.flatMap(\.identities).filter { $0.state != .voided }
            #expect(live.filter { $0.state == .committed }.count == 2 * passed)
            #expect(Set(live.map { "\($0.kind.rawValue) \($0.value)" }).count == live.count, "no value issued twice")
            #expect(Set(live.map { "\($0.kind.rawValue) \($0.hardwareID ?? "")" }).count == live.count, "no unit holds two of a kind")
            let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
            let leased = try await offThePool { try pg.psql(database, "SELECT COUNT(*) FROM identities WHERE state = 'leased'") }
            #expect(leased == "0", "leased values no unit took go back to the pool when the stations finish")
        }
    }
}
