import Foundation
import Records
import TestSupport
import Testing

/// What only the PostgreSQL store does, against a real server (`ThrowawayPostgres`): its schema's constraints, URLs,
/// a server that is not there. Everything a `RecordStore` promises is in RecordStoreConformanceTests, against every
/// store.
@Suite struct PostgresRecordStoreTests {
    static func server() async throws -> ThrowawayPostgres { try await offThePool { try ThrowawayPostgres.shared() } }

    /// A store on a new database of the shared server.
    static func store() async throws -> (PostgresRecordStore, url: String) {
        let pg = try await server()
        let url = try await offThePool { try pg.createDatabase() }
        return (try await PostgresRecordStore.open(url: url), url)
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
