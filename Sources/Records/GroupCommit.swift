import GRDB
import Synchronization

/// Changes to one SQLite file committed together: every change waiting when the writer is free goes into one
/// IMMEDIATE transaction, each in a savepoint of its own, and one commit (one fsync of the WAL) makes all of them
/// durable before any caller returns. A change that throws is rolled back to its savepoint and only its caller gets
/// the error; a transaction that cannot begin or commit (busy, disk full) fails every change in it, none kept.
///
/// Sixty-four units at once each record a run, its steps and measurements: one fsync per change made every unit wait
/// in line behind the others' (the station's own time per unit, `tuneup-bench station`). Durability is unchanged: a
/// caller returns only after the commit that holds its change.
final class GroupCommit: Sendable {
    private struct Job: Sendable {
        let body: @Sendable (Database) throws -> any Sendable
        let continuation: CheckedContinuation<any Sendable, any Error>
    }

    private let writer: any DatabaseWriter
    private let state = Mutex((jobs: [Job](), draining: false))

    init(_ writer: any DatabaseWriter) {
        self.writer = writer
    }

    /// Runs `body` in the next transaction and returns its result once that transaction is committed.
    func perform<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let value = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<any Sendable, any Error>) in
            let start = state.withLock { s in
                s.jobs.append(Job(body: body, continuation: continuation))
                defer { s.draining = true }
                return !s.draining
            }
            // The batches run on the writer's own queue, off the cooperative pool: a change waits for no pool thread
            // before it is written (at 64 units at once every thread of the pool is busy), and its caller is woken
            // straight from the commit.
            if start { writer.asyncWriteWithoutTransaction { db in self.drain(db) } }
        }
        return value as! T  // the job's own body produced it
    }

    /// Commits batches until nothing waits. On the writer's queue.
    private func drain(_ db: Database) {
        while true {
            let jobs: [Job] = state.withLock { s in
                if s.jobs.isEmpty { s.draining = false }
                defer { s.jobs.removeAll() }
                return s.jobs
            }
            if jobs.isEmpty { return }
            var outcomes: [Result<any Sendable, any Error>] = []
            do {
                try db.inTransaction(.immediate) {
                    for job in jobs {
                        do {
                            var value: (any Sendable)?
                            try db.inSavepoint {
                                value = try job.body(db)
                                return .commit
                            }
                            outcomes.append(.success(value!))
                        } catch {
                            outcomes.append(.failure(error))
                        }
                    }
                    return .commit
                }
            } catch {
                outcomes = jobs.map { _ in .failure(error) }
            }
            for (job, outcome) in zip(jobs, outcomes) { job.continuation.resume(with: outcome) }
        }
    }
}
