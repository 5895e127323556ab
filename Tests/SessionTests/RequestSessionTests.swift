import Session
import Synchronization
import Testing
import Transport

/// The request/response core on virtual time: a `ManualClock` moves only when the test advances it, and the test
/// waits for the session to reach a state (a sleep registered, a request at the peer) before it does.
@Suite struct RequestSessionTests {
    let options = RequestOptions(timeout: .seconds(2), retransmissions: 2, pendingTimeout: .seconds(10))

    func session(_ host: any Transport, _ clock: ManualClock, options: RequestOptions? = nil) -> TinySession {
        TinySession(transport: host, definition: TinyProtocol(), options: options ?? self.options, clock: clock)
    }

    @Test func retransmitsAfterEachTimeoutThenFailsWithTheCount() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            let request = Task { try await s.request(.request(7)) }
            for attempt in 1...3 {
                let due = Duration.seconds(2 * attempt)
                try await waitUntil("send \(attempt) and its timer") { peer.requests.count == attempt && clock.nextDeadline == due }
                // One tick before the timeout nothing fires; at the timeout the request goes out again (or fails).
                clock.advance(by: .seconds(2) - .milliseconds(1))
                #expect(clock.pendingSleeps == 1 && clock.nextDeadline == due)
                clock.advance(by: .milliseconds(1))
            }
            await #expect(throws: TinyError(failure: .noAnswer(command: 7, waited: .seconds(2), attempts: 3))) { try await request.value }
            #expect(peer.requests == Array(repeating: .request(7), count: 3))
            let stats = await s.statistics
            #expect(stats.requests == 1 && stats.retransmissions == 2 && stats.timeouts == 3 && stats.replies == 0)
            await s.close()
            await peer.stop()
        }
    }

    @Test func perRequestTimeoutAndRetransmissionsOverrideTheOptions() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            let request = Task { try await s.request(.request(1), timeout: .milliseconds(300), retransmissions: 0) }
            try await waitUntil("the timer") { clock.nextDeadline == .milliseconds(300) }
            clock.advance(by: .milliseconds(300))
            await #expect(throws: TinyError(failure: .noAnswer(command: 1, waited: .milliseconds(300), attempts: 1))) { try await request.value }
            #expect(peer.requests.count == 1)
            await s.close()
            await peer.stop()
        }
    }

    @Test func submittedRequestTimesOutWithoutRetransmission() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            let ticket = try await s.submit(.request(3), timeout: .seconds(1))
            #expect(ticket.command == 3)
            let reply = Task { try await s.reply(to: ticket) }
            try await waitUntil("the timer") { clock.nextDeadline == .seconds(1) }
            clock.advance(by: .seconds(1))
            await #expect(throws: TinyError(failure: .ticketTimedOut(command: 3, accepted: false))) { try await reply.value }
            #expect(peer.requests.count == 1)
            await s.close()
            await peer.stop()
        }
    }

    @Test func pendingExtendsTheWaitAndStopsRetransmission() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start { request, _ in [Tiny(kind: .pending, key: request.key, value: 0)] }
            let s = session(host, clock)
            let request = Task { try await s.request(.request(4)) }
            // Pending re-arms the request's timer with the pending timeout (10 s, not 2 s).
            try await waitUntil("the pending timer") { clock.deadlines == [.seconds(10)] }
            clock.advance(by: .seconds(9))
            #expect(clock.deadlines == [.seconds(10)], "no retransmission timer")
            try await peer.send(.reply(4, 99))
            #expect(try await request.value == .reply(4, 99))
            #expect(peer.requests.count == 1, "an accepted request is never sent again")
            #expect(await s.statistics.retransmissions == 0)
            await s.close()
            await peer.stop()
        }
    }

    @Test func acceptedRequestThatNeverFinishesFailsAfterThePendingTimeout() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start { request, _ in [Tiny(kind: .pending, key: request.key, value: 0)] }
            let s = session(host, clock)
            let request = Task { try await s.request(.request(4)) }
            try await waitUntil("the pending timer") { clock.deadlines == [.seconds(10)] }
            clock.advance(by: .seconds(10))
            await #expect(throws: TinyError(failure: .notFinished(command: 4, pendingTimeout: .seconds(10)))) { try await request.value }
            #expect(peer.requests.count == 1)
            await s.close()
            await peer.stop()
        }
    }

    @Test func afterARetransmissionTheKeyStaysQuietSoALateDuplicateIsNotTheNextAnswer() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            // Ignores the first request; answers the rest with their index.
            let (peer, host) = TinyPeer.start { request, index in index == 0 ? [] : [.reply(request.key, UInt8(index))] }
            let s = session(host, clock)
            let first = Task { try await s.request(.request(5)) }
            try await waitUntil("the first timer") { clock.nextDeadline == .seconds(2) }
            clock.advance(by: .seconds(2))
            #expect(try await first.value == .reply(5, 1))

            // The same key now waits one timeout from the answer (t = 2 s) before it is sent again.
            let second = Task { try await s.request(.request(5)) }
            try await waitUntil("the second request waits out the quiet period") {
                await s.quietKeys == 1 && clock.deadlines == [.seconds(4)]
            }
            // Another key is not held up.
            #expect(try await s.request(.request(6)) == .reply(6, 2))
            // The late answer to the first send arrives during the quiet period: nobody takes it.
            try await peer.send(.reply(5, 0))
            try await waitUntil("the duplicate was dropped") { await s.statistics.unexpectedReplies == 1 }
            #expect(peer.requests == [.request(5), .request(5), .request(6)], "the second request is still held back")
            clock.advance(by: .seconds(2))
            #expect(try await second.value == .reply(5, 3), "its own answer, not the duplicate")
            #expect(peer.requests.count == 4)
            await s.close()
            await peer.stop()
        }
    }

    @Test func requestsWithTheSameKeyGoOutOneAtATimeInArrivalOrder() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            var tasks: [Task<Tiny, any Error>] = []
            for value in UInt8(1)...3 {
                tasks.append(Task { try await s.request(.request(9, value)) })
                try await waitUntil("request \(value) sent or queued") {
                    let queued = await s.queuedRequests
                    return peer.requests.count == 1 && queued == Int(value) - 1
                }
            }
            // A different key is not queued behind them.
            let other = Task { try await s.request(.request(8)) }
            try await waitUntil("the other key is sent") { peer.requests.count == 2 }
            try await peer.send(.reply(8, 80))
            #expect(try await other.value == .reply(8, 80))
            for value in UInt8(1)...3 {
                try await waitUntil("request \(value) reached the peer") {
                    peer.requests.filter { $0.key == 9 }.map(\.value) == Array(1...value)
                }
                #expect(await s.queuedRequests == 3 - Int(value))
                try await peer.send(.reply(9, value * 10))
                #expect(try await tasks[Int(value) - 1].value == .reply(9, value * 10))
            }
            #expect(clock.now == .init(offset: .zero), "no timer was needed")
            await s.close()
            await peer.stop()
        }
    }

    @Test func cancelledQueuedOrQuietRequestsReturnAtOnce() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock, options: RequestOptions(timeout: .seconds(10), retransmissions: 0))
            let first = Task { try await s.request(.request(2)) }
            try await waitUntil("the first request reached the peer") { peer.requests.count == 1 }
            let queued = Task { try await s.request(.request(2)) }
            try await waitUntil("the second request is queued") { await s.queuedRequests == 1 }
            // Virtual time never moves here: a wait that did not end on cancellation would hang (the time limit).
            var start = ContinuousClock.now
            queued.cancel()
            await #expect(throws: CancellationError.self) { try await queued.value }
            #expect(ContinuousClock.now - start < .seconds(2))
            #expect(await s.queuedRequests == 0)

            // The first one cancelled while waiting for its reply: its key is quiet for the timeout.
            first.cancel()
            await #expect(throws: CancellationError.self) { try await first.value }
            let quiet = Task { try await s.request(.request(2)) }
            try await waitUntil("the third request waits out the quiet period") {
                await s.quietKeys == 1 && clock.deadlines == [.seconds(10)]
            }
            start = ContinuousClock.now
            quiet.cancel()
            await #expect(throws: CancellationError.self) { try await quiet.value }
            #expect(ContinuousClock.now - start < .seconds(2))
            #expect(clock.pendingSleeps == 0, "the quiet wait is gone, not left sleeping")
            #expect(peer.requests.count == 1, "nothing else was sent")
            #expect(clock.now == .init(offset: .zero))
            await s.close()
            await peer.stop()
        }
    }

    @Test func everyPushReachesEverySubscriber() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            let a = await s.pushes()
            let b = await s.pushes()
            try await peer.send(Tiny(kind: .foreign, key: 1, value: 1))
            try await peer.send(Tiny(kind: .push, key: 1, value: 11))
            try await peer.send(Tiny(kind: .push, key: 2, value: 22))
            try await waitUntil("both pushes arrived") { await s.statistics.pushes == 2 }
            await s.close()
            let expected: [Tiny] = [Tiny(kind: .push, key: 1, value: 11), Tiny(kind: .push, key: 2, value: 22)]
            // Both streams hold both pushes and end with the session.
            #expect(await collect(a) == expected)
            #expect(await collect(b) == expected)
            let stats = await s.statistics
            #expect(stats.ignoredPackets == 1 && stats.unexpectedReplies == 0 && stats.decoder.frames == 3)
            await peer.stop()
        }
    }

    @Test func aLostLinkFailsEveryWaiterAndReportsOneEvent() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            let events = await s.events()
            let inFlight = Task { try await s.request(.request(1)) }
            try await waitUntil("the request reached the peer") { peer.requests.count == 1 }
            let queued = Task { try await s.request(.request(1)) }
            try await waitUntil("the second request is queued") { await s.queuedRequests == 1 }
            let ticket = try await s.submit(.request(2))
            try await waitUntil("the submitted request reached the peer") { peer.requests.count == 2 }
            await peer.stop()

            let lost = TinyError(failure: .linkLost(peer: host.peerDescription, cause: TransportError(.closed, "")))
            await #expect(throws: lost) { try await inFlight.value }
            await #expect(throws: lost) { try await queued.value }
            await #expect(throws: lost) { try await s.reply(to: ticket) }
            #expect(await collect(events) == [.disconnected(lost)])
            #expect(await !s.isOpen)
            await #expect(throws: lost) { try await s.request(.request(3)) }
            #expect(peer.requests.count == 2, "the queued request was never sent")
            #expect(clock.now == .init(offset: .zero))
        }
    }

    @Test func closingFailsWaitersWithTheClosedError() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start()
            let s = session(host, clock)
            let inFlight = Task { try await s.request(.request(1)) }
            try await waitUntil("the request reached the peer") { peer.requests.count == 1 }
            await s.close()
            let closed = TinyError(failure: .closed(peer: host.peerDescription))
            await #expect(throws: closed) { try await inFlight.value }
            await #expect(throws: closed) { try await s.submit(.request(1)) }
            #expect(clock.pendingSleeps == 0, "no timer outlives the session")
            await peer.stop()
        }
    }

    @Test func aReplyThatArrivesBeforeTheSenderWaitsIsKept() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, inner) = TinyPeer.start { request, index in [.reply(request.key, UInt8(index))] }
            let host = GatedTransport(inner)
            let s = session(host, clock)
            // Each send returns only once the session has taken in the reply: the sender then waits for a reply
            // that is already there.
            host.afterSend.withLock {
                $0 = {
                    let expected = await s.statistics.requests
                    try? await waitUntil("the reply was taken in") { await s.statistics.decoder.frames == expected }
                }
            }
            #expect(try await s.request(.request(1)) == .reply(1, 0))
            #expect(try await s.request(.request(1)) == .reply(1, 1))
            let ticket = try await s.submit(.request(2))
            #expect(try await s.reply(to: ticket) == .reply(2, 2))
            let stats = await s.statistics
            #expect(stats.replies == 3 && stats.unexpectedReplies == 0 && stats.timeouts == 0)
            await s.close()
            await peer.stop()
        }
    }

    @Test func packetLinksCarryOneMessagePerPacketAndCountBadOnes() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, host) = TinyPeer.start(framing: .packets) { request, _ in [.reply(request.key, 42)] }
            let s = session(host, clock)
            try await peer.link.send([0xEE])
            #expect(try await s.request(.request(1)) == .reply(1, 42))
            #expect(peer.requests == [.request(1)])
            #expect(await s.statistics.ignoredPackets == 1)
            await s.close()
            await peer.stop()
        }
    }
}

/// Everything a stream yields until it ends.
func collect<Element>(_ stream: AsyncStream<Element>) async -> [Element] {
    await stream.reduce(into: []) { $0.append($1) }
}
