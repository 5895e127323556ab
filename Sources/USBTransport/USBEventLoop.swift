import CLibUSB
import Glibc
import Logging
import Synchronization
import Transport

/// The process's one libusb context and the one thread that handles its events, shared by every open USB device.
/// Internal.
///
/// - The context is created on first use and lives as long as the process. Scans still use a fresh context each
///   (without udevd, as in the test VM, a long-lived context's device list never changes), but every opened device
///   lives here: found in this context's list, or joined through its device node (`USBOpen`).
/// - The event thread runs while at least one connection is registered. It runs every transfer callback, and it
///   tears down each connection that has stopped and has no transfer in flight (release interface 0, re-attach the
///   kernel driver, close the handle and the node): `libusb_close` then never races a callback of the same handle.
///   It exits when the last connection is gone; the next registration starts a new one.
/// - Anyone may wake it (`wake()`, i.e. `libusb_interrupt_event_handler`), e.g. to notice a connection that stopped.
final class USBEventLoop: @unchecked Sendable {
    /// What the loop serves: an open device (`USBConnection`), or a stand-in in tests.
    protocol Client: AnyObject, Sendable {
        /// Stopped, with nothing in flight: the loop may tear it down now.
        var isReadyForTeardown: Bool { get }
        /// Releases the device. Called once, on the event thread.
        func tearDown()
    }

    /// The shared loop, or why libusb cannot start here (then USB is unsupported: `.unsupported`).
    static let shared: Result<USBEventLoop, TransportError> = Result { () throws(TransportError) in try USBEventLoop() }

    /// The shared libusb context.
    let context: OpaquePointer

    private struct State {
        var connections: [ObjectIdentifier: any Client] = [:]
        var running = false
        /// Event threads started so far (diagnostics and tests: one at a time, however many devices are open).
        var threadsStarted = 0
    }

    private let state = Mutex(State())

    private init() throws(TransportError) {
        var context: OpaquePointer?
        let rc = libusb_init(&context)
        guard rc == 0, let context else {
            throw TransportError(.unsupported, "USB is not available on this system: libusb_init failed (\(LibUSBErrors.name(rc)))")
        }
        self.context = context
    }

    /// Connections currently served (diagnostics and tests).
    var connectionCount: Int { state.withLock { $0.connections.count } }
    /// Whether the event thread is running (diagnostics and tests).
    var isRunning: Bool { state.withLock { $0.running } }
    /// Event threads started since the process began (diagnostics and tests).
    var threadsStarted: Int { state.withLock { $0.threadsStarted } }

    /// Serves `connection` from now on, starting the event thread if none runs. Throws when the thread cannot start
    /// (the connection is then not registered).
    func register(_ connection: any Client) throws(TransportError) {
        let start = state.withLock { s -> Bool in
            s.connections[ObjectIdentifier(connection)] = connection
            guard !s.running else { return false }
            s.running = true
            s.threadsStarted += 1
            return true
        }
        guard start else { return }
        do {
            try DedicatedThread.spawn(name: "tuneup-usb") { [self] in runEvents() }
        } catch {
            state.withLock { s in
                s.connections[ObjectIdentifier(connection)] = nil
                s.running = false
            }
            throw error
        }
    }

    /// The device at `bus`/`address` in the shared context's device list, referenced (the caller unrefs it), or nil.
    /// Blocking (the list may be refreshed): call off the cooperative pool.
    func device(bus: UInt8, address: UInt8) -> OpaquePointer? {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(context, &list)
        guard count > 0, let list else { return nil }
        defer { libusb_free_device_list(list, 1) }
        for i in 0..<count {
            guard let device = list[i] else { continue }
            if libusb_get_bus_number(device) == bus && libusb_get_device_address(device) == address {
                return libusb_ref_device(device)
            }
        }
        return nil
    }

    /// Interrupts the event thread's wait, so it looks at its connections again.
    func wake() {
        libusb_interrupt_event_handler(context)
    }

    private func runEvents() {
        while true {
            let finished = state.withLock { s -> [any Client] in
                let finished = s.connections.values.filter(\.isReadyForTeardown)
                for connection in finished { s.connections[ObjectIdentifier(connection)] = nil }
                return finished
            }
            for connection in finished { connection.tearDown() }
            // The thread says it has stopped only after the last teardown (it used to say so before it, and a caller
            // that waited for the loop to stop could find its device not yet torn down); a device registered
            // meanwhile keeps it running.
            let exit = state.withLock { s -> Bool in
                guard s.connections.isEmpty else { return false }
                s.running = false
                return true
            }
            if exit { return }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            let rc = libusb_handle_events_timeout_completed(context, &timeout, nil)
            if rc != 0 && rc != LIBUSB_ERROR_INTERRUPTED.rawValue {
                usleep(10_000)
            }
        }
    }
}
