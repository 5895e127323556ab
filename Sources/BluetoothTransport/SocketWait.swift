import Glibc
import Synchronization
import Transport

/// Waiting for a Bluetooth socket (connect completion, accept, the management channel's events) on the process's one
/// I/O reactor (`IOReactor`): no thread per wait, nothing blocking on Swift's cooperative pool. Internal.
enum SocketWait {
    /// What `wait(for:on:wake:timeout:)` saw.
    enum Outcome: Sendable, Equatable {
        /// The descriptor is ready; these are its `revents` (may include POLLERR/POLLHUP).
        case ready(Int16)
        /// The wake signal fired, or the waiting task was cancelled (a listener's `close()`, cancellation).
        case woken
        /// The timeout passed first.
        case timedOut
    }

    /// Waits until `fd` is ready for `interest` (or reports an error or hang-up), `wake` fires, the task is cancelled,
    /// or `timeout` (nil: none) passes on the reactor's timers (`Timers`).
    ///
    /// Returns only once the reactor no longer watches the descriptor, so the caller may close `fd` as soon as it
    /// returns. The reactor watches a duplicate of `fd` (closed before returning): several tasks may wait on one
    /// descriptor at once (accepts on one listener), and a descriptor closed by another thread meanwhile cannot leave
    /// a stale number in the reactor's epoll set.
    ///
    /// - Throws: `TransportError` when the reactor cannot watch the descriptor (`.io`) or has stopped (`.closed`).
    static func wait(for interest: IOReactor.Interest, on fd: Int32, wake: WakeSignal, timeout: Duration? = nil) async throws(TransportError) -> Outcome {
        try await wait(for: interest, on: fd, wake: wake, timeout: timeout, clock: ContinuousClock())
    }

    /// `wait(for:on:wake:timeout:)` with the timeout on `clock`: the reactor's timers for `ContinuousClock`, a task
    /// sleeping on any other clock (a test's `ManualClock`).
    static func wait<C: Clock<Duration>>(for interest: IOReactor.Interest, on fd: Int32, wake: WakeSignal, timeout: Duration?,
                                         clock: C) async throws(TransportError) -> Outcome {
        let reactor = try IOReactor.shared()
        if wake.hasFired { return .woken }
        let watched = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard watched >= 0 else {
            let e = errno
            throw TransportError(.io, "cannot wait for descriptor \(fd): \(POSIX.describe(e))", errno: e)
        }
        defer { POSIX.close(watched) }
        let registration = try reactor.register(watched)
        defer { reactor.deregister(registration, failing: CancellationError()) }
        guard wake.watch(registration, on: reactor) else { return .woken }
        defer { wake.unwatch(registration) }

        let timedOut = Mutex(false)
        let expire: @Sendable () -> Void = {
            timedOut.withLock { $0 = true }
            reactor.wake(registration)
        }
        var stopTimer: (() -> Void)?
        if let timeout {
            if let continuous = clock as? ContinuousClock {
                let timer = Timers.schedule(at: continuous.now + timeout, expire)
                stopTimer = { Timers.cancel(timer) }
            } else {
                let deadline = clock.now.advanced(by: timeout)
                let sleeper = Task {
                    do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
                    expire()
                }
                stopTimer = { sleeper.cancel() }
            }
        }
        defer { stopTimer?() }

        let events = Int16(interest == .readable ? POLLIN : POLLOUT)
        while true {
            // The count before the checks: a wake-up after them makes the reactor's wait return at once.
            guard let token = reactor.wakeCount(of: registration) else { return .woken }
            if wake.hasFired { return .woken }
            if timedOut.withLock({ $0 }) { return .timedOut }
            do {
                try await reactor.wait(interest, on: registration, unlessWokenSince: token)
            } catch is CancellationError {
                return .woken
            } catch let error as TransportError {
                throw error
            } catch {
                throw TransportError(.io, "cannot wait for descriptor \(fd): \(error)")
            }
            if wake.hasFired { return .woken }
            if timedOut.withLock({ $0 }) { return .timedOut }
            // What the descriptor reports now (the reactor tells that it is ready, not how).
            var entry = pollfd(fd: watched, events: events, revents: 0)
            if poll(&entry, 1, 0) > 0, entry.revents != 0 { return .ready(entry.revents) }
        }
    }
}

/// What wakes a `SocketWait.wait` before its descriptor is ready: a listener's `close()`. `fire()` is safe from any
/// thread, any number of times; a wait that starts after it returns `.woken` at once. Holds no descriptor. Internal.
final class WakeSignal: Sendable {
    private struct State {
        var fired = false
        var watching: [IOReactor.Registration: IOReactor] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// Wakes the waits on this signal, now and later (once; later calls do nothing).
    func fire() {
        let waiting: [(IOReactor.Registration, IOReactor)] = state.withLock { s in
            guard !s.fired else { return [] }
            s.fired = true
            return s.watching.map { ($0.key, $0.value) }
        }
        for (registration, reactor) in waiting { reactor.wake(registration) }
    }

    /// Whether `fire()` was called.
    var hasFired: Bool { state.withLock { $0.fired } }

    /// Whether a `SocketWait.wait` on this signal is under way (for tests and diagnostics).
    var isWatched: Bool { state.withLock { !$0.watching.isEmpty } }

    /// Notes a wait; false when the signal has fired already.
    fileprivate func watch(_ registration: IOReactor.Registration, on reactor: IOReactor) -> Bool {
        state.withLock { s in
            guard !s.fired else { return false }
            s.watching[registration] = reactor
            return true
        }
    }

    fileprivate func unwatch(_ registration: IOReactor.Registration) {
        state.withLock { _ = $0.watching.removeValue(forKey: registration) }
    }
}
