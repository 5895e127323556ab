import CShims
import Glibc
import Synchronization

/// The I/O reactor: ONE dedicated thread (outside Swift's cooperative pool) blocked in `epoll_wait` over the
/// registered non-blocking descriptors, plus an eventfd used to wake it for shutdown.
///
/// Contract for the back ends:
/// - Descriptors must be non-blocking. Back ends do their own `read`/`write`/`accept`/`connect` calls (non-blocking
///   calls are fine on the cooperative pool) and only ask the reactor to *wait* when a call reports `EAGAIN`.
/// - `register(_:)` returns a `Registration` whose id is never reused, so a stale registration cannot observe a
///   later descriptor that happens to get the same number.
/// - `wait(_:on:)` suspends until the descriptor is readable/writable (or has an error/hang-up, which also wakes the
///   waiter so it can discover the condition with its next syscall). At most one reader and one writer wait per
///   registration. Cancelling the waiting task removes the waiter and makes `wait` throw `CancellationError`.
/// - `deregister(_:failing:)` must be called *before* the descriptor is closed; it fails pending waits with the given
///   error, and every later `wait` on that registration throws `TransportError.closed`.
/// - `wake(_:)` resumes current waiters without an event (they re-check their state); combined with
///   `wakeCount(of:)` and `wait(_:on:unlessWokenSince:)` this gives a race-free "check state, then wait" for owners
///   whose state can change without descriptor activity.
///
/// Interest is armed with `EPOLLONESHOT` and only while somebody waits, so an idle descriptor that is hung up
/// (e.g. a pty master) never makes the thread spin.
///
/// The reactor also runs the process's precise timers (`Timers`): one timerfd in the same epoll set, armed for the
/// earliest deadline of a `TimerQueue`. Adding a timer is a heap insert under a lock, plus one `timerfd_settime` only
/// when it is the new earliest; nothing wakes a thread until a deadline passes. (`Task.sleep` on Linux makes a
/// dispatch timer source per call and wakes libdispatch's manager thread to program it: several times the cost, and
/// a session starts one timer per request.) Timer actions run on the reactor thread and must be short: resume a
/// continuation, start a task.
///
/// `package` for the other back ends of the package (BluetoothTransport waits for its sockets here): the shared
/// reactor and its descriptor waits only; timers go through `Timers`.
package final class IOReactor: Sendable {
    /// What to wait for.
    package enum Interest: Sendable {
        case readable
        case writable
    }

    /// A descriptor known to the reactor.
    package struct Registration: Sendable, Hashable {
        /// Unique for the life of the process (epoll user data).
        let id: UInt64
        /// The descriptor number.
        let fd: Int32
    }

    private struct Waiter {
        let id: UInt64
        /// A suspended `wait`, or the one-shot handler of `notify` (nil for a `wait`).
        let continuation: CheckedContinuation<Void, any Error>?
        let handler: (@Sendable () -> Void)?

        init(id: UInt64, continuation: CheckedContinuation<Void, any Error>) {
            (self.id, self.continuation, self.handler) = (id, continuation, nil)
        }

        init(id: UInt64, handler: @escaping @Sendable () -> Void) {
            (self.id, self.continuation, self.handler) = (id, nil, handler)
        }

        /// Readiness (or a wake): resumes the wait, or calls the handler.
        func resume() {
            if let continuation { continuation.resume() } else { handler?() }
        }

        /// The registration ended: fails the wait, or calls the handler (its next call on the descriptor finds out).
        func resume(throwing error: any Error) {
            if let continuation { continuation.resume(throwing: error) } else { handler?() }
        }
    }

    private struct Entry {
        let fd: Int32
        var inEpoll = false
        var reader: Waiter?
        var writer: Waiter?
        var wakeups: UInt64 = 0

        var wantedEvents: UInt32 {
            (reader != nil ? IOReactor.eventIn : 0) | (writer != nil ? IOReactor.eventOut : 0)
        }
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 1
        var stopped = false
    }

    private static let eventIn = EPOLLIN.rawValue
    private static let eventOut = EPOLLOUT.rawValue
    private static let eventErr = EPOLLERR.rawValue
    private static let eventHup = EPOLLHUP.rawValue
    private static let eventRdHup = EPOLLRDHUP.rawValue
    private static let eventOneShot = EPOLLONESHOT.rawValue
    private static let wakeupToken: UInt64 = 0
    private static let timerToken: UInt64 = .max

    private let state = Mutex(State())
    private let epollFD: Int32
    private let eventFD: Int32
    private let timerFD: Int32
    /// Timers by `ContinuousClock` deadline; the timerfd is (re)armed under this lock, so arming never goes back in time.
    private let timers = Mutex(TimerQueue<ContinuousClock.Instant>())
    /// The name of the reactor thread.
    let name: String

    private static let sharedReactor: Result<IOReactor, TransportError> = {
        do throws(TransportError) { return .success(try IOReactor(name: "tuneup-io")) } catch { return .failure(error) }
    }()

    /// The process-wide reactor used by all back ends (started on first use, never stopped).
    package static func shared() throws(TransportError) -> IOReactor {
        try sharedReactor.get()
    }

    /// Creates a reactor and starts its thread. Tests may create private reactors and `shutdown()` them.
    init(name: String) throws(TransportError) {
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else {
            let e = errno
            throw TransportError(.io, "cannot create the I/O reactor: \(POSIX.describe(e))", errno: e)
        }
        let ev = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard ev >= 0 else {
            let e = errno
            POSIX.close(ep)
            throw TransportError(.io, "cannot create the I/O reactor's eventfd: \(POSIX.describe(e))", errno: e)
        }
        let tf = tuneup_timerfd_create()
        guard tf >= 0 else {
            let e = errno
            POSIX.close(ep)
            POSIX.close(ev)
            throw TransportError(.io, "cannot create the I/O reactor's timerfd: \(POSIX.describe(e))", errno: e)
        }
        guard tuneup_epoll_ctl(ep, EPOLL_CTL_ADD, ev, Self.eventIn, Self.wakeupToken) == 0,
              tuneup_epoll_ctl(ep, EPOLL_CTL_ADD, tf, Self.eventIn, Self.timerToken) == 0 else {
            let e = errno
            POSIX.close(ep)
            POSIX.close(ev)
            POSIX.close(tf)
            throw TransportError(.io, "cannot set up the I/O reactor: \(POSIX.describe(e))", errno: e)
        }
        epollFD = ep
        eventFD = ev
        timerFD = tf
        self.name = name
        do {
            try DedicatedThread.spawn(name: name) { [self] in self.runLoop() }
        } catch {
            POSIX.close(ep)
            POSIX.close(ev)
            POSIX.close(tf)
            throw error
        }
    }

    // MARK: Timers

    /// Runs `action` on the reactor thread once `deadline` has passed, unless cancelled first. Returns its id.
    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        timers.withLock { q in
            let (id, arm) = q.add(at: deadline, action)
            if let arm { self.arm(for: arm) }
            return id
        }
    }

    /// Cancels a timer; true when its action had not run (and now never will).
    @discardableResult
    func cancelTimer(_ id: UInt64) -> Bool {
        timers.withLock { $0.cancel(id) }
    }

    /// Timers neither run nor cancelled (diagnostics and tests).
    var pendingTimers: Int { timers.withLock { $0.count } }

    /// How late a timer may run so that timers due close together run in one wake-up: Linux's default timer slack
    /// for ordinary threads (`prctl(PR_SET_TIMERSLACK)`), which a timerfd does not get by itself. A conditioned link
    /// sending a burst of chunks then delivers them together, as the burst came.
    static let timerSlack: Duration = .microseconds(50)

    /// Sets the timerfd to expire at `deadline` plus the slack (relative to now: the timerfd's clock and
    /// `ContinuousClock` run at the same rate). Called under the timers lock.
    private func arm(for deadline: ContinuousClock.Instant) {
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline + Self.timerSlack).components
        let nanoseconds = seconds > Int64.max / 1_000_000_000 ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        _ = tuneup_timerfd_arm(timerFD, max(1, nanoseconds))
    }

    /// The timerfd expired: runs what is due (outside the lock) and re-arms for what is left.
    private func fireTimers() {
        var expirations: UInt64 = 0
        _ = Glibc.read(timerFD, &expirations, MemoryLayout<UInt64>.size)
        let due = timers.withLock { q in
            let (due, arm) = q.fire(now: .now)
            if let arm { self.arm(for: arm) }
            return due
        }
        for action in due { action() }
    }

    /// Starts tracking `fd` (nothing is armed until somebody waits).
    package func register(_ fd: Int32) throws(TransportError) -> Registration {
        let id: UInt64? = state.withLock { s in
            guard !s.stopped else { return nil }
            let id = s.nextID
            s.nextID += 1
            s.entries[id] = Entry(fd: fd)
            return id
        }
        guard let id else { throw TransportError(.closed, "the I/O reactor \(name) has stopped") }
        return Registration(id: id, fd: fd)
    }

    /// Stops tracking the registration and fails its pending waits with `error`. Call before closing the descriptor.
    package func deregister(_ registration: Registration, failing error: any Error) {
        let waiters: [Waiter] = state.withLock { s in
            guard let entry = s.entries.removeValue(forKey: registration.id) else { return [] }
            if entry.inEpoll {
                _ = tuneup_epoll_ctl(epollFD, EPOLL_CTL_DEL, entry.fd, 0, 0)
            }
            return [entry.reader, entry.writer].compactMap { $0 }
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// The number of `wake(_:)` calls so far for this registration (nil once deregistered).
    package func wakeCount(of registration: Registration) -> UInt64? {
        state.withLock { $0.entries[registration.id]?.wakeups }
    }

    /// Whether somebody waits for `interest` on the registration (diagnostics and tests).
    func hasWaiter(_ interest: Interest, on registration: Registration) -> Bool {
        state.withLock { s in
            guard let entry = s.entries[registration.id] else { return false }
            return interest == .readable ? entry.reader != nil : entry.writer != nil
        }
    }

    /// Resumes the registration's current waiters without an I/O event and bumps its wake count.
    package func wake(_ registration: Registration) {
        let waiters: [Waiter] = state.withLock { s in
            guard var entry = s.entries[registration.id] else { return [] }
            entry.wakeups &+= 1
            let found = [entry.reader, entry.writer].compactMap { $0 }
            entry.reader = nil
            entry.writer = nil
            s.entries[registration.id] = entry
            return found
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until the descriptor is ready for `interest` (or reports an error or hang-up).
    ///
    /// - Parameter token: when given, returns at once if `wake(_:)` was called since `wakeCount(of:)` returned it.
    /// - Throws: `CancellationError` when the task is cancelled; `TransportError.closed` once deregistered;
    ///   `TransportError.io` if a second waiter for the same interest arrives or epoll refuses the descriptor.
    nonisolated(nonsending) package func wait(_ interest: Interest, on registration: Registration, unlessWokenSince token: UInt64? = nil) async throws {
        let waiterID = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            return id
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { s in
                    if !s.stopped, let entry = s.entries[registration.id] {
                        if Task.isCancelled { return .failure(CancellationError()) }
                        if let token, entry.wakeups != token { return .success(()) }
                    }
                    if let error = arm(Waiter(id: waiterID, continuation: continuation), for: interest, on: registration, in: &s) {
                        return .failure(error)
                    }
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let cancelled: Waiter? = state.withLock { s in
                guard var entry = s.entries[registration.id] else { return nil }
                var found: Waiter?
                if entry.reader?.id == waiterID {
                    found = entry.reader
                    entry.reader = nil
                } else if entry.writer?.id == waiterID {
                    found = entry.writer
                    entry.writer = nil
                }
                s.entries[registration.id] = entry
                return found
            }
            cancelled?.continuation?.resume(throwing: CancellationError())
        }
    }

    /// Calls `handler` once the descriptor is ready for `interest` (or reports an error or hang-up), or when the
    /// registration is woken, deregistered or the reactor stops: a one-shot `wait` without a task, for owners that can
    /// do their next step without suspending (a non-blocking read). The handler runs on the reactor's thread (or on the
    /// thread that deregisters or wakes) and must be short; it holds the interest's waiter place until it is called.
    ///
    /// - Throws: `TransportError.closed` once deregistered; `TransportError.io` if somebody already waits for
    ///   `interest` or epoll refuses the descriptor.
    package func notify(_ interest: Interest, on registration: Registration, _ handler: @escaping @Sendable () -> Void) throws(TransportError) {
        let error: TransportError? = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            return arm(Waiter(id: id, handler: handler), for: interest, on: registration, in: &s)
        }
        if let error { throw error }
    }

    /// Records `waiter` for `interest` and (re)arms the descriptor in epoll; the error when it cannot. Under the lock.
    private func arm(_ waiter: Waiter, for interest: Interest, on registration: Registration, in s: inout State) -> TransportError? {
        guard !s.stopped, var entry = s.entries[registration.id] else {
            return TransportError(.closed, "descriptor \(registration.fd) is closed")
        }
        switch interest {
        case .readable:
            guard entry.reader == nil else {
                return TransportError(.io, "descriptor \(registration.fd) already has a pending read; only one receive may be pending")
            }
            entry.reader = waiter
        case .writable:
            guard entry.writer == nil else {
                return TransportError(.io, "descriptor \(registration.fd) already has a pending write wait")
            }
            entry.writer = waiter
        }
        let op = entry.inEpoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD
        if tuneup_epoll_ctl(epollFD, op, entry.fd, entry.wantedEvents | Self.eventOneShot, registration.id) != 0 {
            let e = errno
            return TransportError(.io, "cannot wait for descriptor \(entry.fd): \(POSIX.describe(e))", errno: e)
        }
        entry.inEpoll = true
        s.entries[registration.id] = entry
        return nil
    }

    /// Stops the reactor thread, failing every pending wait with `TransportError.closed`. Not used on `shared()`.
    func shutdown() {
        let first = state.withLock { s in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        var one: UInt64 = 1
        _ = Glibc.write(eventFD, &one, MemoryLayout<UInt64>.size)
    }

    private func runLoop() {
        let capacity: Int32 = 64
        let events = UnsafeMutablePointer<tuneup_epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        while true {
            let n = tuneup_epoll_wait(epollFD, events, capacity, -1)
            if n < 0 {
                if errno == EINTR { continue }
                state.withLock { $0.stopped = true }
            }
            var ready: [Waiter] = []
            var timerFired = false
            let stop: Bool = state.withLock { s in
                for i in 0..<max(Int(n), 0) {
                    let event = events[i]
                    if event.data == Self.wakeupToken {
                        var value: UInt64 = 0
                        _ = Glibc.read(eventFD, &value, MemoryLayout<UInt64>.size)
                        continue
                    }
                    if event.data == Self.timerToken {
                        timerFired = true
                        continue
                    }
                    guard var entry = s.entries[event.data] else { continue }
                    let trouble = event.events & (Self.eventErr | Self.eventHup) != 0
                    if event.events & (Self.eventIn | Self.eventRdHup) != 0 || trouble, let reader = entry.reader {
                        ready.append(reader)
                        entry.reader = nil
                    }
                    if event.events & Self.eventOut != 0 || trouble, let writer = entry.writer {
                        ready.append(writer)
                        entry.writer = nil
                    }
                    let wanted = entry.wantedEvents
                    if wanted != 0 {
                        _ = tuneup_epoll_ctl(epollFD, EPOLL_CTL_MOD, entry.fd, wanted | Self.eventOneShot, event.data)
                    }
                    s.entries[event.data] = entry
                }
                return s.stopped
            }
            for waiter in ready { waiter.resume() }
            if timerFired { fireTimers() }
            if stop { break }
        }
        let abandoned: [Waiter] = state.withLock { s in
            let all = s.entries.values.flatMap { [$0.reader, $0.writer].compactMap { $0 } }
            s.entries.removeAll()
            return all
        }
        for waiter in abandoned {
            waiter.resume(throwing: TransportError(.closed, "the I/O reactor \(name) has stopped"))
        }
        // Nothing would ever run the timers left: run them now, as if their time had come (only private reactors of
        // tests stop).
        let left = timers.withLock { q in q.fire(now: nil).due }
        for action in left { action() }
        POSIX.close(epollFD)
        POSIX.close(eventFD)
        POSIX.close(timerFD)
    }
}
