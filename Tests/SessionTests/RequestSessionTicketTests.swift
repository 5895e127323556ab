import Session
import Testing
import Transport

/// Tickets of `submit` awaited in ways the family sessions do not use: the session answers each wait, never loses one.
@Suite struct RequestSessionTicketTests {
    /// A second wait for a ticket already awaited fails at once (the ticket has one reply, and it goes to the first
    /// wait); it used to take the first wait's place, which then waited forever.
    @Test func aTicketAwaitedTwiceAtOnceFailsTheSecondWaitAndAnswersTheFirst() async throws {
        try await withTimeLimit {
            let (peer, host) = TinyPeer.start()
            let session = TinySession(transport: host, definition: TinyProtocol(), options: RequestOptions(), clock: ManualClock())
            let ticket = try await session.submit(.request(3))
            let first = Task { try await session.reply(to: ticket) }
            try await waitUntil("the first wait") { await session.awaitedRequests == 1 }
            await #expect(throws: TinyError(failure: .notOpen)) { try await session.reply(to: ticket) }
            try await peer.send(.reply(3, 9))
            #expect(try await first.value == .reply(3, 9))
            #expect(await session.awaitedRequests == 0)
            await session.close()
            await peer.stop()
        }
    }
}
