import Dispatch
import Glibc
import Synchronization
import Testing
import TestSupport
@testable import Support

@Suite struct BlockingPoolTests {
    /// 64 blocking calls at once run on at most the pool's threads and all complete; two of them that wait for each
    /// other finish, so the pool does run calls side by side; idle threads end.
    @Test func manyBlockingCallsShareABoundedPool() async throws {
        let pool = BlockingPool(maxThreads: 4, idleTimeout: 0.5)
        let counts = Counts()
        try await withTimeLimit {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<64 {
                    group.addTask {
                        try await Blocking.perform("test-blocking", pool: pool) {
                            counts.state.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) }
                            usleep(2_000)  // the blocking call itself: it holds its thread for a while
                            counts.state.withLock { $0.running -= 1; $0.done += 1 }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Side by side: each of two jobs signals the other and waits for it (one thread alone would never finish).
            let (a, b) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            async let first: Void = Blocking.perform("test-a", pool: pool) { a.signal(); b.wait() }
            async let second: Void = Blocking.perform("test-b", pool: pool) { b.signal(); a.wait() }
            _ = try await (first, second)
        }
        let (done, peak) = counts.state.withLock { ($0.done, $0.peak) }
        #expect(done == 64)
        #expect(pool.peakThreads <= 4 && peak <= 4)
        try await waitUntil("the idle threads ended", within: 30) { pool.threads == 0 }
    }

    /// A job may submit jobs, and so may a deinit that releasing a finished job triggers: nothing is released inside
    /// the pool's lock. (The pool used to drop finished jobs inside its lock when it compacted its queue, after 64
    /// jobs: a deinit that submitted a job then took the same lock, "Recursive call to lock Mutex", SIGILL: the hub
    /// crash of playing and stopping media.)
    @Test func jobsAndTheDeinitsTheirReleaseTriggersMaySubmitJobs() async throws {
        let pool = BlockingPool(maxThreads: 2, idleTimeout: 0.5)
        let counts = Counts()
        let total = 300
        try await withTimeLimit {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<total {
                    group.addTask {
                        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                            // The resource's deinit submits a job when the finished job that captured it is released.
                            let resource = ReleasedOnThePool(pool: pool, counts: counts)
                            do {
                                try pool.submit(name: "test-outer") {
                                    withExtendedLifetime(resource) {}
                                    do {
                                        try pool.submit(name: "test-inner") {  // a job that submits a job
                                            counts.state.withLock { $0.done += 1 }
                                            c.resume()
                                        }
                                    } catch {
                                        c.resume(throwing: error)
                                    }
                                }
                            } catch {
                                c.resume(throwing: error)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await waitUntil("every deinit's job ran") { counts.state.withLock { $0.running } == total }
        }
        #expect(counts.state.withLock { $0.done } == total)
    }

    /// A serial lane runs its jobs one at a time in submission order, also when jobs queue jobs on it, and releases
    /// them outside its lock (a job's deinit may queue on the same lane).
    @Test func aSerialLaneRunsItsJobsOneAtATimeInOrder() async throws {
        let pool = BlockingPool(maxThreads: 4, idleTimeout: 0.5)
        let lane = SerialLane("test-lane", pool: pool)
        let log = Mutex((order: [Int](), running: 0, overlapped: false))
        try await withTimeLimit {
            for i in 0..<200 {
                let resource = i % 50 == 0 ? ReleasedOnALane(lane: lane) : nil
                try lane.submit {
                    withExtendedLifetime(resource) {}
                    log.withLock { $0.running += 1; if $0.running > 1 { $0.overlapped = true } }
                    usleep(100)
                    log.withLock { $0.order.append(i); $0.running -= 1 }
                }
            }
            // Waits behind every job queued before it.
            let count = try await lane.perform(unavailable: { $0 }) { () throws(SupportError) -> Int in log.withLock { $0.order.count } }
            #expect(count == 200)
        }
        let (order, overlapped) = log.withLock { ($0.order, $0.overlapped) }
        #expect(order == Array(0..<200))
        #expect(!overlapped)
    }

    @Test func blockingRunReturnsPromptlyWhenCancelledAndDiscardsTheLateResult() async throws {
        let release = DispatchSemaphore(value: 0)
        let started = Mutex(false)
        let discarded = Mutex(false)
        let task = Task {
            try await Blocking.run("test-cancel", discard: { _ in discarded.withLock { $0 = true } }) { () -> Int in
                started.withLock { $0 = true }
                release.wait()
                return 7
            }
        }
        try await waitUntil("the blocking call started") { started.withLock { $0 } }
        task.cancel()
        let outcome = await task.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        release.signal()
        try await waitUntil("the late result was discarded") { discarded.withLock { $0 } }
    }
}

private final class Counts: Sendable {
    let state = Mutex((running: 0, peak: 0, done: 0))
}

/// Submits a job to `pool` from its deinit (as a decoder's last reference releases it on the blocking pool); the job
/// counts itself in `running`.
private final class ReleasedOnThePool: Sendable {
    let pool: BlockingPool
    let counts: Counts
    init(pool: BlockingPool, counts: Counts) {
        self.pool = pool
        self.counts = counts
    }
    deinit {
        let counts = counts
        try? pool.submit(name: "test-deinit") { counts.state.withLock { $0.running += 1 } }
    }
}

/// Queues a job on `lane` from its deinit.
private final class ReleasedOnALane: Sendable {
    let lane: SerialLane
    init(lane: SerialLane) { self.lane = lane }
    deinit { try? lane.submit {} }
}
