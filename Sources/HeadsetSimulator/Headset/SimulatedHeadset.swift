import Firmware
import LightX
import Logging
import Simulator
import Synchronization
import Transport

/// A simulated headset: its hardware (`DeviceMachine`: NOR flash, settings, bootloader and application), its
/// persisted state, and the hosts connected to it.
///
/// Links and requests:
/// - `serve(_:)` runs one host link until it closes; `connect()` opens a new in-memory link to this same running
///   device (several may be open at once). Pushes go to every connected host.
/// - A link's `framing` decides the packet format on it: `.byteStream` links carry SPP frames (replies with the
///   modules swapped); `.packets` links (USB HID) carry one raw LightX packet per message (`RawPacketCodec`), with
///   replies echoing the request's modules (`Packet.reply(to:status:buffer:swapModules: false)`) and pushes as they
///   are (from 0x40).
/// - `modeChanges()` follows the running image (application, bootloader, nil = off), e.g. for a USB gadget that
///   re-enumerates with another product id on every jump and leaves the bus while the device is off.
/// - Requests from all links go through one queue and are processed strictly in arrival order, one at a time; each
///   request's reply goes back to its own link, in processing order. A request that changes flash takes the device
///   the modelled busy time (`DeviceTiming`, scaled by `timeScale`): the reply leaves after it, and requests
///   arriving meanwhile wait in the queue.
/// - Flow control: at most `queueDepth` (Q, default 32) requests wait unprocessed. In the bootloader a request
///   arriving when Q are waiting is answered NotReady at once and not processed; in the application the link is
///   simply not read until there is room (back-pressure).
/// - Every change is persisted before its reply or push goes out: settings to the state file, flash operations to
///   the flash file (so an acknowledged write survives a killed simulator).
///
/// Power and what survives what:
/// - **Power cycle** (`powerCut()`, the `power-cut` control line, an injected `cut@N` fault, a restart of a simulator
///   server): every host link closes, queued requests are dropped unanswered, RAM is lost (authentication, the
///   bootloader's verifications, EQ working gains and the current preset), and after `powerUpDelay` the device powers
///   up: the bootloader boots the committed application if it is intact (and signed, with secure boot), else stays in
///   itself; either way it answers NotReady for `readyDelay`. Flash and non-volatile settings survive. `reboot()` is
///   the same without the off time. At the start of a server the device has already booted (no NotReady window).
/// - **Reconnect** (a host link closes or a new one opens): nothing changes on the device; a new link sees the same
///   running image, authentication and update progress.
/// - **In-process device** (`SimulatorServer.inProcess`, `powerOn: false`: one per CLI command): a device that
///   stayed on between processes. Closing it stores its RAM (image running, authentication, verifications, the rest
///   of a readiness delay as wall-clock time) in the flash file; the next process resumes it there. A process killed
///   without closing leaves nothing stored: the next open evaluates the flash like a power-on (settings kept as they
///   were saved). An application is only resumed while the committed application is intact.
///
/// While it serves, a timer task drains the battery (see `ApplicationFirmware.advanceTime(by:)`).
public actor SimulatedHeadset {
    /// The device's index within its server (0-based); selects its slot in the state files and its factory identity.
    public nonisolated let index: Int
    /// How the device behaves on its links.
    public nonisolated let profile: BehaviourProfile
    /// The options it was created with.
    public nonisolated let options: SimulatorOptions

    /// The hardware: flash, settings, power, the image running (pure; this actor does its I/O and waiting).
    var machine: DeviceMachine
    /// The state store (shared or owned), nil when the device is in memory only.
    nonisolated let store: StateStore?
    /// What is written to the store, and when.
    var persistence: HeadsetPersistence
    let logger: Logger?
    /// The hosts connected now.
    var hosts = HostTable()
    /// How links are shaped (behaviour profile, injected link faults).
    let shaping: LinkShaping
    /// The rules around the hardware: serving or shut down, power periods, the request queue and its flow control,
    /// requests answered, the flash's busy time (pure; this actor does what it answers).
    var service: HeadsetServiceMachine
    /// The task processing the queue, while it runs.
    var processor: Task<Void, Never>?
    var batteryTask: Task<Void, Never>?
    var powerTask: Task<Void, Never>?
    /// Observers of the running image.
    let modes: ModeBroadcaster
    /// Links waiting for room in the request queue.
    var roomWaiters = WaiterList()
    /// Callers of `waitUntilReady` waiting for the power to come back or the readiness delay to end.
    var readinessWaiters = WaiterList()
    var nextWaiterID: UInt64 = 0

    /// Creates device `index`, owning the state file at `statePath` (nil: state in memory only, starting from the
    /// factory state and flash). Waits up to `lockTimeout` for another owner of the file.
    ///
    /// - Parameters:
    ///   - randomSeed: seed of the authentication challenges; nil derives a fixed seed from `index`.
    ///   - drainInterval: battery drain period (1 % each); zero disables the drain.
    ///   - powerOn: true: loading is a power cycle; false: the device stayed on (see the type's description).
    /// - Throws: the `SimulatorError`s of `StateStore.open` (`.stateLocked`, `.corruptState`,
    ///   `.unsupportedStateVersion`, `.io`), each naming the file.
    public init(statePath: String?, index: Int = 0, profile: BehaviourProfile = .normal, randomSeed: UInt64? = nil,
                drainInterval: Duration = ApplicationFirmware.defaultDrainInterval,
                lockTimeout: Duration = StateStore.defaultLockTimeout, powerOn: Bool = true, logger: Logger? = nil) async throws {
        let options = SimulatorOptions(profile: profile, drainInterval: drainInterval, lockTimeout: lockTimeout,
                                       powerOn: powerOn, logger: logger)
        try await self.init(statePath: statePath, index: index, options: options, randomSeed: randomSeed)
    }

    /// Creates device `index` with `options` (time scale, faults, secure boot, ...), owning the state file at
    /// `statePath` (nil: in memory only). Throws like `init(statePath:index:profile:...)`.
    public init(statePath: String?, index: Int = 0, options: SimulatorOptions, randomSeed: UInt64? = nil) async throws {
        var store: StateStore?
        if let statePath { store = try await StateStore.open(path: statePath, lockTimeout: options.lockTimeout) }
        self.init(store: store, ownsStore: true, index: index, options: options, randomSeed: randomSeed)
    }

    /// Creates device `index` on a store shared with other devices (a multi-device server). The caller keeps
    /// ownership of the store and closes it after shutting the devices down.
    public init(sharedStore store: StateStore?, index: Int, profile: BehaviourProfile = .normal, randomSeed: UInt64? = nil,
                drainInterval: Duration = ApplicationFirmware.defaultDrainInterval, powerOn: Bool = true, logger: Logger? = nil) {
        let options = SimulatorOptions(profile: profile, drainInterval: drainInterval, powerOn: powerOn, logger: logger)
        self.init(store: store, ownsStore: false, index: index, options: options, randomSeed: randomSeed)
    }

    /// Creates device `index` with `options` on a store shared with other devices (see above).
    public init(sharedStore store: StateStore?, index: Int, options: SimulatorOptions, randomSeed: UInt64? = nil) {
        self.init(store: store, ownsStore: false, index: index, options: options, randomSeed: randomSeed)
    }

    private init(store: StateStore?, ownsStore: Bool, index: Int, options: SimulatorOptions, randomSeed: UInt64?) {
        let stored = store?.state(forDevice: index) ?? .factory(index: index)
        let storedFlash = store?.takeFlash(forDevice: index)
        let running = store?.takeRunningState(forDevice: index)
        let keeps = !options.powerOn
        let now = ContinuousClock.now
        let config = DeviceConfiguration(
            index: index, timing: options.timing.scaled(by: options.timeScale), secureBootKey: options.secureBootKey,
            queueDepth: max(1, options.queueDepth), drainInterval: options.drainInterval,
            factory: options.production?.unit(index))
        var machine = DeviceMachine(
            config: config, flash: storedFlash, settings: stored,
            randomSeed: randomSeed ?? (0x5EED_0000 &+ UInt64(truncatingIfNeeded: index)), faults: options.faults.flashFaults, now: now)
        if keeps, let running {
            let left = running.readyAtWallClock - StoredRunningState.wallClockNow()
            let snapshot = RunningSnapshot(image: running.image, authenticated: running.authenticated, verified: running.verified,
                                           remainingReadyDelay: left > 0 ? .nanoseconds(left) : .zero)
            machine.resume(snapshot, now: now)
        } else {
            machine.powerOn(now: now, delayed: false, resetRAM: options.powerOn)
        }
        self.index = index
        self.profile = options.profile
        self.options = options
        self.store = store
        self.logger = options.logger
        self.modes = ModeBroadcaster(initial: machine.runningImage)
        self.service = HeadsetServiceMachine(profile: options.profile, queueDepth: machine.config.queueDepth, now: now)
        self.shaping = LinkShaping(profile: options.profile, faults: options.faults, logger: options.logger)
        let persistence = HeadsetPersistence(store: store, ownsStore: ownsStore, index: index, keepsRunningState: keeps,
                                             resumed: running, logger: options.logger)
        persistence.initialWrites(flash: storedFlash == nil ? machine.flash.bytes : nil,
                                  discardStoredRunningState: running != nil && !keeps,
                                  settings: machine.settings != stored ? machine.settings : nil)
        self.persistence = persistence
        self.machine = machine
    }

    // MARK: - Inspection

    /// The current non-volatile settings (and, while the application runs, its RAM values).
    public var state: HeadsetState { machine.settings }
    /// A copy of the application firmware (state, authentication, shutdown flag), for inspection; when the
    /// application is not running, a firmware over the current settings.
    public var firmwareSnapshot: ApplicationFirmware {
        machine.application ?? ApplicationFirmware(state: machine.settings, drainInterval: machine.config.drainInterval)
    }
    /// The image running now; nil while the device is off (after a power cut, before it powers up again).
    public var runningImage: RunningImage? { machine.runningImage }
    /// Whether the device has power.
    public var isPowered: Bool { machine.isPowered }
    /// Whether the running firmware answers requests (powered, and past its readiness delay).
    public var isReady: Bool { machine.isPowered && ContinuousClock.now >= machine.readyAt }
    /// Whether the running image has authenticated the host.
    public var isAuthenticated: Bool {
        switch machine.runningImage {
        case .application: return machine.application?.isAuthenticated ?? false
        case .bootloader: return machine.bootloader.isAuthenticated
        case nil: return false
        }
    }
    /// Flash operation counters and busy time since the simulator started (see `FlashStatistics`).
    public var flashStatistics: FlashStatistics { machine.flash.statistics }
    /// The flash bytes in `range` (absolute addresses, clamped to the flash), without timing.
    public func flashContents(_ range: Range<Int>) -> [UInt8] { Array(machine.flash[range]) }
    /// The whole contents of an updatable region, without timing.
    public func flashContents(of region: FlashRegion) -> [UInt8] { flashContents(FlashMap.range(of: region)) }
    /// The number of power losses (power cuts and reboots) since the device was created.
    public var powerLossCount: Int { service.powerLosses }
    /// The number of hosts being served now.
    public var connectedHosts: Int { hosts.count }
    /// The requests answered so far (what `.stopsAnswering(after:)` counts).
    public var answeredRequests: Int { service.answered }
    /// The last failure to save the state or a flash write, if any (saving continues with the next change).
    public var lastSaveError: SimulatorError? { persistence.lastError }
    /// Whether `shutdown()` has run.
    public var hasShutDown: Bool { service.isShutDown }
}

extension SimulatedHeadset: SimulatedDevice {
    /// `headset N`.
    public nonisolated var deviceDescription: String { "headset \(index)" }
}
