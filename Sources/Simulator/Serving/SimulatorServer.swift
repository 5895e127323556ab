import Firmware
import LightX
import Logging
import Synchronization
import Transport

/// Settings shared by every device a server creates.
public struct SimulatorOptions: Sendable {
    /// How the devices behave on their links.
    public var profile: BehaviourProfile
    /// Battery drain period (1 % each); zero disables the drain.
    public var drainInterval: Duration
    /// How long to wait for another owner of the state file.
    public var lockTimeout: Duration
    /// Whether starting is a power cycle (EQ working gains revert to the persisted ones, the default preset becomes
    /// current). True for servers; `inProcess` ignores it: its device stays on between CLI commands.
    public var powerOn: Bool
    /// Where diagnostics go (nil: nowhere).
    public var logger: Logger?
    /// Multiplies every modelled duration — flash erase/program/read, the readiness delay after a reset, the time
    /// off after a power cut (`timing`). 1 is real time, 0 makes everything instant (tests). Default 1.
    public var timeScale: Double
    /// The timing model before `timeScale` (default `DeviceTiming.standard`: 45 ms erase, 0.7 ms page program,
    /// 20 MB/s reads, 1.5 s readiness delay, 0.3 s off after a power cut).
    public var timing: DeviceTiming
    /// Faults to inject (the CLI's `--faults`, see `FaultPlan`). Flash-operation numbers count per device.
    public var faults: FaultPlan
    /// Secure boot: when set, the bootloader boots and commits only MCUboot images with a valid Ed25519 signature by
    /// this key, and refuses to commit a version below the committed one. Nil (default): CRC checks only.
    public var secureBootKey: VerificationKey?
    /// Flow control: how many received requests may wait unprocessed (Q, reported by capabilities 0x3B; default 32).
    public var queueDepth: Int

    /// Creates options; the defaults are a normal device draining 1 % per minute, a 10 s lock wait, real-time flash
    /// timing, no faults, no secure boot and a queue depth of 32.
    public init(profile: BehaviourProfile = .normal, drainInterval: Duration = ApplicationFirmware.defaultDrainInterval,
                lockTimeout: Duration = StateStore.defaultLockTimeout, powerOn: Bool = true, logger: Logger? = nil,
                timeScale: Double = 1, timing: DeviceTiming = .standard, faults: FaultPlan = .none,
                secureBootKey: VerificationKey? = nil, queueDepth: Int = SimulatorOptions.defaultQueueDepth) {
        self.profile = profile
        self.drainInterval = drainInterval
        self.lockTimeout = lockTimeout
        self.powerOn = powerOn
        self.logger = logger
        self.timeScale = timeScale
        self.timing = timing
        self.faults = faults
        self.secureBootKey = secureBootKey
        self.queueDepth = queueDepth
    }

    /// The default flow-control depth Q.
    public static let defaultQueueDepth = 32
}

/// Serves N simulated headsets, one per endpoint (TCP listener or pseudo-terminal), until `shutdown()`.
///
/// All devices keep their state in one file (see `StateStore`), device k in slot k. Serving continues across client
/// reconnects: a TCP endpoint accepts any number of hosts at once (pushes go to all of them); a pty serves one client
/// session at a time, then waits for the next.
public final class SimulatorServer: Sendable {
    /// The devices, in order.
    public let devices: [SimulatedHeadset]

    /// The endpoints of the attached listeners, in device order (and attachment order for a device), in address
    /// syntax: `tcp:HOST:PORT`, `serial:/dev/pts/N`, `usb:1209:0001:SERIAL`, `bt:ADDR:CHANNEL`.
    public var endpoints: [String] {
        listeners.withLock { $0.sorted { $0.device < $1.device }.map(\.listener.endpoint) }
    }

    private let store: StateStore?
    private let options: SimulatorOptions
    private let listeners = Mutex<[(device: Int, listener: any TransportListener)]>([])
    private let loops: Mutex<[Task<Void, Never>]>

    private init(devices: [SimulatedHeadset], store: StateStore?, options: SimulatorOptions) {
        self.devices = devices
        self.store = store
        self.options = options
        self.loops = Mutex([])
    }

    /// Creates `count` devices keeping their state in `statePath`, with no link yet: `attach` listeners to them.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` for a bad count, or the state-file errors of `StateStore.open`.
    public static func start(count: Int, statePath: String?, options: SimulatorOptions = SimulatorOptions()) async throws -> SimulatorServer {
        try checkCount(count)
        let (store, devices) = try await makeDevices(count: count, statePath: statePath, options: options)
        return SimulatorServer(devices: devices, store: store, options: options)
    }

    /// Serves device `index` on every link `listener` accepts (concurrently), until `shutdown()` closes it.
    public func attach(_ listener: any TransportListener, toDevice index: Int) throws(SimulatorError) {
        let device = try device(index)
        listeners.withLock { $0.append((index, listener)) }
        let logger = options.logger
        startLoop { await Self.accept(listener, device, logger: logger) }
    }

    /// The most devices one server runs.
    public static let maxDevices = 64

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
        let (host, deviceEnd) = InMemoryTransport.pair(framing: .byteStream)
        let serving = Task {
            await device.serve(deviceEnd)
        }
        return InProcessSimulatorLink(inner: host, device: device, serving: serving,
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

    /// Stops listening, disconnects every host, stops the devices and releases the state file. Idempotent.
    public func shutdown() async {
        listeners.withLock { $0 }.forEach { $0.listener.close() }
        for d in devices { await d.shutdown() }
        let running = loops.withLock { l in
            defer { l = [] }
            return l
        }
        for task in running {
            task.cancel()
            await task.value
        }
        await store?.close()
    }

    // MARK: - Internals

    private func device(_ k: Int) throws(SimulatorError) -> SimulatedHeadset {
        guard devices.indices.contains(k) else {
            throw SimulatorError(.invalidArgument, "there is no device \(k); this simulator has devices 0...\(devices.count - 1)")
        }
        return devices[k]
    }

    private func startLoop(_ body: @escaping @Sendable () async -> Void) {
        let task = Task { await body() }
        loops.withLock { $0.append(task) }
    }

    private static func checkCount(_ count: Int) throws(SimulatorError) {
        guard (1...maxDevices).contains(count) else {
            throw SimulatorError(.invalidArgument, "device count \(count) is outside 1...\(maxDevices)")
        }
    }

    private static func makeDevices(count: Int, statePath: String?, options: SimulatorOptions) async throws
        -> (StateStore?, [SimulatedHeadset]) {
        var store: StateStore?
        if let statePath { store = try await StateStore.open(path: statePath, lockTimeout: options.lockTimeout) }
        let devices = (0..<count).map { k in SimulatedHeadset(sharedStore: store, index: k, options: options) }
        return (store, devices)
    }

    /// Accepts links until the listener closes; each is served concurrently.
    private static func accept(_ listener: any TransportListener, _ device: SimulatedHeadset, logger: Logger?) async {
        await withDiscardingTaskGroup { group in
            while true {
                do {
                    let transport = try await listener.accept()
                    group.addTask { await device.serve(transport) }
                } catch let error as TransportError where error.code != .closed {
                    // Resource exhaustion and the like: keep serving after a pause.
                    logger?.warning("\(error.message)")
                    do { try await Task.sleep(for: .milliseconds(100)) } catch { return }
                } catch {
                    return  // closed or cancelled
                }
            }
        }
    }
}

/// The host end of an in-process simulator (see `SimulatorServer.inProcess(statePath:options:)`).
public final class InProcessSimulatorLink: Transport {
    /// `sim` or `sim:PATH`.
    public let peerDescription: String
    /// Always `.byteStream` (SPP framing).
    public var framing: LinkFraming { inner.framing }
    /// The simulated device behind the link (for pressing buttons, power cuts and statistics in tests and tools).
    public let device: SimulatedHeadset

    private let inner: any Transport
    private let serving: Task<Void, Never>

    init(inner: any Transport, device: SimulatedHeadset, serving: Task<Void, Never>, peerDescription: String) {
        self.inner = inner
        self.device = device
        self.serving = serving
        self.peerDescription = peerDescription
    }

    /// See `Transport.send(_:)`.
    public func send(_ bytes: [UInt8]) async throws { try await inner.send(bytes) }
    /// See `Transport.receive()`.
    public func receive() async throws -> [UInt8] { try await inner.receive() }

    /// Opens another link to the same running device (e.g. to reconnect after a power cut closed this one). Links
    /// opened this way stay usable until they are closed, the device loses power, or this link is closed.
    public func connect() async -> any Transport {
        await device.connect()
    }

    /// Closes the link, then stops the device (storing its running state) and waits until it has released its state
    /// file. Idempotent.
    public func close() async {
        await inner.close()
        await serving.value
        await device.shutdown()
    }
}
