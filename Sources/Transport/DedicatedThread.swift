import Support

/// Threads outside Swift's cooperative pool, for event loops (the I/O reactor, libusb, FunctionFS): `Support`'s
/// `Threads.spawn` with the transports' error type. (Blocking calls, such as getaddrinfo, opening a device node or
/// SDP, go to `Blocking.run`, the one name for work off the pool.)
package enum DedicatedThread {
    /// Starts a detached thread named `name` running `body`. Throws `TransportError(.io)` if the system refuses.
    package static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(TransportError) {
        do {
            try Threads.spawn(name: name, body)
        } catch {
            throw TransportError(.io, error.message)
        }
    }
}
