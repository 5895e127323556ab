import Glibc
import Support
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

    /// A reactor of its own watching the read end of a fresh pipe (`reg`), for `body`; then the pipe is closed and the
    /// reactor shut down.
    func withPipeOnReactor(_ body: (IOReactor, IOReactor.Registration, _ write: Int32) async throws -> Void) async throws {
        let reactor = try IOReactor(name: "test-io")
        defer { reactor.shutdown() }
        let (r, w) = pipePair()
        defer { close(r); close(w) }
        try await body(reactor, try reactor.register(r), w)
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
            try await withPipeOnReactor { reactor, reg, w in
                for _ in 0..<20 {
                    let waiting = Task { try await reactor.wait(.readable, on: reg) }
                    try await waitUntil("the waiter is registered") { reactor.hasWaiter(.readable, on: reg) }
                    waiting.cancel()
                    await #expect(throws: CancellationError.self) { try await waiting.value }
                    #expect(!reactor.hasWaiter(.readable, on: reg), "the cancelled waiter still holds the slot")
                }
                // The slot is free again: a new waiter gets the next event.
                let waiting = Task { try await reactor.wait(.readable, on: reg) }
                try await waitUntil("the new waiter is registered") { reactor.hasWaiter(.readable, on: reg) }
                var byte: UInt8 = 1
                #expect(write(w, &byte, 1) == 1)
                try await waiting.value
            }
        }
    }

    @Test func aSecondWaiterForTheSameInterestIsRejected() async throws {
        try await withTimeLimit {
            try await withPipeOnReactor { reactor, reg, _ in
                let first = Task { try await reactor.wait(.readable, on: reg) }
                try await eventually { reactor.hasWaiter(.readable, on: reg) }
                #expect(!reactor.hasWaiter(.writable, on: reg))
                await expectTransportError(.io) { try await reactor.wait(.readable, on: reg) }
                first.cancel()
                _ = await first.result
            }
        }
    }

    @Test func deregisterFailsPendingWaitsAndLaterOnes() async throws {
        try await withTimeLimit {
            try await withPipeOnReactor { reactor, reg, _ in
                let waiting = Task { try await reactor.wait(.readable, on: reg) }
                try await waitUntil("the waiter is registered") { reactor.hasWaiter(.readable, on: reg) }
                reactor.deregister(reg, failing: TransportError(.closed, "gone"))
                let error = await expectTransportError(.closed) { try await waiting.value }
                #expect(error?.message == "gone")
                await expectTransportError(.closed) { try await reactor.wait(.readable, on: reg) }
            }
        }
    }

    @Test func wakeTokensPreventLostWakeUps() async throws {
        try await withTimeLimit {
            try await withPipeOnReactor { reactor, reg, _ in
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
    }

    @Test func hungUpDescriptorsWakeWaitersWithoutSpinning() async throws {
        try await withTimeLimit {
            let name = "test-io-hup" // unique among the reactors tests start, so its thread can be found by name
            let reactor = try IOReactor(name: name)
            defer { reactor.shutdown() }
            let (r, w) = pipePair()
            defer { close(r) }
            let reg = try reactor.register(r)
            close(w) // read end now reports EPOLLHUP forever
            try await reactor.wait(.readable, on: reg)
            // With no waiter the descriptor is not re-armed, so the reactor thread sleeps in epoll_wait. Watch its
            // CPU time over a window in which nothing should happen (the window is what is measured, not a wait
            // for another side): a thread that kept being handed EPOLLHUP would spin and burn CPU for all of it.
            var thread: Int32?
            try await waitUntil("the reactor thread is named") {
                thread = threadID(named: name)
                return thread != nil
            }
            let tid = try #require(thread)
            let cpuBefore = try #require(threadCPUTime(tid))
            let wallBefore = ContinuousClock.now
            try await Task.sleep(for: .seconds(1))
            let cpu = try #require(threadCPUTime(tid)) - cpuBefore
            let wall = ContinuousClock.now - wallBefore
            // Idle, the thread uses microseconds. A spinning one gets its fair share of a core: even with fifty busy
            // threads on two cores that is 4% of the wall time, so 2% separates the two on a loaded CI machine.
            #expect(cpu < wall / 50, "reactor thread used \(cpu) of CPU in \(wall) with nothing to do")
            // A later waiter is still woken.
            try await reactor.wait(.readable, on: reg)
            reactor.deregister(reg, failing: CancellationError())
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
                        try await Blocking.run("test-block") { () -> Bool in
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
            let started = Shared(false)
            let finished = Shared(false)
            let release = Shared(false)
            let slow = Task {
                try await Blocking.run("test-slow") { () -> Int in
                    started.withLock { $0 = true }
                    // Stands for a blocking call that runs until released (the usleep is its work, not a wait in
                    // the test).
                    let deadline = ContinuousClock.now + .seconds(30)
                    while !release.withLock({ $0 }), ContinuousClock.now < deadline { usleep(1000) }
                    finished.withLock { $0 = true }
                    return 1
                }
            }
            try await waitUntil("the blocking call runs") { started.withLock { $0 } }
            slow.cancel()
            await #expect(throws: CancellationError.self) { _ = try await slow.value }
            #expect(!finished.withLock { $0 }, "cancellation waited for the blocking call")
            release.withLock { $0 = true }
        }
    }
}

/// The kernel's id of this process's thread named `name` (as `/proc/self/task/*/comm` shows it), if there is one.
func threadID(named name: String) -> Int32? {
    for tid in POSIX.directoryEntries("/proc/self/task") ?? [] {
        guard let id = Int32(tid) else { continue }
        if readSmallFile("/proc/self/task/\(id)/comm")?.trimmingSuffixNewline() == name { return id }
    }
    return nil
}

/// CPU time the thread `tid` of this process has used so far: the first field of `/proc/self/task/TID/schedstat`
/// (nanoseconds on a CPU), or utime + stime from `/proc/self/task/TID/stat` (clock ticks) where schedstat is absent.
func threadCPUTime(_ tid: Int32) -> Duration? {
    if let text = readSmallFile("/proc/self/task/\(tid)/schedstat"),
       let first = text.split(separator: " ").first, let ns = Int64(first) {
        return .nanoseconds(ns)
    }
    // stat: "tid (comm) state ..." where comm may hold spaces; utime and stime are fields 14 and 15.
    guard let text = readSmallFile("/proc/self/task/\(tid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
    return .seconds(Double(user + system) / Double(sysconf(Int32(_SC_CLK_TCK))))
}

/// The contents of a small text file (a /proc entry), or nil if it cannot be read.
func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = read(fd, &buffer, buffer.count)
    return n >= 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : nil
}

extension String {
    func trimmingSuffixNewline() -> String { hasSuffix("\n") ? String(dropLast()) : self }
}

/// A value shared between a test and the threads it starts.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}
