import Testing
@testable import Transport

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

    @Test func aSubscriberThatStopsListeningIsRemoved() async throws {
        let b = Broadcast<Int>()
        var stream: AsyncStream<Int>? = b.subscribe()
        #expect(b.subscriberCount == 1)
        stream = nil
        _ = stream
        #expect(b.subscriberCount == 0)
    }
}
