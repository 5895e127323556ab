import Glibc
import Synchronization
import Testing
import TestSupport
import Transport
@testable import BluetoothTransport

/// The machinery that keeps blocking calls off the cooperative pool: waits on dedicated threads, their wake-up
/// signal, the overall deadline, and the listener's accept/close logic (driven here through a Unix socket, since
/// this host has no RFCOMM).
@Suite struct ThreadingTests {
    func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw TestFailure("pipe failed") }
        return (ends[0], ends[1])
    }

    @Test func waitReportsReadiness() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let wake = try WakeSignal()
            defer { wake.close() }
            async let outcome = BluetoothThread.wait(for: Int16(POLLIN), on: r, wake: wake, name: "t-wait")
            try await waitUntil("the wait polls on its thread") { wake.isWatched }
            var byte: UInt8 = 7
            #expect(write(w, &byte, 1) == 1)
            let result = try await outcome
            #expect(result == .ready(Int16(POLLIN)))
        }
    }

    @Test func waitTimesOut() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let wake = try WakeSignal()
            defer { wake.close() }
            let start = ContinuousClock.now
            let result = try await BluetoothThread.wait(for: Int16(POLLIN), on: r, wake: wake, timeout: .milliseconds(100), name: "t-wait")
            let elapsed = ContinuousClock.now - start
            #expect(result == .timedOut)
            // At least the timeout (a floor: a loaded machine is later, never earlier); a wait that ignored it would
            // never end and trip the time limit.
            #expect(elapsed >= .milliseconds(100))
        }
    }

    @Test func cancellationWakesTheWaitPromptlyAndLeaksNothing() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let before = openDescriptors()
            for _ in 0..<50 {
                let wake = try WakeSignal()
                defer { wake.close() }  // after the wait returned: its thread no longer polls the signal
                let task = Task { () throws -> BluetoothThread.WaitOutcome in
                    try await BluetoothThread.wait(for: Int16(POLLIN), on: r, wake: wake, name: "t-cancel")
                }
                try await waitUntil("the wait polls on its thread") { wake.isWatched }
                task.cancel()
                let result = try await task.value
                #expect(result == .woken)  // without the wake-up the wait never ends: the time limit
            }
            // Tests running in parallel open descriptors too: let them settle (a leak would not).
            let growth = try await settledValue(below: 25) { openDescriptors() - before }
            #expect(growth < 25)
        }
    }

    @Test func aFiredSignalWakesAWaitThatStartsLater() async throws {
        try await withTimeLimit {
            let (r, w) = try makePipe()
            defer { close(r); close(w) }
            let wake = try WakeSignal()
            wake.fire()
            wake.fire()
            #expect(wake.hasFired)
            #expect(try await BluetoothThread.wait(for: Int16(POLLIN), on: r, wake: wake, name: "t") == .woken)
            wake.close()
            wake.close()
            wake.fire()  // after close: nothing happens
        }
    }

    @Test func runReturnsTheValueAndCancelsPromptly() async throws {
        try await withTimeLimit {
            #expect(try await DedicatedThread.run(name: "t-run") { 42 } == 42)
            let discarded = Mutex<[Int]>([])
            let started = Mutex(false)
            let release = try WakeSignal()
            defer { release.close() }
            let task = Task {
                try await DedicatedThread.run(name: "t-run", discard: { value in discarded.withLock { $0.append(value) } }) { () -> Int in
                    started.withLock { $0 = true }
                    var entry = pollfd(fd: release.pollDescriptor, events: Int16(POLLIN), revents: 0)
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
            release.fire()
            try await waitUntil("the late value is discarded") { !discarded.withLock { $0.isEmpty } }
            #expect(discarded.withLock { $0 } == [7])
        }
    }

    @Test func deadlineThrowsTheTimeoutErrorAndDiscardsLateValues() async throws {
        try await withTimeLimit {
            await #expect(throws: TransportError(.timedOut, "")) {
                _ = try await Timeouts.run(limit: .milliseconds(100), timeoutError: TransportError(.timedOut, "too slow"),
                                                  discard: { (_: Int) in }) {
                    // The slow operation the deadline must cut short (an hour: not cut, it trips the time limit).
                    try await Task.sleep(for: .seconds(3600))
                    return 1
                }
            }
            // A value produced although the operation was cancelled goes to discard.
            let discarded = Mutex<[Int]>([])
            await #expect(throws: TransportError(.timedOut, "")) {
                _ = try await Timeouts.run(limit: .milliseconds(50), timeoutError: TransportError(.timedOut, "too slow"),
                                                  discard: { value in discarded.withLock { $0.append(value) } }) {
                    // Ignores cancellation: produces its value only after the deadline cancelled it (a fixed 200 ms
                    // could finish first when timers run late).
                    while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                    return 9
                }
            }
            #expect(discarded.withLock { $0 } == [9])
            let quick = try await Timeouts.run(limit: .seconds(5), timeoutError: TransportError(.timedOut, "x"), discard: { (_: Int) in }) { 3 }
            #expect(quick == 3)
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
            try await waitUntil("accept() waits on its thread") { listener.pendingAccepts == 1 }
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
            try await waitUntil("both accepts wait on their threads") { listener.pendingAccepts == 2 }
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
            try await waitUntil("accept() waits on its thread") { listener.pendingAccepts == 1 }
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
                try await waitUntil("accept() waits on its thread") { listener.pendingAccepts == 1 }
                listener.close()
                _ = try? await value(of: waiting, cancellingAfter: .seconds(30))
            }
            // Accept threads wind down (quickly, but a loaded machine may take a while); a leak never does.
            _ = try await settledValue(below: 1) { openDescriptorTargets().intersection(sockets).count }
            let stillOpen = openDescriptorTargets().intersection(sockets)
            #expect(stillOpen.isEmpty, "listening sockets still open: \(stillOpen)")
        }
    }
}
