import Failure
import Foundation
import GRDB
import Records
import TestSupport
import Testing

/// A temporary directory for one test's database files, removed afterwards.
struct TemporaryDirectory: ~Copyable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("records-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Serial numbers SN00000, SN00001, ...
let serials: IdentityCandidates = { String(format: "SN%05d", $0) }

/// Dates on whole seconds, so they compare equal after the round trip (the database keeps milliseconds, and a
/// fraction of a second is not exact in binary).
func at(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: 1_790_000_000 + Double(seconds)) }

@Suite struct RecordStoreTests {
    @Test func migratesAnEmptyFileAndReopens() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path)
        _ = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1-1", startedAt: at(0)))

        let raw = try await offThePool { try DatabaseQueue(path: path) }
        let tables = try await raw.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        }
        for table in ["identities", "leases", "measurements", "runs", "steps", "units"] {
            #expect(tables.contains(table), "table \(table) missing: \(tables)")
        }
        let applied = try await raw.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(Array(applied.prefix(3)) == ["v1-records", "v2-outbox", "v3-traceability"], "\(applied)")
        let journal = try await raw.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")

        // Reopening migrates nothing and keeps the data.
        let again = try await SQLiteRecordStore.open(path: path)
        #expect(try await again.units().map(\.hardwareID) == ["uid-1"])
    }

    @Test func theDatabaseItselfRefusesADuplicateValue() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path)
        let first = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["SN1"])
        #expect(first.value == "SN1" && first.state == .reserved && first.hardwareID == "uid-1")

        // Bypassing the store: the schema's UNIQUE constraint rejects a second SN1.
        let raw = try await offThePool { try DatabaseQueue(path: path) }
        await #expect(throws: DatabaseError.self) {
            try await raw.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO units (hardware_id, first_seen) VALUES ('uid-2', '2026-01-01');
                        INSERT INTO identities (kind, value, state, hardware_id, station, updated_at)
                        VALUES ('serial', 'SN1', 'reserved', 'uid-2', 's2', '2026-01-01')
                        """)
            }
        }
        // The same for a Bluetooth address given to a second unit.
        _ = try await store.reserveIdentity(.bluetoothAddress, for: "uid-1", station: "s1", values: ["00:1B:66:00:00:01"])
        await #expect(throws: DatabaseError.self) {
            try await raw.write { db in
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO units (hardware_id, first_seen) VALUES ('uid-2', '2026-01-01');
                        INSERT INTO identities (kind, value, state, hardware_id, station, updated_at)
                        VALUES ('bt-address', '00:1B:66:00:00:01', 'reserved', 'uid-2', 's2', '2026-01-01')
                        """)
            }
        }
        // ... and a second live identity of one kind for one unit.
        await #expect(throws: DatabaseError.self) {
            try await raw.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO identities (kind, value, state, hardware_id, station, updated_at)
                        VALUES ('serial', 'SN2', 'reserved', 'uid-1', 's2', '2026-01-01')
                        """)
            }
        }
    }

    @Test func reservationsRacingForOneValueGiveItToExactlyOneUnit() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let a = try await SQLiteRecordStore.open(path: path)
        let b = try await SQLiteRecordStore.open(path: path)
        let outcomes = try await withThrowingTaskGroup(of: (String, String?).self) { group in
            for i in 0..<16 {
                let store = i.isMultiple(of: 2) ? a : b
                group.addTask {
                    do {
                        let identity = try await store.reserveIdentity(
                            .serial, for: "uid-\(i)", station: "s\(i % 2)", values: ["SN-ONLY"])
                        return ("uid-\(i)", identity.value)
                    } catch let error as RecordsError where error.code == .poolExhausted {
                        return ("uid-\(i)", nil)
                    }
                }
            }
            return try await group.reduce(into: [String: String?]()) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes.count == 16)
        #expect(outcomes.values.compactMap { $0 }.count == 1, "\(outcomes)")
        let winners = try await a.units().filter { !$0.identities.isEmpty }
        #expect(winners.count == 1 && winners.first?.identities.map(\.value) == ["SN-ONLY"])
    }

    @Test func aUnitGetsBackTheIdentityItWasGiven() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path)
        let first = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", candidates: serials)
        let again = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["OTHER"])
        #expect(again == first)
        // Written, then asked again from another station and another store instance: still the same one.
        _ = try await store.markWritten(first.id)
        let other = try await SQLiteRecordStore.open(path: path)
        let fromOther = try await other.reserveIdentity(.serial, for: "uid-1", station: "s2", candidates: serials)
        #expect(fromOther.id == first.id && fromOther.state == .written)
        // From a lease too: the unit keeps its serial and the lease keeps its block.
        let lease = try await other.leaseBlock(.serial, count: 3, station: "s2", candidates: serials)
        #expect(lease.identities.map(\.value) == ["SN00001", "SN00002", "SN00003"])
        let fromLease = try await other.reserveIdentity(.serial, for: "uid-1", fromLease: lease.id)
        #expect(fromLease.id == first.id)
        // Another kind is a separate identity.
        let name = try await store.reserveIdentity(.bluetoothName, for: "uid-1", station: "s1", values: ["Tuneup 1"])
        #expect(name.kind == .bluetoothName && name.id != first.id)
        #expect(try await store.identities(of: "uid-1").count == 2)
        // The life of an identity: reserved → written → committed; a second commit changes nothing.
        let committed = try await store.commit(first.id)
        #expect(committed.state == .committed)
        #expect(try await store.commit(first.id) == committed)
        await #expect(throws: RecordsError(.invalidTransition, "")) { try await store.commit(name.id) }
    }

    @Test func aVoidedValueIsNeverIssuedAgain() async throws {
        let dir = try TemporaryDirectory()
        let store = try await SQLiteRecordStore.open(path: dir.path("records.sqlite"))
        let first = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["SN1"])
        let voided = try await store.void(first.id)
        #expect(voided.state == .voided)
        // The unit gets a new serial, not the voided one; no other unit gets it either.
        let second = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["SN1", "SN2"])
        #expect(second.value == "SN2")
        await #expect(throws: RecordsError(.poolExhausted, "")) {
            _ = try await store.reserveIdentity(.serial, for: "uid-2", station: "s1", values: ["SN1"])
        }
        // The unused part of a lease is voided and never reissued, by the lease or by candidates.
        let lease = try await store.leaseBlock(.serial, count: 3, station: "s1", values: ["L1", "L2", "L3"])
        let fromLease = try await store.reserveIdentity(.serial, for: "uid-3", fromLease: lease.id)
        #expect(fromLease.value == "L1" && fromLease.lease == lease.id)
        let unused = try await store.voidUnused(lease: lease.id)
        #expect(unused.map(\.value) == ["L2", "L3"] && unused.allSatisfy { $0.state == .voided })
        await #expect(throws: RecordsError(.poolExhausted, "")) {
            _ = try await store.reserveIdentity(.serial, for: "uid-4", fromLease: lease.id)
        }
        await #expect(throws: RecordsError(.poolExhausted, "")) {
            _ = try await store.reserveIdentity(.serial, for: "uid-4", station: "s2", values: ["L2", "L3"])
        }
        await #expect(throws: RecordsError(.poolExhausted, "")) {
            _ = try await store.leaseBlock(.serial, count: 2, station: "s2", values: ["SN1", "L2", "L3"])
        }
        // A committed identity belongs to its unit for good.
        _ = try await store.markWritten(second.id)
        _ = try await store.commit(second.id)
        await #expect(throws: RecordsError(.invalidTransition, "")) { _ = try await store.void(second.id) }
    }

    @Test func aRunIsRecordedWithStepsAndMeasurementsAndReadBack() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path)
        let start = RunStart(
            hardwareID: "uid-7", station: "line-1/s1", slot: "usb:1-2.3", operatorName: "ana", recipeHash: "abc123",
            toolVersion: "1.4.0", imageHashes: ["application": "aa11", "resources": "bb22"], startedAt: at(0))
        let run = try await store.startRun(start)
        let flash = StepRecord(name: "flash", startedAt: at(10), endedAt: at(9_000), outcome: .pass, retries: 1, message: "2 sectors redone")
        let test = StepRecord(
            name: "mic-test", startedAt: at(9_001), endedAt: at(9_500), outcome: .pass,
            measurements: [
                Measurement(name: "mic-left", value: -38.25, unit: "dBFS", low: -42, high: -34, marginalLow: -41, marginalHigh: -35, outcome: .pass),
                Measurement(name: "noise", value: 0.5, unit: "%", high: 1, outcome: .pass),
            ])
        _ = try await store.recordStep(flash, in: run)
        let testID = try await store.recordStep(test, in: run)
        let late = Measurement(name: "mic-right", value: -40.75, unit: "dBFS", low: -42, high: -34, marginalLow: -41, marginalHigh: -35, outcome: .marginal)
        try await store.recordMeasurement(late, in: testID)
        try await store.finishRun(run, outcome: .pass, at: at(10_000))

        // Read back by a fresh instance, as `tuneup records show` would.
        let reader = try await SQLiteRecordStore.open(path: path)
        let stored = try #require(try await reader.run(run))
        var expectedTest = test
        expectedTest.measurements.append(late)
        #expect(stored == RunRecord(id: run, start: start, endedAt: at(10_000), outcome: .pass, reworkCount: 0, steps: [flash, expectedTest]))
        #expect(try await reader.runs(hardwareID: "uid-7", station: nil).map(\.id) == [run])
        #expect(try await reader.runs(hardwareID: nil, station: "elsewhere").isEmpty)
        let unit = try #require(try await reader.unit("uid-7"))
        #expect(unit.runs.map(\.outcome) == [.pass] && unit.firstSeen == at(0))
        #expect(try await reader.unit("uid-unknown") == nil)
        // A finished run takes no more records.
        await #expect(throws: RecordsError(.invalidTransition, "")) { try await store.finishRun(run, outcome: .fail, at: at(11_000)) }
        await #expect(throws: RecordsError(.invalidTransition, "")) { _ = try await store.recordStep(flash, in: run) }
        await #expect(throws: RecordsError(.notFound, "")) { _ = try await store.recordStep(flash, in: RunID(9_999)) }
    }

    @Test func aStepIsRecordedWhole_orNotAtAll() async throws {
        let dir = try TemporaryDirectory()
        let store = try await SQLiteRecordStore.open(path: dir.path("records.sqlite"))
        let run = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(0)))
        // The second measurement breaks the schema (NaN is stored as NULL, and a value is NOT NULL): the step and its
        // first measurement must not stay behind.
        let broken = StepRecord(
            name: "calibrate", startedAt: at(1), endedAt: at(2), outcome: .pass,
            measurements: [Measurement(name: "gain", value: 1, outcome: .pass), Measurement(name: "bad", value: .nan, outcome: .fail)])
        let error = await #expect(throws: RecordsError.self) { _ = try await store.recordStep(broken, in: run) }
        #expect(error?.code == .storage && error?.message.contains("\n") == false)
        #expect(try await store.run(run)?.steps.isEmpty == true)
    }

    @Test func timesAreKeptToTheMillisecond() async throws {
        let dir = try TemporaryDirectory()
        let store = try await SQLiteRecordStore.open(path: dir.path("records.sqlite"))
        let started = Date(timeIntervalSince1970: 1_790_000_000.123_4)
        let run = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: started))
        let stored = try #require(try await store.run(run)?.start.startedAt)
        #expect(abs(stored.timeIntervalSince(started)) < 0.001, "\(stored) vs \(started)")
    }

    @Test func aRunOfAKilledStationIsRecordedAsAborted() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        var killed: SQLiteRecordStore? = try await SQLiteRecordStore.open(path: path)
        let run = try await killed!.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(0)))
        _ = try await killed!.recordStep(StepRecord(name: "flash", startedAt: at(1), endedAt: at(2), outcome: .pass), in: run)
        killed = nil

        // The station starts again: its open run is closed as aborted, with the steps it had.
        let restarted = try await SQLiteRecordStore.open(path: path)
        #expect(try await restarted.runs().map(\.outcome) == [nil])
        #expect(try await restarted.abortOpenRuns(station: "s1", at: at(100)) == [run])
        #expect(try await restarted.abortOpenRuns(station: "s1", at: at(200)).isEmpty)
        let aborted = try #require(try await restarted.run(run))
        #expect(aborted.outcome == .aborted && aborted.endedAt == at(100) && aborted.steps.map(\.name) == ["flash"])

        // A unit that comes back while its previous run is still open: that run is aborted, the new one counts.
        let second = try await restarted.startRun(RunStart(hardwareID: "uid-1", station: "s2", slot: "4", startedAt: at(300)))
        let third = try await restarted.startRun(RunStart(hardwareID: "uid-1", station: "s2", slot: "4", startedAt: at(400)))
        try await restarted.finishRun(third, outcome: .fail, at: at(500))
        let fourth = try await restarted.startRun(RunStart(hardwareID: "uid-1", station: "s2", slot: "4", startedAt: at(600)))
        let runs = try await restarted.runs(hardwareID: "uid-1", station: nil)
        #expect(runs.map(\.id) == [run, second, third, fourth])
        #expect(runs.map(\.outcome) == [.aborted, .aborted, .fail, nil])
        #expect(runs[1].endedAt == at(400))
        // Rework counts earlier failed runs, not aborted ones.
        #expect(runs.map(\.reworkCount) == [0, 0, 0, 1])
    }

    @Test func twoStationsShareOneFile() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        // Both open (and so create and migrate) the new file at the same moment.
        async let opened1 = SQLiteRecordStore.open(path: path)
        async let opened2 = SQLiteRecordStore.open(path: path)
        let stations = try await [opened1, opened2]
        let perStation = 12
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (s, store) in stations.enumerated() {
                for u in 0..<perStation {
                    group.addTask {
                        let hardwareID = "uid-\(s)-\(u)"
                        let run = try await store.startRun(RunStart(hardwareID: hardwareID, station: "s\(s)", slot: "\(u)", startedAt: at(0)))
                        let serial = try await store.reserveIdentity(.serial, for: hardwareID, station: "s\(s)", candidates: serials)
                        _ = try await store.markWritten(serial.id)
                        _ = try await store.commit(serial.id)
                        _ = try await store.recordStep(
                            StepRecord(name: "identity", startedAt: at(1), endedAt: at(2), outcome: .pass, message: serial.value), in: run)
                        try await store.finishRun(run, outcome: .pass, at: at(3))
                    }
                }
            }
            try await group.waitForAll()
        }
        let units = try await stations[0].units()
        #expect(units.count == 2 * perStation)
        let values = units.flatMap(\.identities).map(\.value)
        #expect(values.count == 2 * perStation && Set(values).count == values.count, "\(values)")
        #expect(Set(values) == Set((0..<(2 * perStation)).map { serials($0)! }))
        let runs = try await stations[1].runs()
        #expect(runs.count == 2 * perStation && runs.allSatisfy { $0.outcome == .pass })
    }

    @Test func stationsCreatingOneNewFileAtOnceAllOpenIt() async throws {
        let dir = try TemporaryDirectory()
        for round in 0..<8 {
            let path = dir.path("records-\(round).sqlite")
            let stores = try await withThrowingTaskGroup(of: SQLiteRecordStore.self) { group in
                for _ in 0..<4 { group.addTask { try await SQLiteRecordStore.open(path: path) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (s, store) in stores.enumerated() {
                _ = try await store.startRun(RunStart(hardwareID: "uid-\(s)", station: "s\(s)", slot: "1", startedAt: at(0)))
            }
            #expect(try await stores[0].runs().count == 4)
        }
    }

    @Test func aStationHoldingTheFileTooLongGivesABusyError() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path, busyTimeout: .milliseconds(200))
        // Another station, inside a write transaction that it does not finish for now.
        let holder = try await offThePool {
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true
            return try DatabaseQueue(path: path, configuration: configuration)
        }
        try await holder.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }

        let error = await #expect(throws: RecordsError.self) {
            _ = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(0)))
        }
        #expect(error?.code == .busy && error?.category == .connection)
        #expect(error?.message == "records database \(path) is busy: another station held it longer than 0.2 s")
        // Reading goes on meanwhile (WAL), and once the other station commits, writing does too.
        #expect(try await store.runs().isEmpty)
        try await holder.writeWithoutTransaction { try $0.execute(sql: "COMMIT") }
        _ = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(0)))
        #expect(try await store.runs().count == 1)
    }

    @Test func aFileThatIsNotADatabaseGivesOneClearError() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("recipe.yaml")
        try Data(String(repeating: "product: headset\nimages: [app.bin]\n", count: 200).utf8).write(to: URL(fileURLWithPath: path))
        let error = await #expect(throws: RecordsError.self) { _ = try await SQLiteRecordStore.open(path: path) }
        #expect(error?.code == .notADatabase && error?.category == .localFile)
        #expect(error?.message.hasPrefix("\(path) is not a usable records database") == true && error?.message.contains("\n") == false)
        // The file is left as it was.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 200 * 35)

        let missing = dir.path("no/such/dir/records.sqlite")
        let openError = await #expect(throws: RecordsError.self) { _ = try await SQLiteRecordStore.open(path: missing) }
        #expect(openError?.code == .cannotOpen && openError?.message.contains(missing) == true)
    }

    @Test func aDatabaseOfANewerTuneupIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        _ = try await SQLiteRecordStore.open(path: path)
        let raw = try await offThePool { try DatabaseQueue(path: path) }
        try await raw.write { try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9-from-the-future')") }
        let error = await #expect(throws: RecordsError.self) { _ = try await SQLiteRecordStore.open(path: path) }
        #expect(error?.code == .newerSchema)
    }
}

extension RecordStore {
    func leaseBlock(_ kind: IdentityKind, count: Int, station: String, values: [String]) async throws -> Lease {
        try await leaseBlock(kind, count: count, station: station) { $0 < values.count ? values[$0] : nil }
    }
}
