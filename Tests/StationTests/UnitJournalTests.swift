@testable import Station
import Synchronization
import TestSupport
import Testing

/// A unit's journal: its step records are written off the unit's path, and its events keep their order behind them.
@Suite struct UnitJournalTests {
    struct Refused: Error, CustomStringConvertible {
        var description: String { "refused" }
    }

    /// A write that waits until the test lets it through.
    final class Gate: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation
        private let entered = Mutex(false)

        init() { (stream, continuation) = AsyncStream<Void>.makeStream() }

        var isEntered: Bool { entered.withLock { $0 } }

        func pass() async {
            entered.withLock { $0 = true }
            for await _ in stream { return }
        }

        func open() { continuation.yield() }
    }

    final class Delivered: Sendable {
        private let events = Mutex<[StationEvent]>([])
        func append(_ event: StationEvent) { events.withLock { $0.append(event) } }
        var all: [StationEvent] { events.withLock { $0 } }
    }

    static func started(_ step: String) -> StationEvent { .stepStarted(slot: "s", hardwareID: "h", step: step) }
    static func ended(_ step: String) -> StationEvent { .stepEnded(slot: "s", hardwareID: "h", step: step, outcome: "pass", message: nil) }

    @Test func eventsWaitBehindARecordBeingWrittenAndKeepTheirOrder() async throws {
        let delivered = Delivered()
        let journal = UnitJournal(deliver: delivered.append)
        // Nothing waits: an event goes out at once.
        journal.emit(Self.started("a"))
        #expect(delivered.all == [Self.started("a")])

        let gate = Gate()
        let written = Mutex<[String]>([])
        journal.record(step: "a", { await gate.pass(); written.withLock { $0.append("a") } }, then: Self.ended("a"))
        journal.emit(Self.started("b"))
        journal.emit(.progress(slot: "s", hardwareID: "h", step: "b", fraction: 0.5))
        journal.record(step: "b", { written.withLock { $0.append("b") } }, then: Self.ended("b"))
        try await waitUntil("the first record's write began") { gate.isEntered }
        // The write is held: nothing after it is out, and the second record waits its turn.
        #expect(delivered.all == [Self.started("a")])
        #expect(written.withLock { $0 } == [])

        gate.open()
        let failure = await journal.flushed()
        #expect(failure == nil)
        #expect(written.withLock { $0 } == ["a", "b"])
        #expect(delivered.all == [
            Self.started("a"), Self.ended("a"), Self.started("b"),
            .progress(slot: "s", hardwareID: "h", step: "b", fraction: 0.5), Self.ended("b"),
        ])
        // Everything is out: the next event goes at once again.
        journal.emit(Self.started("c"))
        #expect(delivered.all.last == Self.started("c"))
    }

    @Test func theFirstWriteThatFailsIsKeptWithItsStepAndItsEventStillGoesOut() async throws {
        let delivered = Delivered()
        let journal = UnitJournal(deliver: delivered.append)
        journal.record(step: "a", { throw Refused() }, then: Self.ended("a"))
        journal.record(step: "b", { throw Refused() }, then: Self.ended("b"))
        let failure = try #require(await journal.flushed())
        #expect(failure.step == "a")
        #expect(failure.error is Refused)
        #expect(journal.failure?.step == "a")
        #expect(delivered.all == [Self.ended("a"), Self.ended("b")])
    }

    /// A stopping station's cancellation does not reach the writes: a cancelled unit's records are still written.
    @Test func aCancelledWaiterLeavesTheWritesToFinish() async throws {
        let delivered = Delivered()
        let journal = UnitJournal(deliver: delivered.append)
        let gate = Gate()
        let cancelled = Mutex<Bool?>(nil)
        journal.record(step: "a", {
            await gate.pass()
            cancelled.withLock { $0 = Task.isCancelled }
        }, then: Self.ended("a"))
        let waiter = Task { await journal.flushed() }
        try await waitUntil("the write began") { gate.isEntered }
        waiter.cancel()
        gate.open()
        _ = await waiter.value
        #expect(cancelled.withLock { $0 } == false)
        #expect(delivered.all == [Self.ended("a")])
    }
}
