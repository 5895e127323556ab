import Support
import Testing

@Suite struct FIFOQueueTests {
    @Test func popsInOrderAcrossDrainsAndCompaction() {
        var queue = FIFOQueue<Int>()
        #expect(queue.popFirst() == nil && queue.isEmpty)
        var expected: [Int] = []
        var popped: [Int] = []
        // Interleaved: the queue is drained (reset) now and then and otherwise compacted once mostly taken.
        for i in 0..<1_000 {
            queue.append(i)
            expected.append(i)
            if i % 3 != 0, let first = queue.popFirst() { popped.append(first) }
            if i % 250 == 0 { while let first = queue.popFirst() { popped.append(first) } }
            #expect(queue.count == expected.count - popped.count)
        }
        while let first = queue.popFirst() { popped.append(first) }
        #expect(popped == expected && queue.isEmpty && queue.count == 0)
        queue.append(7)
        queue.removeAll()
        #expect(queue.popFirst() == nil)
    }
}
