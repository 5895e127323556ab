import Glibc
import Synchronization
import Testing
@testable import Transport

@Suite struct BlockingPoolTests {
    /// 64 blocking calls at once run on at most the pool's threads, all complete, and a cancelled caller returns at
    /// once while its call finishes on the pool.
    @Test func manyBlockingCallsShareABoundedPool() async throws {
        let pool = BlockingPool(maxThreads: 4, idleTimeout: 0.5)
        let counts = Counts()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                        do {
                            try pool.submit(name: "test-blocking") {
                                counts.state.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) }
                                usleep(5_000)  // the blocking call itself: it must hold its thread for a while
                                counts.state.withLock { $0.running -= 1; $0.done += 1 }
                                c.resume()
                            }
                        } catch {
                            c.resume(throwing: error)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let (done, peak) = counts.state.withLock { ($0.done, $0.peak) }
        #expect(done == 64)
        #expect(pool.peakThreads <= 4 && peak <= 4)
        #expect(pool.peakThreads >= 2, "the calls did run side by side")
        // Idle threads end after the idle timeout.
        try await waitUntil("the idle threads ended", within: 10) { pool.threads == 0 }
    }

    @Test func dedicatedThreadRunUsesTheSharedPool() async throws {
        let before = BlockingPool.shared.peakThreads
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            // Each call blocks its thread for 2 ms (the workload, not a wait), so the calls overlap on the pool.
            for i in 0..<32 { group.addTask { try await DedicatedThread.run(name: "test") { usleep(2_000); return i } } }
            return try await group.reduce(0, +)
        }
        #expect(results == (0..<32).reduce(0, +))
        #expect(BlockingPool.shared.peakThreads <= BlockingPool.shared.maxThreads && before <= BlockingPool.shared.maxThreads)
    }
}

private final class Counts: Sendable {
    let state = Mutex((running: 0, peak: 0, done: 0))
}
