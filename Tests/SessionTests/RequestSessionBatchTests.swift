import Session
import Testing
import Transport

/// `requests(_:)`: a batch of requests from one task, pipelined, outcomes in request order.
extension RequestSessionTests {
    /// Free keys go out in one send; the replies come back out of order but are returned in request order; a key
    /// taken earlier in the batch goes out after the batch's own requests are done.
    @Test func aBatchGoesOutInOneSendAndReturnsOutcomesInRequestOrder() async throws {
        // The peer holds back its answer to key 1 until key 2 comes, then answers both, 2 first.
        try await withSession(link: { HeldTransport($0) }, respond: { request, index in
            switch index {
            case 0: []
            case 1: [.reply(2, 20), .reply(1, 10)]
            default: [.reply(request.key, 30)]
            }
        }) { f in
            let held = f.host as! HeldTransport
            let batch = Task { await f.session.requests([.request(1), .request(2), .request(1, 1)]) }
            try await waitUntil("the batch's send is on the link and held") { held.holding }
            held.release()
            let outcomes = try await batch.value.map { try $0.get() }
            #expect(outcomes == [.reply(1, 10), .reply(2, 20), .reply(1, 30)])
            let frames = [Tiny.request(1), .request(2)].flatMap { TinyProtocol().encode($0, for: .byteStream) }
            #expect(held.sends.first == frames, "the two free keys in one send")
            #expect(f.peer.requests == [.request(1), .request(2), .request(1, 1)], "the repeated key last")
            let stats = await f.session.statistics
            #expect(stats.requests == 3 && stats.replies == 3 && stats.timeouts == 0)
            #expect(f.clock.now == .init(offset: .zero))
        }
    }

    /// Each request of a batch is retransmitted and fails as `request` would; one failing does not fail the rest.
    @Test func eachRequestOfABatchIsRetransmittedAndFailsOnItsOwn() async throws {
        // Key 3 is answered on its second send, key 4 at once, key 5 never.
        try await withSession(options: RequestOptions(timeout: .seconds(2), retransmissions: 1, pendingTimeout: .seconds(10)),
                              respond: { request, index in
            switch request.key {
            case 3: index == 0 ? [] : [.reply(3, 33)]
            case 4: [.reply(4, 44)]
            default: []
            }
        }) { f in
            let batch = Task { await f.session.requests([.request(3), .request(4), .request(5)]) }
            try await waitUntil("three sends and their timers") { f.peer.requests.count == 3 && f.clock.deadlines == [.seconds(2), .seconds(2)] }
            f.clock.advance(by: .seconds(2))
            try await waitUntil("both resent") { f.peer.requests.count == 5 && f.clock.deadlines == [.seconds(4)] }
            f.clock.advance(by: .seconds(2))
            let outcomes = await batch.value
            #expect(try outcomes[0].get() == .reply(3, 33))
            #expect(try outcomes[1].get() == .reply(4, 44))
            #expect(throws: TinyError(failure: .noAnswer(command: 5, waited: .seconds(2), attempts: 2))) { try outcomes[2].get() }
            let stats = await f.session.statistics
            #expect(stats.requests == 3 && stats.retransmissions == 2 && stats.timeouts == 3 && stats.replies == 2)
        }
    }

    /// Cancelling the batch's task ends every outstanding request at once, and their keys are free for others.
    @Test func cancellingABatchEndsEveryOutstandingRequest() async throws {
        try await withSession(options: RequestOptions(timeout: .seconds(10), retransmissions: 0)) { f in
            let batch = Task { await f.session.requests([.request(1), .request(2)]) }
            try await waitUntil("both requests reached the peer") { f.peer.requests.count == 2 }
            batch.cancel()
            let outcomes = await batch.value
            #expect(outcomes.count == 2)
            for outcome in outcomes { #expect(throws: CancellationError.self) { try outcome.get() } }
            #expect(await f.session.queuedRequests == 0)
            #expect(f.clock.now == .init(offset: .zero), "virtual time never moved")
        }
    }
}
