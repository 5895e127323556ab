import Foundation
import GRDB
import Synchronization
import Testing
import TestSupport
@testable import Records

/// Changes committed together: each in its own savepoint, one commit for all that waited.
@Suite struct GroupCommitTests {
    func database() throws -> DatabasePool {
        let directory = try TestSupport.TemporaryDirectory.make("group-commit")
        let pool = try DatabasePool(path: directory + "/t.sqlite")
        try pool.write { try $0.execute(sql: "CREATE TABLE t (n INTEGER PRIMARY KEY)") }
        return pool
    }

    @Test func aChangeThatThrowsIsRolledBackAloneAndTheOthersAreKept() async throws {
        try await withTimeLimit {
            let pool = try database()
            let commits = GroupCommit(pool)
            struct Refused: Error {}
            let results = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for n in 0..<40 {
                    group.addTask {
                        do {
                            let written = try await commits.perform { db -> Int in
                                try db.execute(sql: "INSERT INTO t (n) VALUES (?)", arguments: [n])
                                if n % 7 == 3 { throw Refused() }
                                return n
                            }
                            #expect(written == n, "each caller gets its own change's result")
                            return (n, true)
                        } catch is Refused {
                            return (n, false)
                        }
                    }
                }
                return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            let kept = try await pool.read { try Int.fetchAll($0, sql: "SELECT n FROM t ORDER BY n") }
            #expect(kept == (0..<40).filter { $0 % 7 != 3 })
            #expect(results.filter { !$0.value }.keys.sorted() == (0..<40).filter { $0 % 7 == 3 })
        }
    }

    @Test func changesWaitingTogetherShareOneCommit() async throws {
        try await withTimeLimit {
            let pool = try database()
            let commits = GroupCommit(pool)
            let transactions = Mutex(0)
            pool.add(transactionObserver: CommitCounter { transactions.withLock { $0 += 1 } }, extent: .databaseLifetime)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<64 {
                    group.addTask { _ = try await commits.perform { try $0.execute(sql: "INSERT INTO t (n) VALUES (?)", arguments: [n]) } }
                }
                try await group.waitForAll()
            }
            let rows = try await pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") }
            #expect(rows == 64)
            let commitsMade = transactions.withLock { $0 }
            #expect(commitsMade >= 1 && commitsMade < 64, "64 changes made \(commitsMade) commits")
        }
    }

    @Test func aTransactionThatCannotCommitFailsEveryChangeInIt() async throws {
        try await withTimeLimit {
            let pool = try database()
            let commits = GroupCommit(pool)
            // A deferred foreign key violated at commit: the commit fails, so no change of the batch is kept.
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE parent (id INTEGER PRIMARY KEY)")
                try db.execute(sql: "CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
            }
            await #expect(throws: (any Error).self) {
                try await commits.perform { try $0.execute(sql: "INSERT INTO child (p) VALUES (42)") }
            }
            let children = try await pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM child") }
            #expect(children == 0)
            // The writer is free again afterwards.
            _ = try await commits.perform { try $0.execute(sql: "INSERT INTO t (n) VALUES (1)") }
        }
    }
}

/// Counts commits.
private final class CommitCounter: TransactionObserver, Sendable {
    let committed: @Sendable () -> Void
    init(_ committed: @escaping @Sendable () -> Void) { self.committed = committed }
    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) { committed() }
    func databaseDidRollback(_ db: Database) {}
}
