import Glibc
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
            try await Task.sleep(for: .milliseconds(30))
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
            try await Task.sleep(for: .milliseconds(20))
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
            try await Task.sleep(for: .milliseconds(20))
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
                try await Task.sleep(for: .milliseconds(20))
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
            try await Task.sleep(for: .milliseconds(20))
            reactor.shutdown()
            await expectTransportError(.closed) { try await waiting.value }
            await expectTransportError(.closed) { _ = try reactor.register(r) }
            reactor.shutdown() // idempotent
        }
    }

    @Test func dedicatedThreadRunsBlockingWorkOffThePool() async throws {
        try await withTimeLimit {
            // Ten blocking 300 ms sleeps at once run in parallel on their own threads; on the cooperative pool
            // (one thread per core) they would take 1.5 s or more.
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<10 {
                    group.addTask {
                        try await DedicatedThread.run(name: "test-block") { () -> Int in
                            usleep(300_000)
                            return i
                        }
                    }
                }
                var seen: Set<Int> = []
                for try await i in group { seen.insert(i) }
                #expect(seen == Set(0..<10))
            }
            #expect(ContinuousClock.now - start < .milliseconds(1200))
            // Cancellation returns promptly; the late result is discarded.
            let slow = Task { try await DedicatedThread.run(name: "test-slow") { () -> Int in usleep(2_000_000); return 1 } }
            try await Task.sleep(for: .milliseconds(20))
            let cancelledAt = ContinuousClock.now
            slow.cancel()
            await #expect(throws: CancellationError.self) { _ = try await slow.value }
            #expect(ContinuousClock.now - cancelledAt < .milliseconds(1000))
        }
    }
}
