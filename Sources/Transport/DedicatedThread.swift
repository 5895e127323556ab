import CShims
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
            body.name.withCString { tuneup_set_thread_name($0) }
            body.run()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            throw TransportError(.io, "cannot start a thread for \(name): \(POSIX.describe(rc))", errno: rc)
        }
    }

    /// Runs a blocking `body` on a fresh dedicated thread and returns its result without blocking the caller's thread.
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
                    try spawn(name: name) {
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
