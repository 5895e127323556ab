import Synchronization
import Testing
import TestSupport
import LightX
import HeadsetSimulator
import Transport
@testable import Headset

/// A challenge reply that comes late (after the request timed out) must not be answered: the device draws a new
/// challenge for every request, so answering an old one is refused. On an injected clock.
@Suite struct AuthenticationRetryTests {
    /// Passes the device's bytes through, except that while `holding` it keeps them back (in order) until `release()`.
    final class HoldingLink: Transport, @unchecked Sendable {
        let inner: any Transport
        private let state = Mutex<(holding: Bool, held: [[UInt8]])>((true, []))
        private let out: AsyncThrowingStream<[UInt8], any Error>
        private let input: AsyncThrowingStream<[UInt8], any Error>.Continuation
        private var iterator: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
        private var pump: Task<Void, Never>?

        init(_ inner: any Transport) {
            self.inner = inner
            (out, input) = AsyncThrowingStream.makeStream()
            iterator = out.makeAsyncIterator()
            pump = Task { [weak self, inner] in
                do {
                    while true { self?.arrived(try await inner.receive()) }
                } catch {
                    self?.input.finish(throwing: error)
                }
            }
        }

        private func arrived(_ bytes: [UInt8]) {
            let passed = state.withLock { s -> Bool in
                if s.holding { s.held.append(bytes); return false }
                return true
            }
            if passed { input.yield(bytes) }
        }

        var peerDescription: String { inner.peerDescription }
        var framing: LinkFraming { inner.framing }
        var heldCount: Int { state.withLock { $0.held.count } }

        func send(_ bytes: [UInt8]) async throws { try await inner.send(bytes) }

        /// One reader at a time (the session's).
        func receive() async throws -> [UInt8] {
            guard let bytes = try await iterator.next() else { throw TransportError(.closed, "closed") }
            return bytes
        }

        /// Delivers what was held (before anything newer) and stops holding.
        func release() {
            state.withLock { s in
                for bytes in s.held { input.yield(bytes) }
                s.held = []
                s.holding = false
            }
        }

        func close() async {
            pump?.cancel()
            await inner.close()
            input.finish()
        }
    }

    @Test func aLateChallengeReplyIsNotAnswered() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(drainInterval: .zero, timeScale: 0))
            let link = HoldingLink(await device.connect())
            let clock = ManualClock()
            let session = LightXSession(transport: link, options: .init(timeout: .seconds(1), retransmissions: 2), clock: clock)
            let boot = Bootloader(session: session)
            let task = Task { try await boot.authenticate() }
            // The device answered the challenge request; its reply is held back past the timeout.
            try await waitUntil("the first challenge reply is held") { link.heldCount == 1 && clock.pendingSleeps > 0 }
            clock.advance(by: .seconds(1))
            // The session now waits again (a retransmission's reply, or the quiet period before a new handshake);
            // the late reply arrives.
            try await waitUntil("the session waits after the timeout") { clock.pendingSleeps > 0 }
            link.release()
            // The late reply has been handled (dropped in the quiet period, or taken for a retransmission's answer).
            try await waitUntil("the late reply is handled") {
                let stats = await session.statistics
                return stats.replies + stats.unexpectedReplies >= 1
            }
            // Time goes on past the quiet period; the handshake ends either way without another wait on the clock.
            clock.advance(by: .seconds(1))
            try await task.value
            #expect(await session.statistics.retransmissions == 0, "the challenge request is not repeated")
            #expect(try await boot.isAuthenticated() == true)
            await session.close()
        }
    }
}
