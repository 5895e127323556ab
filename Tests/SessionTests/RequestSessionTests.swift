import Session
import Testing
import Transport

/// The request/response core on virtual time: a `ManualClock` moves only when the test advances it, and the test
/// waits for the session to reach a state (a sleep registered, a request at the peer) before it does.
@Suite struct RequestSessionTests {
    /// A session on a manual clock, the peer at the other end of its in-memory link, and the host's end.
    struct Fixture: Sendable {
        let clock: ManualClock
        let peer: TinyPeer
        let session: TinySession
        let host: any Transport
    }

    /// Runs `body` on a fresh fixture (the peer answers with `respond`), then closes both ends.
    func withSession(
        framing: LinkFraming = .byteStream,
        options: RequestOptions = RequestOptions(timeout: .seconds(2), retransmissions: 2, pendingTimeout: .seconds(10)),
        link: @escaping @Sendable (any Transport) -> any Transport = { $0 },
        respond: @escaping @Sendable (_ request: Tiny, _ index: Int) async -> [Tiny] = { _, _ in [] },
        _ body: @escaping @Sendable (Fixture) async throws -> Void
    ) async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let (peer, end) = TinyPeer.start(framing: framing, respond: respond)
            let host = link(end)
            let session = TinySession(transport: host, definition: TinyProtocol(), options: options, clock: clock)
            let fixture = Fixture(clock: clock, peer: peer, session: session, host: host)
            do {
                try await body(fixture)
            } catch {
                await session.close()
                await peer.stop()
                throw error
            }
            await session.close()
            await peer.stop()
        }
    }

    @Test func retransmitsAfterEachTimeoutThenFailsWithTheCount() async throws {
        try await withSession { f in
            let request = Task { try await f.session.request(.request(7)) }
            for attempt in 1...3 {
                let due = Duration.seconds(2 * attempt)
                try await waitUntil("send \(attempt) and its timer") { f.peer.requests.count == attempt && f.clock.nextDeadline == due }
                // One tick before the timeout nothing fires; at the timeout the request goes out again (or fails).
                f.clock.advance(by: .seconds(2) - .milliseconds(1))
                #expect(f.clock.pendingSleeps == 1 && f.clock.nextDeadline == due)
                f.clock.advance(by: .milliseconds(1))
            }
            await #expect(throws: TinyError(failure: .noAnswer(command: 7, waited: .seconds(2), attempts: 3))) { try await request.value }
            #expect(f.peer.requests == Array(repeating: .request(7), count: 3))
            let stats = await f.session.statistics
            #expect(stats.requests == 1 && stats.retransmissions == 2 && stats.timeouts == 3 && stats.replies == 0)
        }
    }

    @Test func perRequestTimeoutAndRetransmissionsOverrideTheOptions() async throws {
        try await withSession { f in
            let request = Task { try await f.session.request(.request(1), timeout: .milliseconds(300), retransmissions: 0) }
            try await waitUntil("the timer") { f.clock.nextDeadline == .milliseconds(300) }
            f.clock.advance(by: .milliseconds(300))
            await #expect(throws: TinyError(failure: .noAnswer(command: 1, waited: .milliseconds(300), attempts: 1))) { try await request.value }
            #expect(f.peer.requests.count == 1)
        }
    }

    @Test func submittedRequestTimesOutWithoutRetransmission() async throws {
        try await withSession { f in
            let ticket = try await f.session.submit(.request(3), timeout: .seconds(1))
            #expect(ticket.command == 3)
            let reply = Task { try await f.session.reply(to: ticket) }
            try await waitUntil("the timer") { f.clock.nextDeadline == .seconds(1) }
            f.clock.advance(by: .seconds(1))
            await #expect(throws: TinyError(failure: .ticketTimedOut(command: 3, accepted: false))) { try await reply.value }
            #expect(f.peer.requests.count == 1)
        }
    }

    /// The peer answers Pending; the final reply comes (after 9 s of virtual time) or never.
    @Test(arguments: [true, false])
    func pendingExtendsTheWaitAndStopsRetransmission(finishes: Bool) async throws {
        try await withSession(respond: { request, _ in [Tiny(kind: .pending, key: request.key, value: 0)] }) { f in
            let request = Task { try await f.session.request(.request(4)) }
            // Pending re-arms the request's timer with the pending timeout (10 s, not 2 s).
            try await waitUntil("the pending timer") { f.clock.deadlines == [.seconds(10)] }
            f.clock.advance(by: .seconds(9))
            #expect(f.clock.deadlines == [.seconds(10)], "no retransmission timer")
            if finishes {
                try await f.peer.send(.reply(4, 99))
                #expect(try await request.value == .reply(4, 99))
            } else {
                f.clock.advance(by: .seconds(1))
                await #expect(throws: TinyError(failure: .notFinished(command: 4, pendingTimeout: .seconds(10)))) { try await request.value }
            }
            #expect(f.peer.requests.count == 1, "an accepted request is never sent again")
            #expect(await f.session.statistics.retransmissions == 0)
        }
    }

    @Test func afterARetransmissionTheKeyStaysQuietSoALateDuplicateIsNotTheNextAnswer() async throws {
        // The peer ignores the first request and answers the rest with their index.
        try await withSession(respond: { request, index in index == 0 ? [] : [.reply(request.key, UInt8(index))] }) { f in
            let first = Task { try await f.session.request(.request(5)) }
            try await waitUntil("the first timer") { f.clock.nextDeadline == .seconds(2) }
            f.clock.advance(by: .seconds(2))
            #expect(try await first.value == .reply(5, 1))

            // The same key now waits one timeout from the answer (t = 2 s) before it is sent again.
            let second = Task { try await f.session.request(.request(5)) }
            try await waitUntil("the second request waits out the quiet period") {
                await f.session.quietKeys == 1 && f.clock.deadlines == [.seconds(4)]
            }
            // Another key is not held up.
            #expect(try await f.session.request(.request(6)) == .reply(6, 2))
            // The late answer to the first send arrives during the quiet period: nobody takes it.
            try await f.peer.send(.reply(5, 0))
            try await waitUntil("the duplicate was dropped") { await f.session.statistics.unexpectedReplies == 1 }
            #expect(f.peer.requests == [.request(5), .request(5), .request(6)], "the second request is still held back")
            f.clock.advance(by: .seconds(2))
            #expect(try await second.value == .reply(5, 3), "its own answer, not the duplicate")
            #expect(f.peer.requests.count == 4)
        }
    }

    @Test func requestsWithTheSameKeyGoOutOneAtATimeInArrivalOrder() async throws {
        try await withSession { f in
            var tasks: [Task<Tiny, any Error>] = []
            for value in UInt8(1)...3 {
                tasks.append(Task { try await f.session.request(.request(9, value)) })
                try await waitUntil("request \(value) sent or queued") {
                    let queued = await f.session.queuedRequests
                    return f.peer.requests.count == 1 && queued == Int(value) - 1
                }
            }
            // A different key is not queued behind them.
            let other = Task { try await f.session.request(.request(8)) }
            try await waitUntil("the other key is sent") { f.peer.requests.count == 2 }
            try await f.peer.send(.reply(8, 80))
            #expect(try await other.value == .reply(8, 80))
            for value in UInt8(1)...3 {
                try await waitUntil("request \(value) reached the peer") {
                    f.peer.requests.filter { $0.key == 9 }.map(\.value) == Array(1...value)
                }
                #expect(await f.session.queuedRequests == 3 - Int(value))
                try await f.peer.send(.reply(9, value * 10))
                #expect(try await tasks[Int(value) - 1].value == .reply(9, value * 10))
            }
            #expect(f.clock.now == .init(offset: .zero), "no timer was needed")
        }
    }

    @Test func cancelledQueuedOrQuietRequestsReturnAtOnce() async throws {
        try await withSession(options: RequestOptions(timeout: .seconds(10), retransmissions: 0)) { f in
            let first = Task { try await f.session.request(.request(2)) }
            try await waitUntil("the first request reached the peer") { f.peer.requests.count == 1 }
            let queued = Task { try await f.session.request(.request(2)) }
            try await waitUntil("the second request is queued") { await f.session.queuedRequests == 1 }
            // Virtual time never moves here: a wait that did not end on cancellation would hang (the time limit).
            queued.cancel()
            await #expect(throws: CancellationError.self) { try await queued.value }
            #expect(await f.session.queuedRequests == 0)

            // The first one cancelled while waiting for its reply: its key is quiet for the timeout.
            first.cancel()
            await #expect(throws: CancellationError.self) { try await first.value }
            let quiet = Task { try await f.session.request(.request(2)) }
            try await waitUntil("the third request waits out the quiet period") {
                await f.session.quietKeys == 1 && f.clock.deadlines == [.seconds(10)]
            }
            quiet.cancel()
            await #expect(throws: CancellationError.self) { try await quiet.value }
            #expect(f.clock.pendingSleeps == 0, "the quiet wait is gone, not left sleeping")
            #expect(f.peer.requests.count == 1, "nothing else was sent")
            #expect(f.clock.now == .init(offset: .zero))
        }
    }

    @Test func everyPushReachesEverySubscriber() async throws {
        try await withSession { f in
            let a = await f.session.pushes()
            let b = await f.session.pushes()
            try await f.peer.send(Tiny(kind: .foreign, key: 1, value: 1))
            try await f.peer.send(Tiny(kind: .push, key: 1, value: 11))
            try await f.peer.send(Tiny(kind: .push, key: 2, value: 22))
            try await waitUntil("both pushes arrived") { await f.session.statistics.pushes == 2 }
            await f.session.close()
            let expected: [Tiny] = [Tiny(kind: .push, key: 1, value: 11), Tiny(kind: .push, key: 2, value: 22)]
            // Both streams hold both pushes and end with the session.
            #expect(await collect(a) == expected)
            #expect(await collect(b) == expected)
            let stats = await f.session.statistics
            #expect(stats.ignoredPackets == 1 && stats.unexpectedReplies == 0 && stats.decoder.frames == 3)
        }
    }

    @Test func aLostLinkFailsEveryWaiterAndReportsOneEvent() async throws {
        try await withSession { f in
            let events = await f.session.events()
            // Key 4 is quiet after an abandoned request; the next request with it waits.
            let abandoned = Task { try await f.session.request(.request(4)) }
            try await waitUntil("the abandoned request reached the peer") { f.peer.requests.count == 1 }
            abandoned.cancel()
            await #expect(throws: CancellationError.self) { try await abandoned.value }
            let quiet = Task { try await f.session.request(.request(4)) }
            try await waitUntil("a request waits out the quiet period") { await f.session.quietKeys == 1 }

            let inFlight = Task { try await f.session.request(.request(1)) }
            try await waitUntil("the request reached the peer") { f.peer.requests.count == 2 }
            let queued = Task { try await f.session.request(.request(1)) }
            try await waitUntil("the second request is queued") { await f.session.queuedRequests == 1 }
            let ticket = try await f.session.submit(.request(2))
            try await waitUntil("the submitted request reached the peer") { f.peer.requests.count == 3 }
            await f.peer.stop()

            let lost = TinyError(failure: .linkLost(peer: f.host.peerDescription, cause: TransportError(.closed, "")))
            await #expect(throws: lost) { try await inFlight.value }
            await #expect(throws: lost) { try await queued.value }
            await #expect(throws: lost) { try await quiet.value }
            await #expect(throws: lost) { try await f.session.reply(to: ticket) }
            #expect(await collect(events) == [.disconnected(lost)])
            #expect(await !f.session.isOpen)
            await #expect(throws: lost) { try await f.session.request(.request(3)) }
            #expect(f.peer.requests.map(\.key) == [4, 1, 2], "the queued and the quiet request were never sent")
            #expect(f.clock.now == .init(offset: .zero))
        }
    }

    @Test func closingFailsWaitersWithTheClosedError() async throws {
        try await withSession { f in
            let inFlight = Task { try await f.session.request(.request(1)) }
            try await waitUntil("the request reached the peer") { f.peer.requests.count == 1 }
            await f.session.close()
            let closed = TinyError(failure: .closed(peer: f.host.peerDescription))
            await #expect(throws: closed) { try await inFlight.value }
            await #expect(throws: closed) { try await f.session.submit(.request(1)) }
            #expect(f.clock.pendingSleeps == 0, "no timer outlives the session")
        }
    }

    @Test func aReplyThatArrivesBeforeTheSenderWaitsIsKept() async throws {
        try await withSession(link: { GatedTransport($0) }, respond: { request, index in [.reply(request.key, UInt8(index))] }) { f in
            // Each send returns only once the session has taken in its reply: the sender then waits for a reply
            // that is already there (one reply per request).
            let session = f.session
            (f.host as! GatedTransport).afterSend.withLock {
                $0 = {
                    let expected = await session.statistics.requests
                    try? await waitUntil("the reply was taken in") { await session.statistics.decoder.frames == expected }
                }
            }
            #expect(try await f.session.request(.request(1)) == .reply(1, 0))
            #expect(try await f.session.request(.request(1)) == .reply(1, 1))
            let ticket = try await f.session.submit(.request(2))
            #expect(try await f.session.reply(to: ticket) == .reply(2, 2))
            let stats = await f.session.statistics
            #expect(stats.replies == 3 && stats.unexpectedReplies == 0 && stats.timeouts == 0)
        }
    }

    /// Requests that come while a send is in flight go out together in the next one, in call order, on a byte
    /// stream; the first of a burst is not held back; a packet link still gets one message per send.
    @Test(arguments: [LinkFraming.byteStream, .packets])
    func requestsQueuedBehindASendInFlightGoOutTogether(framing: LinkFraming) async throws {
        try await withSession(framing: framing, link: { HeldTransport($0) }, respond: { request, _ in [.reply(request.key, 1)] }) { f in
            let held = f.host as! HeldTransport
            let first = Task { try await f.session.submit(.request(1)) }
            try await waitUntil("the first send is on the link and held") { held.holding }
            var tickets: [Task<TinySession.Ticket, any Error>] = []
            for key in UInt8(2)...10 {
                tickets.append(Task { try await f.session.submit(.request(key)) })
                try await waitUntil("request \(key) was taken") { await f.session.statistics.requests == Int(key) }
            }
            held.release()
            for ticket in [first] + tickets { _ = try await f.session.reply(to: ticket.value) }
            let frames = (1...10).map { TinyProtocol().encode(.request(UInt8($0)), for: framing) }
            if framing == .byteStream {
                #expect(held.sends == [frames[0], frames[1...].flatMap { $0 }], "one send alone, then the nine queued behind it")
            } else {
                #expect(held.sends.count == 10 && Set(held.sends) == Set(frames))
            }
            #expect(f.peer.requests.count == 10)
            if framing == .byteStream { #expect(f.peer.requests == (1...10).map { .request(UInt8($0)) }, "call order") }
        }
    }

    @Test func packetLinksCarryOneMessagePerPacketAndCountBadOnes() async throws {
        try await withSession(framing: .packets, respond: { request, _ in [.reply(request.key, 42)] }) { f in
            try await f.peer.link.send([0xEE])
            #expect(try await f.session.request(.request(1)) == .reply(1, 42))
            #expect(f.peer.requests == [.request(1)])
            #expect(await f.session.statistics.ignoredPackets == 1)
        }
    }
}

/// Everything a stream yields until it ends.
func collect<Element>(_ stream: AsyncStream<Element>) async -> [Element] {
    await stream.reduce(into: []) { $0.append($1) }
}
