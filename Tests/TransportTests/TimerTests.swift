import Synchronization
import Testing
import TestSupport
@testable import Transport

/// The reactor's timers: the queue's rules on plain values, then the real timerfd (order and lower bounds only, never
/// wall-clock ceilings: a busy machine may run a timer late, never early).
@Suite struct TimerQueueTests {
    /// Records which actions ran.
    final class Log: Sendable {
        let names = Mutex<[String]>([])
        func action(_ name: String) -> @Sendable () -> Void { { self.names.withLock { $0.append(name) } } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test func actionsRunInDeadlineOrderThenInTheOrderAdded() {
        let log = Log()
        var q = TimerQueue<Int>()
        _ = q.add(at: 30, log.action("c"))
        _ = q.add(at: 10, log.action("a"))
        _ = q.add(at: 20, log.action("b1"))
        _ = q.add(at: 20, log.action("b2"))
        let (due, arm) = q.fire(now: 20)
        due.forEach { $0() }
        #expect(log.all == ["a", "b1", "b2"])
        #expect(arm == 30, "armed for what is left")
        #expect(q.count == 1)
    }

    @Test func theTimerIsArmedOnlyForANewEarliestDeadline() {
        var q = TimerQueue<Int>()
        let arms = [100, 150, 100, 40].map { q.add(at: $0, {}).arm }
        #expect(arms == [100, nil, nil, 40], "armed by the first timer and by an earlier one only")
        #expect(q.armedFor == 40)
    }

    @Test func aCancelledTimerNeverRunsAndIsSkippedWhenArming() {
        let log = Log()
        var q = TimerQueue<Int>()
        let first = q.add(at: 10, log.action("first")).id
        _ = q.add(at: 50, log.action("second"))
        let cancelled = q.cancel(first), again = q.cancel(first)
        #expect(cancelled)
        #expect(!again, "cancelling twice says it was not pending")
        // The timerfd still fires at 10: nothing is due, and it is armed for 50, past the cancelled entry.
        let early = q.fire(now: 10)
        #expect(early.due.isEmpty && early.arm == 50)
        let late = q.fire(now: 60)
        late.due.forEach { $0() }
        #expect(log.all == ["second"] && late.arm == nil && q.count == 0 && q.entries == 0)
    }

    @Test func cancelledEntriesAreCleanedUpInBulk() {
        var q = TimerQueue<Int>()
        var ids: [UInt64] = []
        for i in 0..<1000 { ids.append(q.add(at: 1000 + i, {}).id) }
        for id in ids.dropLast(10) {
            let cancelled = q.cancel(id)
            #expect(cancelled)
        }
        #expect(q.count == 10)
        #expect(q.entries <= 4 * 10 + 64, "cancelled entries are not kept around: \(q.entries)")
    }

    @Test func firingWithoutATimeRunsEverything() {
        let log = Log()
        var q = TimerQueue<Int>()
        _ = q.add(at: 5, log.action("x"))
        _ = q.add(at: 500, log.action("y"))
        let (due, arm) = q.fire(now: nil)
        due.forEach { $0() }
        #expect(log.all == ["x", "y"] && arm == nil)
    }
}

@Suite struct ReactorTimerTests {
    @Test func timersRunInDeadlineOrderAndNeverEarly() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-timers")
            defer { reactor.shutdown() }
            let ran = Mutex<[(Int, Bool)]>([])
            let start = ContinuousClock.now
            for (index, ms) in [30, 10, 20, 10].enumerated() {
                let deadline = start + .milliseconds(ms)
                _ = reactor.schedule(at: deadline) { ran.withLock { $0.append((index, ContinuousClock.now >= deadline)) } }
            }
            try await waitUntil("every timer ran") { ran.withLock { $0.count } == 4 }
            let order = ran.withLock { $0 }
            #expect(order.map(\.0) == [1, 3, 2, 0])
            #expect(order.allSatisfy { $0.1 }, "a timer ran before its deadline")
            #expect(reactor.pendingTimers == 0)
        }
    }

    @Test func aCancelledTimerDoesNotRun() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-timers")
            defer { reactor.shutdown() }
            let ran = Mutex<[String]>([])
            let now = ContinuousClock.now
            // Far in the future, so that no slow machine runs it before it is cancelled.
            let cancelled = reactor.schedule(at: now + .seconds(3600)) { ran.withLock { $0.append("cancelled") } }
            _ = reactor.schedule(at: now + .milliseconds(10)) { ran.withLock { $0.append("kept") } }
            #expect(reactor.pendingTimers == 2)
            #expect(reactor.cancelTimer(cancelled))
            #expect(!reactor.cancelTimer(cancelled), "a second cancel finds nothing")
            try await waitUntil("the kept timer ran") { ran.withLock { $0 } == ["kept"] }
            #expect(reactor.pendingTimers == 0, "the cancelled timer is gone, not held")
        }
    }

    @Test func aTimerAddedFromATimerActionRuns() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-timers")
            defer { reactor.shutdown() }
            let ran = Mutex(0)
            _ = reactor.schedule(at: .now) {
                ran.withLock { $0 += 1 }
                _ = reactor.schedule(at: .now + .milliseconds(1)) { ran.withLock { $0 += 1 } }
            }
            try await waitUntil("both timers ran") { ran.withLock { $0 } == 2 }
        }
    }

    @Test func aStoppedReactorRunsTheTimersItHeld() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-timers")
            let ran = Mutex(false)
            _ = reactor.schedule(at: .now + .seconds(3600)) { ran.withLock { $0 = true } }
            reactor.shutdown()
            try await waitUntil("the held timer ran at shutdown") { ran.withLock { $0 } }
        }
    }

    @Test func sleepEndsAfterItsDeadlineAndCancellationEndsItAtOnce() async throws {
        try await withTimeLimit {
            let deadline = ContinuousClock.now + .milliseconds(20)
            try await Timers.sleep(until: deadline)
            #expect(ContinuousClock.now >= deadline)
            try await Timers.sleep(until: .now - .seconds(1))  // a past deadline returns

            let long = Task { try await Timers.sleep(until: .now + .seconds(3600)) }
            long.cancel()
            await #expect(throws: CancellationError.self) { try await long.value }
            let cancelledFirst = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await Timers.sleep(until: .now + .seconds(3600))
            }
            await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        }
    }

    @Test func scheduledTimersCanBeCancelledThroughTheFacade() async throws {
        try await withTimeLimit {
            let ran = Mutex<[String]>([])
            let now = ContinuousClock.now
            let timer = Timers.schedule(at: now + .seconds(3600)) { ran.withLock { $0.append("cancelled") } }
            _ = Timers.schedule(at: now + .milliseconds(10)) { ran.withLock { $0.append("kept") } }
            #expect(Timers.cancel(timer))
            #expect(!Timers.cancel(timer))
            try await waitUntil("the kept timer ran") { ran.withLock { $0 } == ["kept"] }
        }
    }
}
