import Synchronization
import TestSupport
import Testing
@testable import Support

@Suite struct BroadcastTests {
    @Test func everySubscriberGetsEveryElementInOrder() async throws {
        let b = Broadcast<Int>()
        let one = b.subscribe(), two = b.subscribe(replay: [-1])
        for i in 0..<100 { b.yield(i) }
        b.finish(last: 100)
        var first: [Int] = [], second: [Int] = []
        for await x in one { first.append(x) }
        for await x in two { second.append(x) }
        #expect(first == Array(0...100))
        #expect(second == [-1] + Array(0...100))
        // After the end: the final element, then the end at once; nothing yielded later arrives.
        b.yield(7)
        var late: [Int] = []
        for await x in b.subscribe() { late.append(x) }
        #expect(late == [100])
        #expect(b.subscriberCount == 0)
    }

    /// A consumer cancelled while a thread yields to it: the cancellation ends its stream (`onTermination`) with the
    /// task's status locked, and a yield resuming that task waits for the same lock. `onTermination` waited for the
    /// broadcaster's lock, which the yield held: a deadlock (it hung `tuneup-bench speaker-sync` closing its player).
    @Test func cancellingAConsumerWhileElementsAreYieldedDoesNotDeadlock() async throws {
        try await withTimeLimit {
            let b = Broadcast<Int>()
            let stop = Atomic<Bool>(false)
            let done = Atomic<Bool>(false)
            try Threads.spawn(name: "yielder") {
                while !stop.load(ordering: .relaxed) { b.yield(1) }
                done.store(true, ordering: .releasing)
            }
            for _ in 0..<10_000 {
                let stream = b.subscribe(bufferingPolicy: .bufferingNewest(1))
                let consumer = Task { for await _ in stream {} }
                await Task.yield()
                consumer.cancel()
                await consumer.value
            }
            stop.store(true, ordering: .relaxed)
            try await waitUntil("the yielder ends", within: 10) { done.load(ordering: .acquiring) }
            #expect(b.subscriberCount == 0)
        }
    }

    @Test func aSubscriberThatStopsListeningIsRemoved() async throws {
        let b = Broadcast<Int>()
        var stream: AsyncStream<Int>? = b.subscribe()
        #expect(b.subscriberCount == 1)
        stream = nil
        _ = stream
        #expect(b.subscriberCount == 0)
    }
}
