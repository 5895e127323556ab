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
        url = URL(fileURLWithPath: try TestSupport.TemporaryDirectory.make("records"), isDirectory: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Serial numbers SN00000, SN00001, ...
let serials: IdentityCandidates = { String(format: "SN%05d", $0) }

/// Dates on whole seconds, so they compare equal after the round trip (the database keeps milliseconds, and a
/// fraction of a second is not exact in binary).
func at(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: 1_790_000_000 + Double(seconds)) }

/// What only the SQLite store does: its schema and journal in the file, its UNIQUE constraints, files shared by
/// stations (busy, created at once), files that are not a records database. Everything a `RecordStore` promises is
/// in RecordStoreConformanceTests, against every store.
@Suite struct RecordStoreTests {
    @Test func migratesAnEmptyFileToTheSchemaInWALMode() async throws {
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
        // Reopening (migrates nothing, keeps the data): RecordStoreConformanceTests.aReopenedStoreKeepsItsRecords.
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
