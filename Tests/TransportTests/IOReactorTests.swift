import Glibc
import Synchronization
import Testing
@testable import Transport

@Suite struct IOReactorTests {
    func pipePair() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        return (fds[0], fds[1])
    }

    @Test func waitResumesWhenReadableAndWritable() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r); close(w) }
            let readReg = try reactor.register(r)
            let writeReg = try reactor.register(w)
            try await reactor.wait(.writable, on: writeReg) // an empty pipe is writable at once
            let waiting = Task { try await reactor.wait(.readable, on: readReg) }
            try await waitUntil("the waiter is registered") { reactor.hasWaiter(.readable, on: readReg) }
            var byte: UInt8 = 1
            #expect(write(w, &byte, 1) == 1)
            try await waiting.value
            reactor.deregister(readReg, failing: CancellationError())
            reactor.deregister(writeReg, failing: CancellationError())
        }
    }

    @Test func cancellingAWaitFreesTheSlot() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r); close(w) }
            let reg = try reactor.register(r)
            for _ in 0..<20 {
                let waiting = Task { try await reactor.wait(.readable, on: reg) }
                try await Task.sleep(for: .milliseconds(2))
                waiting.cancel()
                await #expect(throws: CancellationError.self) { try await waiting.value }
            }
            // The slot is free again: a new waiter gets the next event.
            let waiting = Task { try await reactor.wait(.readable, on: reg) }
            var byte: UInt8 = 1
            #expect(write(w, &byte, 1) == 1)
            try await waiting.value
        }
    }

    @Test func aSecondWaiterForTheSameInterestIsRejected() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r); close(w) }
            let reg = try reactor.register(r)
            let first = Task { try await reactor.wait(.readable, on: reg) }
            try await eventually { reactor.hasWaiter(.readable, on: reg) }
            #expect(!reactor.hasWaiter(.writable, on: reg))
            await expectTransportError(.io) { try await reactor.wait(.readable, on: reg) }
            first.cancel()
            _ = await first.result
        }
    }

    @Test func deregisterFailsPendingWaitsAndLaterOnes() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r); close(w) }
            let reg = try reactor.register(r)
            let waiting = Task { try await reactor.wait(.readable, on: reg) }
            try await waitUntil("the waiter is registered") { reactor.hasWaiter(.readable, on: reg) }
            reactor.deregister(reg, failing: TransportError(.closed, "gone"))
            let error = await expectTransportError(.closed) { try await waiting.value }
            #expect(error?.message == "gone")
            await expectTransportError(.closed) { try await reactor.wait(.readable, on: reg) }
        }
    }

    @Test func wakeTokensPreventLostWakeUps() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r); close(w) }
            let reg = try reactor.register(r)
            let token = try #require(reactor.wakeCount(of: reg))
            reactor.wake(reg) // happens between "check state" and "wait"
            try await reactor.wait(.readable, on: reg, unlessWokenSince: token) // returns at once
            let fresh = try #require(reactor.wakeCount(of: reg))
            #expect(fresh == token + 1)
            let waiting = Task { try await reactor.wait(.readable, on: reg, unlessWokenSince: fresh) }
            try await waitUntil("the waiter is registered") { reactor.hasWaiter(.readable, on: reg) }
            reactor.wake(reg)
            try await waiting.value
        }
    }

    @Test func hungUpDescriptorsWakeWaitersWithoutSpinning() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r) }
            let reg = try reactor.register(r)
            close(w) // read end now reports EPOLLHUP forever
            try await reactor.wait(.readable, on: reg)
            // With no waiter the descriptor is not re-armed; a later waiter is still woken.
            try await Task.sleep(for: .milliseconds(20))
            try await reactor.wait(.readable, on: reg)
        }
    }

    @Test func manyDescriptorsAtOnce() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            defer { reactor.shutdown() }
            let pipes = (0..<100).map { _ in pipePair() }
            defer { for p in pipes { close(p.read); close(p.write) } }
            let regs = try pipes.map { try reactor.register($0.read) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for reg in regs { group.addTask { try await reactor.wait(.readable, on: reg) } }
                try await waitUntil("every waiter is registered") { regs.allSatisfy { reactor.hasWaiter(.readable, on: $0) } }
                for p in pipes.reversed() {
                    var byte: UInt8 = 7
                    #expect(write(p.write, &byte, 1) == 1)
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func shutdownFailsWaitersAndRefusesRegistrations() async throws {
        try await withTimeLimit {
            let reactor = try IOReactor(name: "test-io")
            let (r, w) = pipePair()
            defer { close(r); close(w) }
            let reg = try reactor.register(r)
            let waiting = Task { try await reactor.wait(.readable, on: reg) }
            try await waitUntil("the waiter is registered") { reactor.hasWaiter(.readable, on: reg) }
            reactor.shutdown()
            await expectTransportError(.closed) { try await waiting.value }
            await expectTransportError(.closed) { _ = try reactor.register(r) }
            reactor.shutdown() // idempotent
        }
    }

    @Test func dedicatedThreadRunsBlockingWorkOffThePool() async throws {
        try await withTimeLimit {
            // Ten blocking calls at once run in parallel on their own threads: each blocks until all ten are blocked
            // together, which cannot happen on the cooperative pool (one thread per core). (A wall-clock bound on ten
            // parallel sleeps failed on a loaded machine; this barrier does not depend on timing.)
            let blocked = Shared(0)
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        try await DedicatedThread.run(name: "test-block") { () -> Bool in
                            blocked.withLock { $0 += 1 }
                            let deadline = ContinuousClock.now + .seconds(20)
                            while blocked.withLock({ $0 }) < 10 {
                                if ContinuousClock.now > deadline { return false }
                                usleep(1000)
                            }
                            return true
                        }
                    }
                }
                var together = 0
                for try await met in group where met { together += 1 }
                #expect(together == 10, "only \(blocked.withLock { $0 }) blocking calls ran at the same time")
            }
            // Cancellation returns while the blocking call still runs; the late result is discarded.
            let finished = Shared(false)
            let release = Shared(false)
            let slow = Task {
                try await DedicatedThread.run(name: "test-slow") { () -> Int in
                    let deadline = ContinuousClock.now + .seconds(30)
                    while !release.withLock({ $0 }), ContinuousClock.now < deadline { usleep(1000) }
                    finished.withLock { $0 = true }
                    return 1
                }
            }
            try await Task.sleep(for: .milliseconds(20))
            slow.cancel()
            await #expect(throws: CancellationError.self) { _ = try await slow.value }
            #expect(!finished.withLock { $0 }, "cancellation waited for the blocking call")
            release.withLock { $0 = true }
        }
    }
}

/// A value shared between a test and the threads it starts.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}
