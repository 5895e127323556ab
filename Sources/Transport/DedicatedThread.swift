import CShims
import Dispatch
import Glibc
import Synchronization

/// Threads outside Swift's cooperative pool, for event loops (the I/O reactor, libusb, FunctionFS) and for calls
/// that can block (getaddrinfo, opening a device node, SDP). Every back end uses these rather than its own.
package enum DedicatedThread {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts a detached thread named `name` running `body`. Throws `TransportError(.io)` if the system refuses.
    package static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(TransportError) {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attr, { raw in
            guard let raw else { return nil }
            let body = Unmanaged<Body>.fromOpaque(raw).takeRetainedValue()
            // Termination signals are for the threads that wait for them (`TerminationSignals`), not event loops.
            tuneup_block_termination_signals(nil)
            body.name.withCString { tuneup_set_thread_name($0) }
            body.run()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            throw TransportError(.io, "cannot start a thread for \(name): \(POSIX.describe(rc))", errno: rc)
        }
    }

    /// Runs a blocking `body` on a thread of the bounded `BlockingPool` (never the cooperative pool) and returns its
    /// result without blocking the caller's thread.
    ///
    /// Cancellation resumes the caller promptly with `CancellationError`; the thread still runs to completion and its
    /// result is then handed to `discard` (e.g. to close a descriptor that nobody will use).
    package static func run<T: Sendable>(
        name: String,
        discard: @escaping @Sendable (T) -> Void = { _ in },
        _ body: @escaping @Sendable () -> T
    ) async throws -> T {
        let slot = Mutex<CheckedContinuation<T, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let cancelled = slot.withLock { stored -> Bool in
                    if Task.isCancelled { return true }
                    stored = continuation
                    return false
                }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                do {
                    try BlockingPool.shared.submit(name: name) {
                        let result = body()
                        if let waiting = slot.withLock({ stored in stored.take() }) {
                            waiting.resume(returning: result)
                        } else {
                            discard(result)
                        }
                    }
                } catch {
                    slot.withLock { stored in stored.take() }?.resume(throwing: error)
                }
            }
        } onCancel: {
            slot.withLock { stored in stored.take() }?.resume(throwing: CancellationError())
        }
    }
}

/// A bounded pool of threads for short blocking calls (name resolution, opening device nodes, SDP, close): at most
/// `maxThreads` at once however many devices are used, started on demand and ended after `idleTimeout` without
/// work. Jobs run in submission order. Event loops that live as long as their device use `DedicatedThread.spawn`.
package final class BlockingPool: Sendable {
    package static let shared = BlockingPool(maxThreads: 16)

    private struct State {
        var jobs: [(name: String, run: @Sendable () -> Void)] = []
        var head = 0
        var threads = 0
        var idle = 0
        var peakThreads = 0
    }

    package let maxThreads: Int
    private let idleTimeout: Double
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    package init(maxThreads: Int, idleTimeout: Double = 5) {
        self.maxThreads = max(1, maxThreads)
        self.idleTimeout = idleTimeout
    }

    /// The most threads this pool ran at once.
    package var peakThreads: Int { state.withLock { $0.peakThreads } }
    /// Threads running now.
    package var threads: Int { state.withLock { $0.threads } }

    /// Queues `job`; a thread is started when none is idle and the pool is below its bound.
    package func submit(name: String, _ job: @escaping @Sendable () -> Void) throws(TransportError) {
        let start = state.withLock { s -> Bool in
            s.jobs.append((name, job))
            let waiting = s.jobs.count - s.head
            guard waiting > s.idle, s.threads < maxThreads else { return false }
            s.threads += 1
            s.peakThreads = Swift.max(s.peakThreads, s.threads)
            return true
        }
        available.signal()
        guard start else { return }
        do {
            try DedicatedThread.spawn(name: "tuneup-blocking") { [self] in work() }
        } catch {
            let alone = state.withLock { s -> Bool in
                s.threads -= 1
                return s.threads == 0
            }
            // With no thread at all the job would never run: say so to its caller.
            if alone { throw error }
        }
    }

    private func work() {
        while true {
            state.withLock { $0.idle += 1 }
            let timedOut = available.wait(timeout: .now() + idleTimeout) == .timedOut
            let job: (name: String, run: @Sendable () -> Void)? = state.withLock { s in
                s.idle -= 1
                guard s.head < s.jobs.count else {
                    if timedOut { s.threads -= 1 }
                    return nil
                }
                let next = s.jobs[s.head]
                s.head += 1
                if s.head > 64, s.head * 2 > s.jobs.count {
                    s.jobs.removeFirst(s.head)
                    s.head = 0
                }
                return next
            }
            guard let job else {
                if timedOut { return }
                continue
            }
            job.name.withCString { tuneup_set_thread_name($0) }
            job.run()
        }
    }
}
