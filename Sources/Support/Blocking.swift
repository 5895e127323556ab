import CShims
import Dispatch
import Failure
import Glibc
import Synchronization

// The one place blocking work runs (docs/architecture.md, "The cooperative pool").
//
// Swift's cooperative pool has one thread per core: two on the machines this project runs on. A blocking system call
// (file or database I/O, fsync, waitpid, a sleep, a flock retry, a socket wait) or a long computation on one of those
// threads stops every task of the process for as long as it lasts. Such work goes to the `BlockingPool` below, through
// `Blocking.run` (cancellable: the caller returns at once), `Blocking.perform` (the caller waits for the result) or a
// `SerialLane` (blocking jobs of one resource, in order). Event loops that live as long as their device have threads
// of their own (`Threads.spawn`).

/// Errors of the blocking executor.
public typealias SupportError = CodedFailure<SupportErrors>

/// The codes of `SupportError`.
public enum SupportErrors: ErrorDomain {
    public static func category(of code: SupportError.Code) -> FailureCategory { .connection }
}

extension ErrorCodeIn where Domain == SupportError {
    /// The system refused to start a thread (no thread of the pool was left to run the job).
    public static let threadUnavailable = Self(rawValue: "thread-unavailable")
}

/// Threads outside Swift's cooperative pool.
public enum Threads {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts a detached thread named `name` running `body`; the termination signals are blocked in it (they are
    /// for the thread that waits for them). Throws `.threadUnavailable` with the system's reason if it refuses.
    public static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(SupportError) {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attr, { raw in
            guard let raw else { return nil }
            let body = Unmanaged<Body>.fromOpaque(raw).takeRetainedValue()
            tuneup_block_termination_signals(nil)
            body.name.withCString { tuneup_set_thread_name($0) }
            body.run()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            throw SupportError(.threadUnavailable, "cannot start a thread for \(name): \(String(cString: strerror(rc)))")
        }
    }
}

/// The one executor for blocking work: a bounded pool of threads outside Swift's cooperative pool, at most
/// `maxThreads` at once however much work is queued, started on demand and ended after `idleTimeout` without work.
/// Jobs start in submission order.
///
/// No job, and no release of a job, runs inside the pool's lock: a job is moved out of the queue under the lock and
/// run and dropped outside it, so a job, or a deinit that releasing a job triggers, may submit more jobs.
public final class BlockingPool: Sendable {
    /// The process's pool. Its bound is generous because some of its jobs wait for long (a child process, a flock, a
    /// busy database): blocked threads cost memory, not CPU, and a small bound would let long waits queue ahead of
    /// the short calls that they are waiting for.
    public static let shared = BlockingPool(maxThreads: 64)

    public typealias Job = @Sendable () -> Void

    private struct State {
        /// Queued jobs; a taken job's slot is nil until the queue is compacted (so taking one releases nothing).
        var jobs: [(name: String, run: Job)?] = []
        var head = 0
        var threads = 0
        var idle = 0
        var peakThreads = 0
    }

    public let maxThreads: Int
    private let idleTimeout: Double
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    public init(maxThreads: Int, idleTimeout: Double = 5) {
        self.maxThreads = max(1, maxThreads)
        self.idleTimeout = idleTimeout
    }

    /// The most threads this pool ran at once.
    public var peakThreads: Int { state.withLock { $0.peakThreads } }
    /// Threads running now.
    public var threads: Int { state.withLock { $0.threads } }

    /// Queues `job`; a thread is started when none is idle and the pool is below its bound. Throws only when no
    /// thread could be started and none is running (the job would never run).
    public func submit(name: String, _ job: @escaping Job) throws(SupportError) {
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
            try Threads.spawn(name: "tuneup-blocking") { [self] in work() }
        } catch {
            let alone = state.withLock { s -> Bool in
                s.threads -= 1
                return s.threads == 0
            }
            if alone { throw error }
        }
    }

    /// Takes the next job out of the queue, leaving its slot nil (nothing is released here, under the lock).
    private static func take(_ s: inout State) -> (name: String, run: Job)? {
        guard s.head < s.jobs.count else { return nil }
        let next = s.jobs[s.head].take()
        s.head += 1
        if s.head > 64, s.head * 2 > s.jobs.count {
            s.jobs.removeFirst(s.head)  // every slot before head is nil: this releases nothing
            s.head = 0
        }
        return next
    }

    private func work() {
        while true {
            state.withLock { $0.idle += 1 }
            let timedOut = available.wait(timeout: .now() + idleTimeout) == .timedOut
            let job: (name: String, run: Job)? = state.withLock { s in
                s.idle -= 1
                guard let next = Self.take(&s) else {
                    if timedOut { s.threads -= 1 }
                    return nil
                }
                return next
            }
            guard let job else {
                if timedOut { return }
                continue
            }
            job.name.withCString { tuneup_set_thread_name($0) }
            job.run()
            // The job and what it captured are released at the end of this iteration, outside the lock.
        }
    }
}

/// Blocking work from async code, on the `BlockingPool`.
public enum Blocking {
    /// Runs `body` on the pool and returns its result without blocking the caller's thread.
    ///
    /// Cancellation resumes the caller promptly with `CancellationError`; the body still runs to completion and its
    /// result is then handed to `discard` (e.g. to close a descriptor that nobody will use). Throws `SupportError`
    /// when no thread could run it.
    public static func run<T: Sendable>(
        _ name: String,
        pool: BlockingPool = .shared,
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
                    try pool.submit(name: name) {
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

    /// Runs `body` on the pool and waits for it to finish, cancelled or not (for work that must not be left half
    /// done: a save, a close). Rethrows what `body` throws; `SupportError` when no thread could run it.
    public static func perform<T: Sendable>(
        _ name: String,
        pool: BlockingPool = .shared,
        _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await perform(name, pool: pool, unavailable: { $0 }, body)
    }

    /// `perform` with the body's own error type: `unavailable` turns the pool's refusal into one of it.
    public static func perform<T: Sendable, E: Error>(
        _ name: String,
        pool: BlockingPool = .shared,
        unavailable: @escaping @Sendable (SupportError) -> E,
        _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        try await result(of: body, submittedBy: { job throws(SupportError) in try pool.submit(name: name, job) }, unavailable: unavailable)
    }

    /// Hands `body` to `submit` (the pool, or a lane) and waits for its result; a refused submission is
    /// `unavailable(error)`.
    static func result<T: Sendable, E: Error>(
        of body: @escaping @Sendable () throws(E) -> T,
        submittedBy submit: (@escaping BlockingPool.Job) throws(SupportError) -> Void,
        unavailable: @escaping @Sendable (SupportError) -> E
    ) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            do throws(SupportError) {
                try submit { continuation.resume(returning: Result { () throws(E) in try body() }) }
            } catch {
                continuation.resume(returning: .failure(unavailable(error)))
            }
        }
        return try result.get()
    }
}

/// Blocking jobs of one resource (a state file, a flash container), run one at a time in submission order on the
/// shared pool: what a serial dispatch queue did, without threads of its own.
public final class SerialLane: Sendable {
    private struct State {
        /// Queued jobs; a taken job's slot is nil (so emptying the queue releases nothing under the lock).
        var jobs: [BlockingPool.Job?] = []
        var head = 0
        var draining = false
    }

    public let name: String
    private let pool: BlockingPool
    private let state = Mutex(State())

    public init(_ name: String, pool: BlockingPool = .shared) {
        self.name = name
        self.pool = pool
    }

    /// Queues `job` after every job queued before it. Throws only when no thread could run it.
    public func submit(_ job: @escaping BlockingPool.Job) throws(SupportError) {
        let start = state.withLock { s -> Bool in
            s.jobs.append(job)
            guard !s.draining else { return false }
            s.draining = true
            return true
        }
        guard start else { return }
        do {
            try pool.submit(name: name) { [self] in drain() }
        } catch {
            // Nothing runs the queue: drop what is queued (outside the lock) and say so.
            let dropped = state.withLock { s -> [BlockingPool.Job?] in
                defer { s.jobs = []; s.head = 0; s.draining = false }
                return s.jobs
            }
            _ = dropped
            throw error
        }
    }

    /// Runs `body` after every job queued before it and waits for it (cancelled or not).
    public func perform<T: Sendable, E: Error>(
        unavailable: @escaping @Sendable (SupportError) -> E,
        _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        try await Blocking.result(of: body, submittedBy: { job throws(SupportError) in try submit(job) }, unavailable: unavailable)
    }

    /// Waits until every job queued before it has run.
    public func flush() async {
        _ = try? await perform(unavailable: { $0 }) { () throws(SupportError) in }
    }

    private func drain() {
        while true {
            let job: BlockingPool.Job? = state.withLock { s in
                guard s.head < s.jobs.count else {
                    s.jobs.removeAll(keepingCapacity: true)  // every slot was taken: releases nothing
                    s.head = 0
                    s.draining = false
                    return nil
                }
                let next = s.jobs[s.head].take()
                s.head += 1
                return next
            }
            guard let job else { return }
            job()  // released at the end of this iteration, outside the lock
        }
    }
}
