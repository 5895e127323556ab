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

    /// The store reads and writes its rows as GRDB records (Rows.swift): they read every column as the hand-written
    /// SQL of earlier versions wrote it, and write the same text (dates to the millisecond in UTC, JSON with sorted
    /// keys, enumerations by raw value), so files of either version read the same in both.
    @Test func rowsAreReadAndWrittenAsEarlierVersionsKeptThem() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path)
        let raw = try await offThePool { try DatabaseQueue(path: path) }
        try await raw.write { db in
            try db.execute(
                sql: """
                    INSERT INTO units (hardware_id, first_seen) VALUES ('uid-1', '2026-09-21 14:13:20.000');
                    INSERT INTO leases (id, station, kind, created_at) VALUES (7, 's1', 'bt-address', '2026-09-21 14:13:20.000');
                    INSERT INTO identities (id, kind, value, state, hardware_id, station, lease_id, updated_at)
                    VALUES (3, 'bt-address', '00:1B:66:00:00:01', 'written', 'uid-1', 's1', 7, '2026-09-21 14:13:21.000');
                    INSERT INTO runs (id, hardware_id, station, slot, operator, recipe_hash, tool_version, image_hashes, started_at,
                                      ended_at, outcome, rework_count, work_order, lot, fixture, metadata)
                    VALUES (5, 'uid-1', 's1', '1-1', 'ann', 'r1', '1.0', '{"application":"ab","boot":"cd"}', '2026-09-21 14:13:20.000',
                            '2026-09-21 14:14:20.000', 'fail', 0, 'WO-1', NULL, 'F1', '{"line":"A"}');
                    INSERT INTO steps (id, run_id, name, started_at, ended_at, outcome, retries, message)
                    VALUES (9, 5, 'flash', '2026-09-21 14:13:21.000', '2026-09-21 14:13:22.000', 'fail', 2, 'boom');
                    INSERT INTO measurements (step_id, name, value, unit, low, high, marginal_low, marginal_high, outcome)
                    VALUES (9, 'rssi', -40.5, 'dBm', -60, NULL, NULL, -50, 'pass');
                    INSERT INTO attachments (run_id, step, name, media_type, size, sha256, content, created_at)
                    VALUES (5, 'flash', 'log.txt', 'text/plain', 2, 'abc', X'6869', '2026-09-21 14:13:22.000');
                    INSERT INTO answers (run_id, step, kind, label, value, answered_by, source, answered_at)
                    VALUES (5, 'scan', 'scan', 'Label', 'CODE-1', 'ann', 'page', '2026-09-21 14:13:20.000');
                    INSERT INTO releases (hardware_id, released_at, released_by, reason, failures)
                    VALUES ('uid-1', '2026-09-21 15:13:20.000', 'bob', 'checked', 1);
                    """)
        }
        let start = RunStart(
            hardwareID: "uid-1", station: "s1", slot: "1-1", operatorName: "ann", recipeHash: "r1", toolVersion: "1.0",
            imageHashes: ["application": "ab", "boot": "cd"], startedAt: at(0), workOrder: "WO-1", fixture: "F1", metadata: ["line": "A"])
        let expected = RunRecord(
            id: RunID(5), start: start, endedAt: at(60), outcome: .fail, reworkCount: 0,
            steps: [
                StepRecord(
                    name: "flash", startedAt: at(1), endedAt: at(2), outcome: .fail, retries: 2, message: "boom",
                    measurements: [Measurement(name: "rssi", value: -40.5, unit: "dBm", low: -60, marginalHigh: -50, outcome: .pass)])
            ],
            attachments: [Attachment(name: "log.txt", step: "flash", mediaType: "text/plain", size: 2, sha256: "abc", createdAt: at(2), content: nil)],
            answers: [OperatorAnswer(step: "scan", kind: .scan, label: "Label", value: "CODE-1", answeredBy: "ann", source: "page", answeredAt: at(0))])
        #expect(try await store.run(RunID(5)) == expected)
        var listed = expected
        (listed.steps, listed.attachments, listed.answers) = ([], [], [])
        let identity = Identity(
            id: IdentityID(3), kind: .bluetoothAddress, value: "00:1B:66:00:00:01", state: .written, hardwareID: "uid-1", station: "s1",
            lease: LeaseID(7), updatedAt: at(1))
        let release = Release(hardwareID: "uid-1", releasedAt: at(3600), releasedBy: "bob", reason: "checked", failures: 1)
        let unit = UnitRecord(hardwareID: "uid-1", firstSeen: at(0), identities: [identity], runs: [listed], releases: [release])
        #expect(try await store.units() == [unit])
        #expect(try await store.unit("uid-1") == unit)
        #expect(try await store.runs(hardwareID: nil, station: "s1") == [listed])
        #expect(try await store.latestFinishedRuns(station: "s1", recipeHash: "r1", limit: 5) == [listed])
        #expect(try await store.attachment(run: RunID(5), name: "log.txt")?.content == Data("hi".utf8))
        #expect(try await store.bindings(ofCode: "CODE-1") == [ScanBinding(code: "CODE-1", hardwareID: "uid-1", run: RunID(5), answeredAt: at(0))])

        // Written by the store: the text earlier versions wrote.
        let run = try await store.startRun(
            RunStart(hardwareID: "uid-2", station: "s1", slot: "1-2", imageHashes: ["b": "2", "a": "1/x"], startedAt: at(10), metadata: ["z": "1", "k": "v"]))
        _ = try await store.recordStep(
            StepRecord(name: "s", startedAt: at(11), endedAt: at(12), outcome: .pass, measurements: [Measurement(name: "m", value: 1.5, outcome: .marginal)]),
            in: run)
        try await store.finishRun(run, outcome: .pass, at: at(12))
        let columns = try await raw.read { db in
            try [
                Row.fetchOne(db, sql: "SELECT image_hashes, metadata, started_at, ended_at, outcome, rework_count, work_order FROM runs WHERE id = ?", arguments: [run.rawValue]),
                Row.fetchOne(db, sql: "SELECT first_seen FROM units WHERE hardware_id = 'uid-2'"),
                Row.fetchOne(db, sql: "SELECT name, started_at, outcome, retries, message FROM steps WHERE run_id = ?", arguments: [run.rawValue]),
                Row.fetchOne(db, sql: "SELECT value, unit, low, outcome FROM measurements WHERE name = 'm'"),
            ].map { $0.map(Self.quoted) }
        }
        #expect(columns == [
            #"image_hashes='{"a":"1\/x","b":"2"}' metadata='{"k":"v","z":"1"}' started_at='2026-09-21 14:13:30.000' ended_at='2026-09-21 14:13:32.000' outcome='pass' rework_count=0 work_order=NULL"#,
            "first_seen='2026-09-21 14:13:30.000'",
            "name='s' started_at='2026-09-21 14:13:31.000' outcome='pass' retries=0 message=''",
            "value=1.5 unit='' low=NULL outcome='marginal'",
        ])
    }

    /// Another Tuneup may change the schema of a file this store has open (a newer version migrating it, rebuilding a
    /// table with its columns in another order): SQLite prepares a statement again when it sees the change, and the
    /// store must still read every column by its name, not by where it was before.
    @Test func aTableRebuiltByAnotherConnectionIsReadByColumnName() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("records.sqlite")
        let store = try await SQLiteRecordStore.open(path: path)
        let start = RunStart(
            hardwareID: "uid-1", station: "s1", slot: "1-1", operatorName: "ann", recipeHash: "r1", toolVersion: "1.0",
            imageHashes: ["application": "ab"], startedAt: at(0), workOrder: "WO-1", metadata: ["line": "A"])
        let run = try await store.startRun(start)
        let before = try await store.runs(hardwareID: nil, station: nil)
        #expect(before.map(\.start) == [start])
        let raw = try await offThePool { try DatabaseQueue(path: path) }
        try await raw.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try db.inTransaction {
                let columns = try db.columns(in: "runs").map(\.name).reversed().joined(separator: ", ")
                try db.execute(sql: """
                    CREATE TABLE runs_rebuilt AS SELECT \(columns) FROM runs;
                    DROP TABLE runs;
                    ALTER TABLE runs_rebuilt RENAME TO runs;
                    """)
                return .commit
            }
        }
        #expect(try await store.runs(hardwareID: nil, station: nil) == before)
        #expect(try await store.run(run)?.start == start)
    }

    /// A row's columns as SQLite's `quote()` shows them: `name='text' count=1 low=NULL`.
    static func quoted(_ row: Row) -> String {
        row.columnNames.map { name in
            let text: String = switch (row[name] as DatabaseValue).storage {
            case .null: "NULL"
            case .int64(let value): "\(value)"
            case .double(let value): "\(value)"
            case .string(let value): "'\(value)'"
            case .blob(let value): "blob(\(value.count))"
            }
            return "\(name)=\(text)"
        }.joined(separator: " ")
    }
}

extension RecordStore {
    func leaseBlock(_ kind: IdentityKind, count: Int, station: String, values: [String]) async throws -> Lease {
        try await leaseBlock(kind, count: count, station: station) { $0 < values.count ? values[$0] : nil }
    }
}
