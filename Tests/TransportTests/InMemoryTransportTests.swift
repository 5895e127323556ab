import Testing
@testable import Transport

@Suite struct InMemoryTransportTests {
    @Test func deliversInOrderBothWays() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair()
            #expect(a.framing == .byteStream)
            #expect(a.peerDescription.hasPrefix("memory:") && a.peerDescription.hasSuffix(".b"))
            #expect(b.peerDescription.hasSuffix(".a"))
            for i in 0..<100 { try await a.send([UInt8(i), UInt8(i) &+ 1]) }
            var got: [UInt8] = []
            while got.count < 200 { got += try await b.receive() }
            #expect(got == (0..<100).flatMap { [UInt8($0), UInt8($0) &+ 1] })
            try await b.send([9])
            #expect(try await a.receive() == [9])
        }
    }

    @Test func byteStreamReceiveReturnsEverythingBuffered() async throws {
        let (a, b) = InMemoryTransport.pair()
        try await a.send([1, 2])
        try await a.send([3])
        #expect(try await b.receive() == [1, 2, 3])
    }

    @Test func emptySendDeliversNothing() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair()
            try await a.send([])
            try await a.send([4])
            #expect(try await b.receive() == [4])
        }
    }

    @Test func sendWaitsWhenThePeerHasCapacityUnreadBytes() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair(capacity: 1000)
            let payload = pattern(5000, seed: 5)
            let sent = Shared(false)
            let sender = Task {
                try await a.send(payload)
                sent.withLock { $0 = true }
            }
            // Only `capacity` bytes could be buffered: the first receive gets exactly those (so the sender has run),
            // and the send cannot have returned while more than `capacity` bytes of it are still unread.
            let first = try await b.receive()
            #expect(first.count == 1000)
            #expect(first == Array(payload.prefix(1000)))
            var rest: [UInt8] = []
            while rest.count < 4000 {
                // With `capacity` bytes or fewer unread, the rest of the payload may all be buffered: the send may
                // have returned then, and only then.
                let unread = 4000 - rest.count
                if unread > 1000 { #expect(!sent.withLock { $0 }, "send returned with \(unread) bytes not yet read") }
                let chunk = try await b.receive()
                #expect(chunk.count <= 1000)
                rest += chunk
            }
            try await sender.value
            #expect(first + rest == payload)
        }
    }

    @Test func blockedSendIsCancellable() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair(capacity: 10)
            try await a.send(pattern(10))
            let blocked = Task { try await a.send([1, 2, 3]) }
            let end = try #require(a as? InMemoryTransport)
            try await waitUntil("the send is parked on the full buffer") { end.hasPendingSend }
            blocked.cancel()
            await #expect(throws: CancellationError.self) { try await blocked.value }
            #expect(try await b.receive() == pattern(10))
            try await a.send([4])
            #expect(try await b.receive() == [4])
        }
    }

    @Test func closeLetsThePeerDrainThenThrowsClosed() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair()
            try await a.send([1, 2, 3])
            await a.close()
            #expect(try await b.receive() == [1, 2, 3])
            let error = await expectTransportError(.closed) { _ = try await b.receive() }
            #expect(error?.message.contains("peer closed") == true)
            await expectTransportError(.closed) { try await b.send([1]) }
            await expectTransportError(.closed) { try await a.send([1]) }
            await expectTransportError(.closed) { _ = try await a.receive() }
            await a.close() // idempotent
            await b.close()
        }
    }

    @Test func closeFailsPendingOperationsOnBothSides() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair(capacity: 4)
            let receiving = Task { try await a.receive() }
            try await b.send([1, 2, 3, 4])
            #expect(try await receiving.value == [1, 2, 3, 4])
            try await b.send([5, 6, 7, 8])
            let blockedSend = Task { try await b.send([9]) }
            let end = try #require(b as? InMemoryTransport)
            try await waitUntil("the send is parked on the full buffer") { end.hasPendingSend }
            let pendingReceive = try await receiveThatWaits(on: b) { end.hasPendingReceive }
            await a.close()
            await expectTransportError(.closed) { try await blockedSend.value }
            await expectTransportError(.closed) { _ = try await pendingReceive.value }
        }
    }

    @Test func droppingAnEndClosesIt() async throws {
        try await withTimeLimit {
            var (a, b): (InMemoryTransport?, InMemoryTransport) = InMemoryTransport.makePair()
            try await a?.send([1])
            a = nil
            #expect(try await b.receive() == [1])
            await expectTransportError(.closed) { _ = try await b.receive() }
        }
    }

    @Test func cancelledReceiveThenDataArrivesGoesToTheNextReceive() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair()
            let end = try #require(b as? InMemoryTransport)
            let pending = try await receiveThatWaits(on: b) { end.hasPendingReceive }
            pending.cancel()
            await #expect(throws: CancellationError.self) { _ = try await pending.value }
            try await a.send([1, 2])
            #expect(try await b.receive() == [1, 2])
            // Race cancellation against arrivals: nothing is lost or duplicated.
            var received: [UInt8] = []
            for i in 0..<200 {
                let task = Task { try await b.receive() }
                if i % 3 == 0 { await Task.yield() }
                try await a.send([UInt8(i)])
                task.cancel()
                if case .success(let bytes) = await task.result { received += bytes }
            }
            while received.count < 200 { received += try await b.receive() }
            #expect(received == (0..<200).map { UInt8($0) })
        }
    }

    @Test func packetsFramingKeepsMessageBoundaries() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair(framing: .packets, capacity: 100)
            #expect(a.framing == .packets)
            try await a.send([1])
            try await a.send([2, 3])
            try await a.send(pattern(64))
            #expect(try await b.receive() == [1])
            #expect(try await b.receive() == [2, 3])
            #expect(try await b.receive() == pattern(64))
            // A message larger than the capacity waits for an empty buffer, then goes whole.
            try await a.send([7])
            let big = pattern(300, seed: 2)
            let sent = Shared(false)
            let sender = Task {
                try await a.send(big)
                sent.withLock { $0 = true }
            }
            // The send either parks (right: it must wait for [7] to go) or completes (wrong); wait for one of them.
            let end = try #require(a as? InMemoryTransport)
            try await waitUntil("the big send parked or finished") { end.hasPendingSend || sent.withLock { $0 } }
            #expect(!sent.withLock { $0 }, "a message larger than the free space was sent while [7] was unread")
            #expect(try await b.receive() == [7])
            #expect(try await b.receive() == big)
            try await sender.value
            #expect(sent.withLock { $0 })
        }
    }

    @Test func secondPendingReceiveIsRejected() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.makePair()
            let first = Task { try await b.receive() }
            try await eventually { b.hasPendingReceive }
            await expectTransportError(.io) { _ = try await b.receive() }
            try await a.send([1])
            #expect(try await first.value == [1])
        }
    }

    @Test func concurrentSendsStayContiguous() async throws {
        try await withTimeLimit {
            let (a, b) = InMemoryTransport.pair(capacity: 100)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<5 {
                    group.addTask { try await a.send([UInt8](repeating: UInt8(i), count: 1000)) }
                }
                group.addTask {
                    let all = try await receiveExactly(5000, from: b)
                    for start in stride(from: 0, to: 5000, by: 1000) {
                        #expect(Set(all[start..<start + 1000]).count == 1)
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}
