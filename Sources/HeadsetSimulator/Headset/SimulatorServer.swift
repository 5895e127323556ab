import Logging
import Simulator
import Transport

/// Serves N simulated headsets, one per endpoint (TCP listener or pseudo-terminal), until `shutdown()`: the generic
/// `SimulatedDeviceServer` with `SimulatedHeadset` devices, built by the constructors below.
///
/// All devices keep their state in one file (see `StateStore`), device k in slot k. Serving continues across client
/// reconnects: a TCP endpoint accepts any number of hosts at once (pushes go to all of them); a pty serves one client
/// session at a time, then waits for the next.
public typealias SimulatorServer = SimulatedDeviceServer<SimulatedHeadset>

extension SimulatedDeviceServer where Device == SimulatedHeadset {
    /// Creates `count` devices keeping their state in `statePath`, with no link yet: `attach` listeners to them.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` for a bad count, or the state-file errors of `StateStore.open`.
    public static func start(count: Int, statePath: String?, options: SimulatorOptions = SimulatorOptions()) async throws -> SimulatorServer {
        try checkCount(count)
        var store: StateStore?
        if let statePath { store = try await StateStore.open(path: statePath, lockTimeout: options.lockTimeout) }
        let devices = (0..<count).map { k in SimulatedHeadset(sharedStore: store, index: k, options: options) }
        return try SimulatorServer(devices: devices, logger: options.logger) { [store] in await store?.close() }
    }

    /// Serves one device per listener (listener k serves device k; each accepted link is served concurrently),
    /// all devices keeping their state in `statePath`. `endpoints` are the listeners' addresses, in order. The
    /// listeners are closed by `shutdown()`, and also when this call fails.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` for no or too many listeners, or the state-file errors of
    ///   `StateStore.open`.
    public static func serve(_ listeners: [any TransportListener], statePath: String?,
                             options: SimulatorOptions = SimulatorOptions()) async throws -> SimulatorServer {
        do {
            let server = try await start(count: listeners.count, statePath: statePath, options: options)
            for (k, listener) in listeners.enumerated() { try server.attach(listener, toDevice: k) }
            return server
        } catch {
            listeners.forEach { $0.close() }
            throw error
        }
    }

    /// Serves `count` devices on TCP. With `port` 0 every device gets its own ephemeral port; otherwise device k
    /// listens on `port + k`. `endpoints` holds the bound addresses (`tcp:127.0.0.1:43215`), to be printed first.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` for a bad count or port range, the state-file errors of
    ///   `StateStore.open`, or the listener's `TransportError` (`.busy` when a port is taken). Nothing keeps running
    ///   after a failure.
    public static func listenTCP(host: String = "127.0.0.1", port: UInt16 = 0, count: Int = 1, statePath: String?,
                                 options: SimulatorOptions = SimulatorOptions()) async throws -> SimulatorServer {
        try checkCount(count)
        if port != 0, Int(port) + count - 1 > Int(UInt16.max) {
            throw SimulatorError(.invalidArgument, "ports \(port)...\(Int(port) + count - 1) do not fit below 65536")
        }
        var listeners: [any TransportListener] = []
        do {
            for k in 0..<count {
                listeners.append(try await TCPListener.bind(host: host, port: port == 0 ? 0 : port + UInt16(k), logger: options.logger))
            }
        } catch {
            listeners.forEach { $0.close() }
            throw error
        }
        return try await serve(listeners, statePath: statePath, options: options)
    }

    /// Serves `count` devices on pseudo-terminals; `endpoints` holds `serial:SLAVEPATH` addresses for clients.
    ///
    /// A pty cannot tell clients apart: if a new client opens the slave before the device has noticed the previous
    /// one leave, the new client's first bytes may be read by the old session and its reply lost. Clients that
    /// reconnect at once should retry their first request (as they would with a real serial device).
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` for a bad count, the state-file errors of `StateStore.open`, or
    ///   `TransportError` when no pty can be allocated.
    public static func listenPTY(count: Int = 1, statePath: String?, options: SimulatorOptions = SimulatorOptions()) async throws -> SimulatorServer {
        try checkCount(count)
        var listeners: [any TransportListener] = []
        do {
            for _ in 0..<count { listeners.append(try PseudoTerminal.open(logger: options.logger)) }
        } catch {
            listeners.forEach { $0.close() }
            throw error
        }
        return try await serve(listeners, statePath: statePath, options: options)
    }

    /// Runs one simulated headset in this process (the `sim` device address): loads it from `statePath` (nil: a
    /// fresh factory device, not persisted), serves one end of an in-memory pair and returns the other end. Closing
    /// the returned transport stops the simulator and releases the state file's lock before `close()` returns.
    ///
    /// The device is one that stayed on (`options.powerOn` is ignored): it resumes the running image,
    /// authentication and readiness delay the previous process left (see `SimulatedHeadset`). After a power cut the
    /// returned link is closed; `InProcessSimulatorLink.connect()` opens a new link to the same device.
    public static func inProcess(statePath: String?, options: SimulatorOptions = SimulatorOptions()) async throws -> any Transport {
        try await inProcessLink(statePath: statePath, options: options)
    }

    /// Like `inProcess(statePath:options:)`, with the concrete link type (which exposes the device).
    public static func inProcessLink(statePath: String?, options: SimulatorOptions = SimulatorOptions()) async throws -> InProcessSimulatorLink {
        // The in-process device is one that stayed on since the last command: no power cycle.
        var stayedOn = options
        stayedOn.powerOn = false
        let device = try await SimulatedHeadset(statePath: statePath, index: 0, options: stayedOn)
        let server = try SimulatorServer(devices: [device], logger: options.logger)
        let (host, deviceEnd) = InMemoryTransport.pair(framing: .byteStream)
        let serving = try server.serve(link: deviceEnd, onDevice: 0)
        return InProcessSimulatorLink(inner: host, server: server, serving: serving,
                                      peerDescription: DeviceAddress.simulator(statePath: statePath).description)
    }

    /// Applies a control line. Returns false for `quit` (the caller then calls `shutdown()`), true otherwise.
    /// Throws `SimulatorError(.invalidArgument)` when the line names a device this server does not have.
    @discardableResult
    public func perform(_ command: SimulatorControl.Command) async throws(SimulatorError) -> Bool {
        switch command {
        case .quit:
            return false
        case .press(let button, let k):
            try await device(k).press(button)
        case .battery(let percent, let k):
            try await device(k).setBatteryLevel(percent)
        case .powerCut(let k):
            try await device(k).powerCut()
        case .reboot(let k):
            try await device(k).reboot()
        }
        return true
    }
}
