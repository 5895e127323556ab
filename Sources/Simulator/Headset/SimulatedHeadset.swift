import Firmware
import LightX
import Logging
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

    private var machine: DeviceMachine
    /// The state store (shared or owned), nil when the device is in memory only.
    nonisolated let store: StateStore?
    private let ownsStore: Bool
    private let keepsRunningState: Bool
    /// The RAM state resumed from the flash file while it is still what the file says (then nothing needs to be
    /// written: a command that changes nothing, such as a probe, leaves the file untouched). Nil once it changed.
    private var resumedRunningState: StoredRunningState?
    private let logger: Logger?
    private var hosts: [UInt64: Host] = [:]
    private var nextHostID: UInt64 = 0
    private var requestsAnswered = 0
    private var batteryTask: Task<Void, Never>?
    private var isShutDown = false
    private var saveError: SimulatorError?
    private var pending: [Pending] = []
    private var processor: Task<Void, Never>?
    private var spaceWaiters: [CheckedContinuation<Void, Never>] = []
    /// Incremented by every power loss: work begun before it must not reply after it.
    private var epoch: UInt64 = 0
    /// When the flash finishes its current operation (absolute, so sleep overshoot does not accumulate).
    private var busyUntil: ContinuousClock.Instant
    private var powerTask: Task<Void, Never>?
    private var powerLosses = 0
    /// Observers of the running image.
    private let modes: ModeBroadcaster

    /// Frames queued per host before further ones are dropped (a host that does not read its link).
    static let outboxLimit = 4096

    private enum Outbound: Sendable {
        /// A reply; `after` runs once it was handed to the link (or could not be).
        case reply([UInt8], after: (@Sendable () -> Void)?)
        case push([UInt8])
    }

    private struct Host {
        let link: any Transport
        let framing: LinkFraming
        let outbox: AsyncStream<Outbound>.Continuation
        let writer: Task<Void, Never>

        /// `packet` in this link's format: an SPP frame, or a raw packet whose reply header echoes the modules of
        /// `request` (the USB convention).
        func encode(_ packet: Packet, answering request: Packet?) -> [UInt8] {
            SimulatedHeadset.encode(packet, framing: framing, answering: request)
        }
    }

    private struct Pending {
        let host: UInt64
        let request: Packet
        let arrived: ContinuousClock.Instant
    }

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
            queueDepth: max(1, options.queueDepth), drainInterval: options.drainInterval)
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
        self.ownsStore = ownsStore
        self.keepsRunningState = keeps
        self.logger = options.logger
        self.busyUntil = now
        self.modes = ModeBroadcaster(initial: machine.runningImage)
        if let store {
            let logger = options.logger
            let report: @Sendable (Result<Void, SimulatorError>) -> Void = { result in
                if case .failure(let error) = result { logger?.error("device \(index): \(error.message)") }
            }
            if storedFlash == nil { store.enqueueFlashInitialize(machine.flash.bytes, forDevice: index, completion: report) }
            // Stored RAM must not outlive a change: it is cleared as soon as the RAM differs
            // (`forgetResumedRAMIfChanged`), when the store closes without this device having shut down, and by the
            // next owner of a store whose owner was killed, not at open: a command that changes nothing writes
            // nothing.
            if running != nil, !keeps { store.enqueueRunningState(nil, forDevice: index, completion: report) }
            if machine.settings != stored { store.enqueueSave(machine.settings, forDevice: index, completion: report) }
        }
        self.machine = machine
        self.resumedRunningState = keeps ? running : nil
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
    public var powerLossCount: Int { powerLosses }
    /// The number of hosts being served now.
    public var connectedHosts: Int { hosts.count }
    /// The requests answered so far (what `.stopsAnswering(after:)` counts).
    public var answeredRequests: Int { requestsAnswered }
    /// The last failure to save the state or a flash write, if any (saving continues with the next change).
    public var lastSaveError: SimulatorError? { saveError }
    /// Whether `shutdown()` has run.
    public var hasShutDown: Bool { isShutDown }

    // MARK: - Links

    /// Serves one host link until it closes, the device loses power, or `shutdown()`: decodes the requests — SPP
    /// frames on a `.byteStream` link (skipping garbage), one raw LightX packet per message on a `.packets` link
    /// (skipping messages that do not decode) —, queues each request, and sends replies and pushes in the link's
    /// format (see the type's description). Closes the link when done. A link offered while the device is off or shut
    /// down is closed at once. Never throws.
    public func serve(_ transport: any Transport) async {
        guard let id = register(transport) else {
            await transport.close()
            return
        }
        await run(id)
    }

    /// Opens a new in-memory link (SPP byte stream) to this running device and serves it; returns the host's end.
    /// While the device is off or shut down the link is closed at once (the host's `receive` throws `.closed`).
    public func connect() -> any Transport {
        let (host, deviceEnd) = InMemoryTransport.pair(framing: .byteStream)
        if let id = register(deviceEnd) {
            Task { await self.run(id) }
        } else {
            Task { await deviceEnd.close() }
        }
        return host
    }

    /// Cuts the power now (as an injected `cut@N` does, but between flash operations: an operation in progress
    /// completes, its reply is lost). Every host link closes, queued requests are dropped, RAM is lost; the device
    /// powers up after `powerUpDelay` — at once when that is zero (time scale 0), before this returns.
    public func powerCut() async {
        await losePower(offFor: machine.config.timing.powerUpDelay)
    }

    /// Resets the device: like `powerCut()` without the time off (it powers up before this returns).
    public func reboot() async {
        await losePower(offFor: .zero)
    }

    /// The running image as it changes: first the current one, then every change — nil when the device loses power
    /// (power cut, reboot, injected cut), the image that boots when it powers up, `.bootloader`/`.application` on a
    /// jump. A jump is reported once its reply has been handed to the requesting link (a USB gadget following this
    /// stream re-enumerates only after the host can fetch that reply); a power loss at once. Consecutive equal
    /// values are not repeated. The stream finishes at `shutdown()`. Any number of observers; each gets every change.
    public nonisolated func modeChanges() -> AsyncStream<RunningImage?> {
        modes.stream()
    }

    /// Waits until the device is powered and ready, or `timeout` passes; returns whether it is.
    public func waitUntilReady(timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isShutDown {
            if isReady { return true }
            guard ContinuousClock.now < deadline else { return false }
            do { try await Task.sleep(for: .milliseconds(2)) } catch { return isReady }  // cancelled: answer now
        }
        return false
    }

    private func register(_ transport: any Transport) -> UInt64? {
        guard !isShutDown, machine.isPowered else { return nil }
        let id = nextHostID
        nextHostID += 1
        var link = profile.link(for: transport)
        if let conditions = options.faults.linkConditions(forLink: id) {
            link = ConditionedTransport(wrapping: link, conditions: conditions, logger: logger)
        }
        startBatteryTimer()
        let (stream, outbox) = AsyncStream.makeStream(of: Outbound.self, bufferingPolicy: .bufferingOldest(Self.outboxLimit))
        let writer = Task.detached { [delay = profile.replyDelay, link] in
            await Self.write(stream, to: link, replyDelay: delay)
        }
        hosts[id] = Host(link: link, framing: link.framing, outbox: outbox, writer: writer)
        logger?.debug("device \(index): host connected on \(link.peerDescription)")
        return id
    }

    private func run(_ id: UInt64) async {
        guard let host = hosts[id] else { return }
        let link = host.link
        var decoder = SPPStreamDecoder()
        var undecodable = 0
        receiving: while !isShutDown, hosts[id] != nil {
            let chunk: [UInt8]
            do {
                chunk = try await link.receive()
            } catch {
                break
            }
            if host.framing == .packets {
                // One message, one raw LightX packet.
                guard let request = try? RawPacketCodec.decode(chunk) else {
                    undecodable += 1
                    logger?.debug("device \(index): skipped an undecodable \(chunk.count)-byte packet on \(link.peerDescription)")
                    continue
                }
                await submit(request, from: id)
                continue
            }
            decoder.append(chunk)
            while let request = decoder.next() {
                await submit(request, from: id)
                if hosts[id] == nil { break receiving }
            }
        }
        hosts[id] = nil
        machine.linkClosed(id)
        host.outbox.finish()
        // Let queued replies drain (a host may half-close and still read), but never wait on a stuck link for long.
        let watchdog = Task.detached {
            do {
                try await Task.sleep(for: .seconds(2))
                await link.close()
            } catch {}
        }
        await host.writer.value
        watchdog.cancel()
        await link.close()
        if host.framing == .packets {
            logger?.debug("device \(index): host on \(link.peerDescription) disconnected (\(undecodable) packets skipped)")
        } else {
            let stats = decoder.statistics
            logger?.debug("device \(index): host on \(link.peerDescription) disconnected (\(stats.frames) frames, \(stats.discardedBytes) bytes skipped)")
        }
    }

    // MARK: - The request queue

    private func submit(_ request: Packet, from id: UInt64) async {
        guard !isShutDown, machine.isPowered, profile.answers(afterAnswering: requestsAnswered) else { return }
        let depth = machine.config.queueDepth
        if pending.count >= depth {
            if machine.runningImage == .bootloader {
                requestsAnswered += 1
                if let host = hosts[id] {
                    host.outbox.yield(.reply(host.encode(ApplicationFirmware.reply(to: request, .notReady), answering: request), after: nil))
                }
                return
            }
            while pending.count >= depth, !isShutDown, hosts[id] != nil {
                await withCheckedContinuation { spaceWaiters.append($0) }
            }
            guard !isShutDown, machine.isPowered, hosts[id] != nil else { return }
        }
        requestsAnswered += 1
        pending.append(Pending(host: id, request: request, arrived: .now))
        if processor == nil {
            processor = Task { await self.drainQueue() }
        }
    }

    private func drainQueue() async {
        while !isShutDown, !pending.isEmpty {
            let item = pending.removeFirst()
            if !spaceWaiters.isEmpty { spaceWaiters.removeFirst().resume() }
            await process(item)
        }
        processor = nil
    }

    /// Handles one request: the machine acts at once; persistence runs while the device is busy for the modelled
    /// time; then the reply goes out, unless the power was lost meanwhile.
    private func process(_ item: Pending) async {
        let started = epoch
        let now = ContinuousClock.now
        let modeBefore = machine.runningImage
        let step = machine.handle(item.request, now: now, from: hosts[item.host] != nil ? item.host : nil)
        forgetResumedRAMIfChanged()
        let modeAfter = machine.runningImage
        let flashWrite = persistFlash(step.touched)
        let settingsSave = step.settingsChanged ? enqueueSettingsSave() : nil
        if step.powerCut {
            await losePower(offFor: machine.config.timing.powerUpDelay)
        } else if step.busy > .zero {
            busyUntil = max(busyUntil, item.arrived) + step.busy
            try? await Task.sleep(until: busyUntil, tolerance: .zero, clock: .continuous)
        }
        if let flashWrite { record(await flashWrite.wait()) }
        if let settingsSave { record(await settingsSave.wait()) }
        guard !step.powerCut, epoch == started else { return }
        let modeChanged = modeAfter != modeBefore
        guard let host = hosts[item.host] else {
            if modeChanged { modes.publish(modeAfter) }
            return
        }
        // A jump is reported once its reply is on the link (see `modeChanges()`).
        let after = modeChanged ? modes.schedule(modeAfter) : nil
        for (k, reply) in step.replies.enumerated() {
            let last = k == step.replies.count - 1
            switch host.outbox.yield(.reply(host.encode(reply, answering: item.request), after: last ? after : nil)) {
            case .enqueued: break
            case .dropped, .terminated: if last { after?() }
            @unknown default: if last { after?() }
            }
        }
        if step.replies.isEmpty { after?() }
    }

    // MARK: - Power

    private func losePower(offFor delay: Duration) async {
        guard !isShutDown else { return }
        epoch += 1
        powerLosses += 1
        if machine.isPowered { machine.powerOff() }
        forgetResumedRAMIfChanged()
        modes.publish(nil)
        powerTask?.cancel()
        pending.removeAll()
        resumeSpaceWaiters()
        let links = hosts.values.map(\.link)
        for host in hosts.values { host.outbox.finish() }
        hosts = [:]
        logger?.info("device \(index): power lost; up again in \(delay)")
        let expected = epoch
        var saving: WriteCompletion?
        if delay > .zero {
            powerTask = Task { [weak self] in
                do { try await Task.sleep(for: delay) } catch { return }
                await self?.powerUpAndSave(expecting: expected)
            }
        } else {
            // Up again before the links are seen to close, so a host that sees its link drop finds the device on.
            saving = powerUp(expecting: expected)
        }
        for link in links { await Self.closeAbruptly(link) }
        if let saving { record(await saving.wait()) }
    }

    private func powerUpAndSave(expecting expected: UInt64) async {
        if let saving = powerUp(expecting: expected) { record(await saving.wait()) }
    }

    /// Powers the device up (unless another power loss or a shutdown came in between); returns the save of the
    /// settings the power-on changed, if any.
    private func powerUp(expecting expected: UInt64) -> WriteCompletion? {
        guard !isShutDown, epoch == expected, !machine.isPowered else { return nil }
        let before = machine.settings
        let now = ContinuousClock.now
        machine.powerOn(now: now, delayed: true)
        modes.publish(machine.runningImage)
        busyUntil = now
        logger?.info("device \(index): powered up in the \(machine.runningImage?.rawValue ?? "?")")
        return machine.settings != before ? enqueueSettingsSave() : nil
    }

    /// Closes a link at once: a conditioned link's inner transport first, so queued traffic is not delivered.
    private static func closeAbruptly(_ link: any Transport) async {
        if let conditioned = link as? ConditionedTransport { await closeAbruptly(conditioned.inner) }
        await link.close()
    }

    // MARK: - Device events

    /// Presses a button on the device; returns (and sends to every host) the resulting push. Buttons only act while
    /// the application runs.
    @discardableResult
    public func press(_ button: HeadsetButton) async -> [Packet] {
        await deviceEvent(applicationOnly: true) { $0.pressButton(button) }
    }

    /// Sets the battery level from the device side (e.g. the `battery N` control line); returns (and sends) the push
    /// when the level changed and the application runs.
    @discardableResult
    public func setBatteryLevel(_ percent: UInt32) async -> [Packet] {
        await deviceEvent(applicationOnly: false) { $0.setBatteryLevel(percent) }
    }

    /// Lets device time pass (the battery timer calls this with the measured elapsed time; tests may call it
    /// directly). Returns (and sends) the battery push when the level changed and the application runs.
    @discardableResult
    public func advanceTime(by elapsed: Duration) async -> [Packet] {
        await deviceEvent(applicationOnly: false) { $0.advanceTime(by: elapsed) }
    }

    private func deviceEvent(applicationOnly: Bool, _ event: (inout ApplicationFirmware) -> [Packet]) async -> [Packet] {
        let (pushes, changed) = machine.deviceEvent(applicationOnly: applicationOnly, event)
        if changed, let save = enqueueSettingsSave() { record(await save.wait()) }
        broadcast(pushes)
        return pushes
    }

    /// Stops the device: cancels its timers, closes every host link (ending their `serve` calls), stores the running
    /// state of an in-process device, and — when this device owns its state file — waits for pending writes and
    /// releases the file's lock. Idempotent.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        epoch += 1
        modes.finish()
        batteryTask?.cancel()
        batteryTask = nil
        powerTask?.cancel()
        pending.removeAll()
        resumeSpaceWaiters()
        if let processor {
            processor.cancel()
            await processor.value
        }
        if keepsRunningState, let store {
            let current = storedRunningState()
            if current != resumedRunningState {
                let completion = WriteCompletion()
                store.enqueueRunningState(current, forDevice: index) { completion.complete($0) }
                record(await completion.wait())
            } else {
                store.releaseRunningState(forDevice: index)
            }
        }
        let current = Array(hosts.values)
        hosts = [:]
        for host in current {
            host.outbox.finish()
            await host.link.close()
        }
        if ownsStore { await store?.close() }
    }

    // MARK: - Internals

    /// Clears the stored RAM state once the RAM no longer matches it (see `resumedRunningState`).
    private func forgetResumedRAMIfChanged() {
        guard let resumed = resumedRunningState, storedRunningState() != resumed else { return }
        resumedRunningState = nil
        store?.enqueueRunningState(nil, forDevice: index) { [logger = options.logger, index] result in
            if case .failure(let error) = result { logger?.error("device \(index): \(error.message)") }
        }
    }

    private func storedRunningState() -> StoredRunningState? {
        let now = ContinuousClock.now
        guard let snapshot = machine.snapshot(now: now) else { return nil }
        let left = ApplicationFirmware.nanoseconds(snapshot.remainingReadyDelay)
        return StoredRunningState(image: snapshot.image, authenticated: snapshot.authenticated, verified: snapshot.verified,
                                  readyAtWallClock: left > 0 ? StoredRunningState.wallClockNow() + left : 0)
    }

    /// Enqueues the write of the flash bytes `ranges` cover (as one range) in operation order.
    private func persistFlash(_ ranges: [Range<Int>]) -> WriteCompletion? {
        guard let store, let first = ranges.first else { return nil }
        let lower = ranges.reduce(first.lowerBound) { min($0, $1.lowerBound) }
        let upper = ranges.reduce(first.upperBound) { max($0, $1.upperBound) }
        let completion = WriteCompletion()
        store.enqueueFlashWrite(flashContents(lower..<upper), at: lower, forDevice: index) { completion.complete($0) }
        return completion
    }

    private func enqueueSettingsSave() -> WriteCompletion? {
        guard let store else { return nil }
        let completion = WriteCompletion()
        // Enqueued synchronously on this actor, so saves hit the disk in the order the changes happened.
        store.enqueueSave(machine.settings, forDevice: index) { completion.complete($0) }
        return completion
    }

    private func record(_ result: Result<Void, SimulatorError>) {
        if case .failure(let error) = result {
            saveError = error
            logger?.error("device \(index): \(error.message)")
        }
    }

    private func resumeSpaceWaiters() {
        let waiters = spaceWaiters
        spaceWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func broadcast(_ pushes: [Packet]) {
        guard !pushes.isEmpty, profile.answers(afterAnswering: requestsAnswered) else { return }
        for push in pushes {
            var encoded: [LinkFraming: [UInt8]] = [:]
            for host in hosts.values {
                let frame = encoded[host.framing] ?? host.encode(push, answering: nil)
                encoded[host.framing] = frame
                host.outbox.yield(.push(frame))
            }
        }
    }

    private func startBatteryTimer() {
        guard batteryTask == nil, !isShutDown, machine.config.drainInterval > .zero else { return }
        let interval = machine.config.drainInterval
        batteryTask = Task { [weak self] in
            let clock = ContinuousClock()
            var last = clock.now
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                let now = clock.now
                guard let self else { return }
                await self.advanceTime(by: now - last)
                last = now
            }
        }
    }

    /// `packet` encoded for a link with `framing`: an SPP frame on a byte stream; on a packet link the raw packet,
    /// a reply (`request` given) with the request's source and destination echoed.
    static func encode(_ packet: Packet, framing: LinkFraming, answering request: Packet?) -> [UInt8] {
        switch framing {
        case .byteStream:
            return SPPFraming.encode(packet)
        case .packets:
            var raw = packet
            if let request {
                // Same as Packet.reply(to:status:buffer:swapModules: false).
                raw.header.source = request.header.source
                raw.header.destination = request.header.destination
            }
            return RawPacketCodec.encode(raw)
        }
    }

    /// Sends queued frames in order; replies wait `replyDelay` first, then run their `after`. Stops sending (closing
    /// the link) when sending fails, still running the `after` of what is left.
    private static func write(_ stream: AsyncStream<Outbound>, to link: any Transport, replyDelay: Duration?) async {
        var failed = false
        for await item in stream {
            switch item {
            case .reply(let bytes, let after):
                if !failed {
                    if let replyDelay { try? await Task.sleep(for: replyDelay) }
                    failed = await send(bytes, on: link)
                }
                after?()
            case .push(let bytes):
                if !failed { failed = await send(bytes, on: link) }
            }
        }
    }

    /// Sends `bytes`; on failure closes the link and returns true.
    private static func send(_ bytes: [UInt8], on link: any Transport) async -> Bool {
        do {
            try await link.send(bytes)
            return false
        } catch {
            await link.close()
            return true
        }
    }
}

/// A one-shot completion a store callback fills and an actor awaits later.
final class WriteCompletion: Sendable {
    private struct State {
        var result: Result<Void, SimulatorError>?
        var waiter: CheckedContinuation<Result<Void, SimulatorError>, Never>?
    }

    private let state = Mutex(State())

    func complete(_ result: Result<Void, SimulatorError>) {
        let waiter = state.withLock { s -> CheckedContinuation<Result<Void, SimulatorError>, Never>? in
            s.result = result
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: result)
    }

    func wait() async -> Result<Void, SimulatorError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> Result<Void, SimulatorError>? in
                if let r = s.result { return r }
                s.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
