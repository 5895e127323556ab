import Foundation
import Records
import TestSupport
import Testing

/// The PostgreSQL store against a real server of the test's own (`ThrowawayPostgres`): the same rules as the SQLite
/// store, enforced by the server across store instances (stations), and a server that goes away.
@Suite struct PostgresRecordStoreTests {
    static func server() async throws -> ThrowawayPostgres { try await offThePool { try ThrowawayPostgres.shared() } }

    /// A store on a new database of the shared server.
    static func store() async throws -> (PostgresRecordStore, url: String) {
        let pg = try await server()
        let url = try await offThePool { try pg.createDatabase() }
        return (try await PostgresRecordStore.open(url: url), url)
    }

    @Test func migratesAnEmptyDatabaseAndReopensIt() async throws {
        let (store, url) = try await Self.store()
        let id = try await store.reserveIdentity(.serial, for: "hw-1", station: "s1", values: ["SN-1"])
        #expect(id.state == .reserved && id.value == "SN-1")
        await store.close()
        let again = try await PostgresRecordStore.open(url: url)
        #expect(try await again.identities(of: "hw-1").map(\.value) == ["SN-1"])
        await again.close()
    }

    @Test func aDatabaseOfANewerTuneupIsRefused() async throws {
        let (store, url) = try await Self.store()
        await store.close()
        let pg = try await Self.server()
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        _ = try await offThePool { try pg.psql(database, "INSERT INTO schema_migrations VALUES ('v9-future', now())") }
        let error = await #expect(throws: RecordsError.self) { _ = try await PostgresRecordStore.open(url: url) }
        #expect(error?.code == .newerSchema)
    }

    @Test func theServerItselfRefusesADuplicateValue() async throws {
        let (store, url) = try await Self.store()
        _ = try await store.reserveIdentity(.serial, for: "hw-1", station: "s1", values: ["SN-1"])
        let pg = try await Self.server()
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        await #expect(throws: ThrowawayPostgresError.self) {
            try await offThePool {
                try pg.psql(database, "INSERT INTO identities (kind, value, state, hardware_id, station, updated_at) VALUES ('serial', 'SN-1', 'voided', NULL, 'x', now())")
            }
        }
        // A second unit given the same serial, or the same Bluetooth address.
        _ = try await store.reserveIdentity(.bluetoothAddress, for: "hw-1", station: "s1", values: ["00:1B:66:00:00:01"])
        _ = try await offThePool { try pg.psql(database, "INSERT INTO units (hardware_id, first_seen) VALUES ('hw-2', now())") }
        for (kind, value) in [("serial", "SN-1"), ("bt-address", "00:1B:66:00:00:01")] {
            await #expect(throws: ThrowawayPostgresError.self) {
                try await offThePool {
                    try pg.psql(database, "INSERT INTO identities (kind, value, state, hardware_id, station, updated_at) VALUES ('\(kind)', '\(value)', 'reserved', 'hw-2', 'x', now())")
                }
            }
        }
        await store.close()
    }

    /// Four stations reserve for 40 units each, all offered the same candidates: every value goes to one unit, every
    /// unit gets one value.
    @Test func fourStationsRacingNeverShareAValue() async throws {
        let (first, url) = try await Self.store()
        var stores = [first]
        for _ in 0..<3 { stores.append(try await PostgresRecordStore.open(url: url)) }
        let candidates: IdentityCandidates = { $0 < 1000 ? String(format: "SN-%04d", $0) : nil }
        let issued = try await withThrowingTaskGroup(of: [Identity].self) { group in
            for (k, store) in stores.enumerated() {
                group.addTask {
                    var mine: [Identity] = []
                    for unit in 0..<40 {
                        mine.append(try await store.reserveIdentity(.serial, for: "hw-\(k)-\(unit)", station: "s\(k)", candidates: candidates))
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(issued.count == 160)
        #expect(Set(issued.map(\.value)).count == 160)
        #expect(Set(issued.compactMap(\.hardwareID)).count == 160)
        for store in stores { await store.close() }
    }

    @Test func identitiesLiveAsOnSQLite() async throws {
        let (store, url) = try await Self.store()
        let other = try await PostgresRecordStore.open(url: url)
        let a = try await store.reserveIdentity(.bluetoothAddress, for: "hw-a", station: "s1", values: ["02:00:00:00:00:01", "02:00:00:00:00:02"])
        let again = try await other.reserveIdentity(.bluetoothAddress, for: "hw-a", station: "s2", values: ["02:00:00:00:00:02"])
        #expect(again == a, "the unit gets back the identity it was given, from any station")
        _ = try await store.markWritten(a.id)
        #expect(try await store.commit(a.id).state == .committed)
        let committedAgain = try await other.commit(a.id)
        #expect(committedAgain.state == .committed, "again on committed is a no-op")
        let refused = await #expect(throws: RecordsError.self) { _ = try await store.void(a.id) }
        #expect(refused?.code == .invalidTransition)

        let b = try await store.reserveIdentity(.serial, for: "hw-b", station: "s1", values: ["SN-1"])
        _ = try await store.void(b.id)
        let exhausted = await #expect(throws: RecordsError.self) {
            _ = try await other.reserveIdentity(.serial, for: "hw-c", station: "s2", values: ["SN-1"])
        }
        #expect(exhausted?.code == .poolExhausted, "a voided value is never issued again")

        let lease = try await store.leaseBlock(.serial, count: 3, station: "s1") { $0 < 10 ? "L-\($0)" : nil }
        #expect(lease.identities.map(\.value) == ["L-0", "L-1", "L-2"])
        let fromLease = try await other.reserveIdentity(.serial, for: "hw-d", fromLease: lease.id)
        #expect(fromLease.value == "L-0" && fromLease.state == .reserved)
        let voided = try await store.voidUnused(lease: lease.id)
        #expect(voided.map(\.value) == ["L-1", "L-2"])
        await store.close()
        await other.close()
    }

    @Test func runsStepsAndMeasurementsAreReadBack() async throws {
        let (store, _) = try await Self.store()
        let started = Date(timeIntervalSince1970: 1_800_000_000.123)
        let first = try await store.startRun(RunStart(hardwareID: "hw-1", station: "s1", slot: "usb:1-2", operatorName: "ann",
                                                     recipeHash: "abc", toolVersion: "0.1.0", imageHashes: ["application": "ff"], startedAt: started))
        let step = StepRecord(name: "test:mic", startedAt: started, endedAt: started + 0.25, outcome: .fail, retries: 2, message: "low",
                              measurements: [Records.Measurement(name: "mic", value: -43.5, unit: "dBFS", low: -42, high: -34, outcome: .fail)])
        _ = try await store.recordStep(step, in: first)
        try await store.finishRun(first, outcome: .fail, at: started + 1)
        let finishedAgain = await #expect(throws: RecordsError.self) { try await store.finishRun(first, outcome: .pass, at: started + 2) }
        #expect(finishedAgain?.code == .invalidTransition)

        let second = try await store.startRun(RunStart(hardwareID: "hw-1", station: "s2", slot: "usb:1-3", startedAt: started + 10))
        let run = try #require(try await store.run(first))
        #expect(run.steps == [step], "steps, measurements and times read back as written")
        #expect(run.start.imageHashes == ["application": "ff"] && run.start.startedAt == started)
        #expect(try await store.runs(hardwareID: "hw-1", station: nil).map(\.reworkCount) == [0, 1])
        // The second station was killed: starting again closes its open run as aborted.
        #expect(try await store.abortOpenRuns(station: "s2", at: started + 20) == [second])
        #expect(try await store.unit("hw-1")?.runs.map(\.outcome) == [.fail, .aborted])
        #expect(try await store.units().count == 1)
        await store.close()
    }

    @Test func badURLsAreOneClearLine() async throws {
        for url in ["postgres://127.0.0.1/db", "postgres://u@/db", "postgres://u@h:99999/db", "postgres://u@h/", "postgres://u@h/db?sslmode=maybe"] {
            let error = await #expect(throws: RecordsError.self) { _ = try await PostgresRecordStore.open(url: url) }
            #expect(error?.code == .invalidArgument, "\(url): \(error?.message ?? "")")
        }
        let pg = try await Self.server()
        let missing = await #expect(throws: RecordsError.self) { _ = try await PostgresRecordStore.open(url: pg.url("no_such_db")) }
        #expect(missing?.code == .cannotOpen, "\(missing?.message ?? "")")
    }

    /// Nobody listens: a clear, bounded error naming the server (a hang would trip the time limit).
    @Test(.timeLimit(.minutes(1))) func anUnreachableServerIsAClearErrorNotAHang() async throws {
        let error = await #expect(throws: RecordsError.self) {
            _ = try await PostgresRecordStore.open(url: "postgres://tuneup@127.0.0.1:9/records?sslmode=disable", timeout: .seconds(3))
        }
        #expect(error?.code == .unreachable, "\(error?.message ?? "")")
        #expect(error?.message.contains("127.0.0.1:9/records") == true)
        #expect(error?.message.contains("connection refused") == true, "the system's words: \(error?.message ?? "")")
        #expect(error?.message.contains("Failure") == false && error?.message.contains("(") == true, "no library types: \(error?.message ?? "")")
    }

    /// sslmode=require against a server without TLS: said so, not "unreachable".
    @Test func requiringTLSFromAServerWithoutItSaysSo() async throws {
        let pg = try await Self.server()
        let url = pg.url("postgres").replacingOccurrences(of: "sslmode=disable", with: "sslmode=require")
        let error = await #expect(throws: RecordsError.self) {
            _ = try await PostgresRecordStore.open(url: url, timeout: .seconds(10))
        }
        #expect(error?.code == .cannotOpen, "\(error?.message ?? "")")
        #expect(error?.message.contains("does not offer TLS") == true, "\(error?.message ?? "")")
    }
}
