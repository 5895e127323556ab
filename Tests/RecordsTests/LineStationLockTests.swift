import Foundation
@testable import Records
import TestSupport
import Synchronization
import Testing

/// A station's name held on a line's PostgreSQL database (`LineStationLock`), as two hosts would: refused while
/// live, free once its holder lets go, taken back after its connection drops unless another station took it.
@Suite struct LineStationLockTests {
    /// A new database of the shared throwaway server: its URL and name.
    static func database() async throws -> (ThrowawayPostgres, url: String, name: String) {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let url = try await offThePool { try pg.createDatabase() }
        let name = String(url.split(separator: "/").last!.split(separator: "?").first!)
        return (pg, url, name)
    }

    /// Ends the server session of `lock`'s connection (as an outage or a server restart would), and waits for it.
    static func dropConnection(of lock: LineStationLock, pg: ThrowawayPostgres, database: String) async throws {
        let key = lock.key
        let (high, low) = (UInt64(bitPattern: key) >> 32, UInt64(bitPattern: key) & 0xFFFF_FFFF)
        let out = try await offThePool {
            try pg.psql(database, """
                SELECT pg_terminate_backend(pid, 10000) FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid::bigint = \(high) AND objid::bigint = \(low)
                """)
        }
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "t", "no session held the lock: \(out)")
    }

    @Test func aSecondHolderOfTheNameIsRefusedOtherNamesAreNotAndTheNameIsFreeAfterRelease() async throws {
        let (_, url, _) = try await Self.database()
        let first = try await LineStationLock.acquire(station: "s1", url: url)
        let error = await #expect(throws: RecordsError.self) { _ = try await LineStationLock.acquire(station: "s1", url: url) }
        #expect(error?.code == .stationLive)
        #expect(error?.message.contains("station s1 is running already on the line's database") == true, "\(String(describing: error))")
        #expect(error?.message.contains("\n") == false)
        let other = try await LineStationLock.acquire(station: "s2", url: url)
        #expect(LineStationLock.key(of: "s1") != LineStationLock.key(of: "s2"))

        await first.release()
        let again = try await LineStationLock.acquire(station: "s1", url: url)
        #expect(again.status == .held)
        await again.release()
        await other.release()
    }

    /// The hold's connection ends while the station runs: the next check takes the name back; when another station
    /// took it in between, the hold says so (once) and does not take it.
    @Test func aDroppedConnectionTakesTheNameBackUnlessAnotherStationTookIt() async throws {
        let (pg, url, name) = try await Self.database()
        let changes = Mutex<[LineStationLock.Status]>([])
        // The watch never runs by itself here: the test calls check().
        let first = try await LineStationLock.acquire(station: "line-3", url: url, interval: .seconds(3600)) { status in
            changes.withLock { $0.append(status) }
        }
        #expect(await first.check() == .held)

        try await Self.dropConnection(of: first, pg: pg, database: name)
        #expect(await first.check() == .held)
        #expect(changes.withLock { $0.count } == 2 && changes.withLock { $0.last } == .held, "\(changes.withLock { $0 })")
        await #expect(throws: RecordsError.self) { _ = try await LineStationLock.acquire(station: "line-3", url: url) }

        try await Self.dropConnection(of: first, pg: pg, database: name)
        let second = try await LineStationLock.acquire(station: "line-3", url: url)
        #expect(await first.check() == .taken)
        #expect(await first.check() == .taken)
        #expect(changes.withLock { $0.filter { $0 == .taken }.count } == 1, "\(changes.withLock { $0 })")
        #expect(second.status == .held)
        await second.release()
        await first.release()
    }
}
