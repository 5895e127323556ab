import Glibc
import Support
import Synchronization
import Testing
import TestSupport
import Transport
@testable import BluetoothTransport

/// The machinery that keeps blocking calls off the cooperative pool: socket waits on the I/O reactor (`SocketWait`)
/// and their wake-up signal, blocking calls on the executor, the overall deadline, and the listener's accept/close
/// logic (driven here through a Unix socket, since this host has no RFCOMM).
@Suite struct ThreadingTests {
    func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw TestFailure("pipe failed") }
        return (ends[0], ends[1])
    }

    /// The reader sees the byte: the wait reports readiness with the descriptor's events, and once it has returned
    /// no epoll instance of the process watches the pipe any more (it may be closed at once).
    @Test func waitReportsReadinessAndLeavesNothingWatched() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let pipeInode = try #require(inode(of: r))
            let wake = WakeSignal()
            let waiting = Task { try await SocketWait.wait(for: .readable, on: r, wake: wake) }
            try await waitUntil("the wait is under way") { wake.isWatched }
            // The reactor watches the pipe now (what makes the check below able to fail).
            try await waitUntil("the reactor watches the pipe") { epollWatchedInodes().contains(pipeInode) }
            var byte: UInt8 = 7
            #expect(write(w, &byte, 1) == 1)
            #expect(try await waiting.value == .ready(Int16(POLLIN)))
            #expect(!wake.isWatched)
            #expect(!epollWatchedInodes().contains(pipeInode), "the reactor still watches the pipe after the wait returned")
        }
    }

    /// A peer that hangs up makes the wait return with the hang-up in its events.
    @Test func waitReportsAHangUp() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r) }
            let wake = WakeSignal()
            let waiting = Task { try await SocketWait.wait(for: .readable, on: r, wake: wake) }
            try await waitUntil("the wait is under way") { wake.isWatched }
            close(w)
            let result = try await waiting.value
            guard case .ready(let events) = result else {
                Issue.record("expected readiness, got \(result)")
                return
            }
            #expect(events & Int16(POLLHUP) != 0)
        }
    }

    /// The timeout runs on the clock given: nothing happens until the injected clock reaches it, then `.timedOut`.
    @Test func waitTimesOutOnTheInjectedClock() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let clock = ManualClock()
            let wake = WakeSignal()
            let task = Task { try await SocketWait.wait(for: .readable, on: r, wake: wake, timeout: .seconds(5), clock: clock) }
            try await waitUntil("the wait is under way with its timer") { wake.isWatched && clock.pendingSleeps == 1 }
            #expect(clock.nextDeadline == .seconds(5))
            clock.advance(by: .seconds(4))
            #expect(wake.isWatched, "the wait ended before its timeout")
            clock.advance(by: .seconds(1))
            #expect(try await task.value == .timedOut)
        }
    }

    /// The same on the reactor's own timers (`ContinuousClock`): the wait ends, not before its time, and a wait that
    /// ends otherwise leaves no timer behind.
    @Test func waitTimesOutOnTheReactorTimers() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let start = ContinuousClock.now
            #expect(try await SocketWait.wait(for: .readable, on: r, wake: WakeSignal(), timeout: .milliseconds(20)) == .timedOut)
            // A floor (a loaded machine is later, never earlier); a wait that ignored its timeout would trip the limit.
            #expect(ContinuousClock.now - start >= .milliseconds(20))
            // Ready first: the hour-long timer is cancelled with the wait.
            var byte: UInt8 = 1
            #expect(write(w, &byte, 1) == 1)
            #expect(try await SocketWait.wait(for: .readable, on: r, wake: WakeSignal(), timeout: .seconds(3600)) == .ready(Int16(POLLIN)))
        }
    }

    @Test func aFiredSignalWakesAWaitUnderWayAndOneThatStartsLater() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let wake = WakeSignal()
            let waiting = Task { try await SocketWait.wait(for: .readable, on: r, wake: wake) }
            try await waitUntil("the wait is under way") { wake.isWatched }
            wake.fire()
            #expect(try await waiting.value == .woken)
            wake.fire()
            #expect(wake.hasFired)
            #expect(try await SocketWait.wait(for: .readable, on: r, wake: wake) == .woken)
        }
    }

    /// Cancellation ends a wait at once (without it the wait never ends: the time limit), fifty times over, and
    /// leaves no descriptor behind.
    @Test func cancellationEndsTheWaitAndLeaksNothing() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let before = openDescriptors()
            for _ in 0..<50 {
                let wake = WakeSignal()
                let task = Task { try await SocketWait.wait(for: .readable, on: r, wake: wake) }
                try await waitUntil("the wait is under way") { wake.isWatched }
                task.cancel()
                #expect(try await task.value == .woken)
            }
            // Tests running in parallel open descriptors too: let them settle (a leak would not).
            let growth = try await settledValue(below: 25) { openDescriptors() - before }
            #expect(growth < 25)
        }
    }

    /// Fifty waits at once, on one descriptor as a listener's accepts are: no thread each (a thread per wait was
    /// fifty more threads), no descriptor each once they are over, and every one ends when its signal fires.
    @Test func concurrentWaitsHoldNoThreadEach() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            _ = try IOReactor.shared()  // the reactor's own thread, started once for the process
            let threadsBefore = threadCount()
            let descriptorsBefore = openDescriptors()
            let wakes = (0..<50).map { _ in WakeSignal() }
            let tasks = wakes.map { wake in Task { try await SocketWait.wait(for: .readable, on: r, wake: wake) } }
            try await waitUntil("all fifty waits are under way") { wakes.allSatisfy(\.isWatched) }
            // Other tests in the process start threads too (the blocking pool): a bound well below fifty.
            let growth = threadCount() - threadsBefore
            #expect(growth < 25, "\(growth) more threads while fifty waits are under way")
            for wake in wakes { wake.fire() }
            for task in tasks { #expect(try await task.value == .woken) }
            let left = try await settledValue(below: 25) { openDescriptors() - descriptorsBefore }
            #expect(left < 25)
        }
    }

    @Test func runReturnsTheValueAndCancelsPromptly() async throws {
        try await withTimeLimit {
            #expect(try await Blocking.run("t-run") { 42 } == 42)
            let discarded = Mutex<[Int]>([])
            let started = Mutex(false)
            let (release, releaseWriter) = try makePipe()
            defer { close(release); close(releaseWriter) }
            let task = Task {
                try await Blocking.run("t-run", discard: { value in discarded.withLock { $0.append(value) } }) { () -> Int in
                    started.withLock { $0 = true }
                    var entry = pollfd(fd: release, events: Int16(POLLIN), revents: 0)
                    _ = poll(&entry, 1, 60_000)  // stands for an SDP transaction that cannot be interrupted
                    return 7
                }
            }
            // The blocking call runs (a task cancelled before it started would never produce a value to discard).
            try await waitUntil("the blocking call started") { started.withLock { $0 } }
            task.cancel()
            await #expect(throws: CancellationError.self) { _ = try await task.value }
            // The cancelled caller returned while the blocking call still runs: nothing was discarded yet. (This
            // replaces a wall-clock bound that a loaded machine could exceed.)
            #expect(discarded.withLock { $0 }.isEmpty, "the caller waited for the blocking call")
            var byte: UInt8 = 1
            #expect(write(releaseWriter, &byte, 1) == 1)
            try await waitUntil("the late value is discarded") { !discarded.withLock { $0.isEmpty } }
            #expect(discarded.withLock { $0 } == [7])
        }
    }

    // MARK: - Listener accept/close logic, on a Unix socket

    func listener() throws -> (RFCOMMListener, @Sendable () throws -> Int32) {
        let (fd, connect) = try unixListener()
        return (RFCOMMListener(adoptingListeningSocket: fd, endpoint: "bt:00:AA:01:00:00:00:5", channel: 5, registration: nil, logger: nil), connect)
    }

    @Test func acceptHandsOutWorkingTransports() async throws {
        try await withTimeLimit {
            let (listener, connect) = try listener()
            defer { listener.close() }
            #expect(listener.endpoint == "bt:00:AA:01:00:00:00:5")
            #expect(!listener.isServiceRecordRegistered)
            async let accepted = listener.accept()
            try await waitUntil("accept() waits") { listener.pendingAccepts == 1 }
            let client = try FileDescriptorTransport(adopting: try connect(), peerDescription: "client")
            let server = try await accepted
            #expect(server.peerDescription == "bt:unknown")  // not an RFCOMM peer
            #expect(server.framing == .byteStream)
            let up = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            async let got = receiveExactly(up.count, from: server)
            try await client.send(up)
            #expect(try await got == up)
            try await server.send([1, 2, 3])
            #expect(try await receiveExactly(3, from: client) == [1, 2, 3])
            await client.close()
            await server.close()
        }
    }

    @Test func closeFailsPendingAndLaterAccepts() async throws {
        try await withTimeLimit {
            let (listener, _) = try listener()
            let pending = Task { try await listener.accept() }
            let second = Task { try await listener.accept() }
            try await waitUntil("both accepts wait") { listener.pendingAccepts == 2 }
            listener.close()
            // An accept that close() does not wake is cancelled by the watchdog and fails the check below.
            for task in [pending, second] {
                await #expect(throws: TransportError(.closed, "")) { _ = try await value(of: task, cancellingAfter: .seconds(30)) }
            }
            let later = await expectTransportError(.closed) { _ = try await listener.accept() }
            #expect(later?.message == "the listener on bt:00:AA:01:00:00:00:5 is closed")
            listener.close()  // idempotent
        }
    }

    @Test func cancelledAcceptKeepsTheConnectionForTheNextOne() async throws {
        try await withTimeLimit {
            let (listener, connect) = try listener()
            defer { listener.close() }
            let waiting = Task { try await listener.accept() }
            try await waitUntil("accept() waits") { listener.pendingAccepts == 1 }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await value(of: waiting, cancellingAfter: .seconds(30)) }
            let client = try FileDescriptorTransport(adopting: try connect(), peerDescription: "client")
            let server = try await listener.accept()
            try await client.send([42])
            #expect(try await server.receive() == [42])
            await client.close()
            await server.close()
        }
    }

    @Test func listenersReleaseTheirDescriptors() async throws {
        try await withTimeLimit {
            // Each listening socket is identified by its inode, so other tests opening and closing descriptors in
            // parallel cannot disturb the check (descriptor numbers get reused; socket inodes do not).
            var sockets: [String] = []
            for _ in 0..<40 {
                let (fd, _) = try unixListener()
                let target = try #require(descriptorTarget(fd))
                sockets.append(target)
                let listener = RFCOMMListener(adoptingListeningSocket: fd, endpoint: "bt:00:AA:01:00:00:00:5", channel: 5,
                                              registration: nil, logger: nil)
                let waiting = Task { try await listener.accept() }
                try await waitUntil("accept() waits") { listener.pendingAccepts == 1 }
                listener.close()
                _ = try? await value(of: waiting, cancellingAfter: .seconds(30))
            }
            // Accepts wind down (quickly, but a loaded machine may take a while); a leak never does.
            _ = try await settledValue(below: 1) { openDescriptorTargets().intersection(sockets).count }
            let stillOpen = openDescriptorTargets().intersection(sockets)
            #expect(stillOpen.isEmpty, "listening sockets still open: \(stillOpen)")
        }
    }
}
