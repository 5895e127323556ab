import Synchronization
import Support
import Testing

/// `withDeadline`: the caller gets `late()` on time, and a result that comes after that goes to `discard` (a
/// connection that held a lock: dropping it crashed a debug test run, "PostgresConnection deinitialized before
/// being closed").
@Suite struct DeadlineTests {
    struct Late: Error {}

    @Test func aResultThatComesLateGoesToDiscard() async throws {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let discarded = Mutex<[Int]>([])
        let (done, finished) = AsyncStream<Void>.makeStream()
        await #expect(throws: Late.self) {
            try await withDeadline(.milliseconds(10), cancelLate: false, late: { Late() }, discard: { value in
                discarded.withLock { $0.append(value) }
                finished.yield()
            }) {
                for await _ in gate { break }  // held until the caller has given up
                return 42
            }
        }
        open.yield()
        // The test's own limit: without a discard the stream ends after a minute and the expectation fails.
        let limit = Task { try? await Task.sleep(for: .seconds(60)); finished.finish() }
        for await _ in done { break }
        limit.cancel()
        #expect(discarded.withLock { $0 } == [42])
    }

    @Test func aResultInTimeIsReturnedAndNotDiscarded() async throws {
        let discarded = Mutex<[Int]>([])
        let value = try await withDeadline(.seconds(3600), late: { Late() }, discard: { value in discarded.withLock { $0.append(value) } }) {
            7
        }
        #expect(value == 7 && discarded.withLock { $0 }.isEmpty)
    }
}
