import Support

/// Threads outside Swift's cooperative pool, for event loops (the I/O reactor, libusb, FunctionFS) and for calls
/// that can block (getaddrinfo, opening a device node, SDP): the transports' names for `Support`'s `Threads` and
/// `Blocking`, with the transports' error type.
package enum DedicatedThread {
    /// Starts a detached thread named `name` running `body`. Throws `TransportError(.io)` if the system refuses.
    package static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(TransportError) {
        do {
            try Threads.spawn(name: name, body)
        } catch {
            throw TransportError(.io, error.message)
        }
    }

    /// Runs a blocking `body` on the shared `BlockingPool` (never the cooperative pool) and returns its result
    /// without blocking the caller's thread.
    ///
    /// Cancellation resumes the caller promptly with `CancellationError`; the thread still runs to completion and its
    /// result is then handed to `discard` (e.g. to close a descriptor that nobody will use).
    package static func run<T: Sendable>(
        name: String,
        discard: @escaping @Sendable (T) -> Void = { _ in },
        _ body: @escaping @Sendable () -> T
    ) async throws -> T {
        try await Blocking.run(name, discard: discard, body)
    }
}
