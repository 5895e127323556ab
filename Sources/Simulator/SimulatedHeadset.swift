import LightX
import Logging
import Transport

/// A simulated headset: the application firmware, its persisted state and the hosts connected to it.
///
/// - `serve(_:)` runs one host link (several may run at once); requests are handled in arrival order per link,
///   pushes go to every connected host.
/// - Every state change (host write, button press, battery drain) is saved to the state store before the reply or
///   push goes out, so an acknowledged write survives a killed process.
/// - With `powerOn` (a server starting), loading is a power cycle: the state comes from the store `poweredOn()`
///   (EQ working gains fall back to the persisted ones and the default EQ preset becomes current). Without it (the
///   in-process `sim` device of each CLI command), the device is one that stayed on: the state is taken as saved.
/// - While it serves, a timer task drains the battery (see `ApplicationFirmware.advanceTime(by:)`).
public actor SimulatedHeadset {
    /// The device's index within its server (0-based); selects its slot in the state file and its factory identity.
    public nonisolated let index: Int
    /// How the device behaves on its links.
    public nonisolated let profile: BehaviourProfile

    private var firmware: ApplicationFirmware
    private let store: StateStore?
    private let ownsStore: Bool
    private let logger: Logger?
    private var hosts: [UInt64: Host] = [:]
    private var nextHostID: UInt64 = 0
    private var requestsAnswered = 0
    private var batteryTask: Task<Void, Never>?
    private var isShutDown = false
    private var saveError: SimulatorError?

    /// Frames queued per host before further ones are dropped (a host that does not read its link).
    static let outboxLimit = 4096

    private enum Outbound: Sendable {
        case reply([UInt8])
        case push([UInt8])
    }

    private struct Host {
        let link: any Transport
        let outbox: AsyncStream<Outbound>.Continuation
    }

    /// Creates device `index`, owning the state file at `statePath` (nil: state in memory only, starting from the
    /// factory state). Waits up to `lockTimeout` for another owner of the file.
    ///
    /// - Parameters:
    ///   - randomSeed: seed of the authentication challenges; nil derives a fixed seed from `index`.
    ///   - drainInterval: battery drain period (1 % each); zero disables the drain.
    /// - Throws: the `SimulatorError`s of `StateStore.open` (`.stateLocked`, `.corruptState`,
    ///   `.unsupportedStateVersion`, `.io`), each naming the file.
    public init(statePath: String?, index: Int = 0, profile: BehaviourProfile = .normal, randomSeed: UInt64? = nil,
                drainInterval: Duration = ApplicationFirmware.defaultDrainInterval,
                lockTimeout: Duration = StateStore.defaultLockTimeout, powerOn: Bool = true, logger: Logger? = nil) async throws {
        var store: StateStore?
        if let statePath { store = try await StateStore.open(path: statePath, lockTimeout: lockTimeout) }
        self.init(store: store, ownsStore: true, index: index, profile: profile, randomSeed: randomSeed,
                  drainInterval: drainInterval, powerOn: powerOn, logger: logger)
    }

    /// Creates device `index` on a store shared with other devices (a multi-device server). The caller keeps
    /// ownership of the store and closes it after shutting the devices down.
    public init(sharedStore store: StateStore?, index: Int, profile: BehaviourProfile = .normal, randomSeed: UInt64? = nil,
                drainInterval: Duration = ApplicationFirmware.defaultDrainInterval, powerOn: Bool = true, logger: Logger? = nil) {
        self.init(store: store, ownsStore: false, index: index, profile: profile, randomSeed: randomSeed,
                  drainInterval: drainInterval, powerOn: powerOn, logger: logger)
    }

    private init(store: StateStore?, ownsStore: Bool, index: Int, profile: BehaviourProfile, randomSeed: UInt64?,
                 drainInterval: Duration, powerOn: Bool, logger: Logger?) {
        let stored = store?.state(forDevice: index) ?? .factory(index: index)
        self.index = index
        self.profile = profile
        self.store = store
        self.ownsStore = ownsStore
        self.logger = logger
        self.firmware = ApplicationFirmware(
            state: powerOn ? stored.poweredOn() : stored, randomSeed: randomSeed ?? (0x5EED_0000 &+ UInt64(truncatingIfNeeded: index)),
            drainInterval: drainInterval)
    }

    /// The current device state.
    public var state: HeadsetState { firmware.state }
    /// A copy of the firmware (state, authentication, shutdown flag), for inspection.
    public var firmwareSnapshot: ApplicationFirmware { firmware }
    /// The number of hosts being served now.
    public var connectedHosts: Int { hosts.count }
    /// The requests answered so far (what `.stopsAnswering(after:)` counts).
    public var answeredRequests: Int { requestsAnswered }
    /// The last failure to save the state, if any (saving continues with the next change).
    public var lastSaveError: SimulatorError? { saveError }
    /// Whether `shutdown()` has run.
    public var hasShutDown: Bool { isShutDown }

    /// Serves one host link until it closes (or `shutdown()`): decodes SPP frames (skipping garbage), answers each
    /// request, and sends pushes from device events. Closes the link when done. Never throws: link errors end the
    /// loop, undecodable bytes are skipped.
    public func serve(_ transport: any Transport) async {
        guard !isShutDown else {
            await transport.close()
            return
        }
        let link = profile.link(for: transport)
        startBatteryTimer()
        let (stream, outbox) = AsyncStream.makeStream(of: Outbound.self, bufferingPolicy: .bufferingOldest(Self.outboxLimit))
        let id = nextHostID
        nextHostID += 1
        hosts[id] = Host(link: link, outbox: outbox)
        logger?.debug("device \(index): host connected on \(link.peerDescription)")
        let writer = Task.detached { [delay = profile.replyDelay] in
            await Self.write(stream, to: link, replyDelay: delay)
        }
        var decoder = SPPStreamDecoder()
        while !isShutDown {
            let chunk: [UInt8]
            do {
                chunk = try await link.receive()
            } catch {
                break
            }
            decoder.append(chunk)
            while let request = decoder.next() {
                for reply in await answer(request) {
                    outbox.yield(.reply(SPPFraming.encode(reply)))
                }
            }
        }
        hosts[id] = nil
        outbox.finish()
        // Let queued replies drain (a host may half-close and still read), but never wait on a stuck link for long.
        let watchdog = Task.detached {
            do {
                try await Task.sleep(for: .seconds(2))
                await link.close()
            } catch {}
        }
        await writer.value
        watchdog.cancel()
        await link.close()
        let stats = decoder.statistics
        logger?.debug("device \(index): host on \(link.peerDescription) disconnected (\(stats.frames) frames, \(stats.discardedBytes) bytes skipped)")
    }

    /// Handles one request unless the profile keeps the device silent; saves a changed state before replying.
    private func answer(_ request: Packet) async -> [Packet] {
        guard profile.answers(afterAnswering: requestsAnswered), !isShutDown else { return [] }
        requestsAnswered += 1
        let before = firmware.state
        let replies = firmware.handle(request)
        await saveIfChanged(from: before)
        return replies
    }

    /// Presses a button on the device; returns (and sends to every host) the resulting push.
    @discardableResult
    public func press(_ button: HeadsetButton) async -> [Packet] {
        await deviceEvent { $0.pressButton(button) }
    }

    /// Sets the battery level from the device side (e.g. the `battery N` control line); returns (and sends) the push
    /// when the level changed.
    @discardableResult
    public func setBatteryLevel(_ percent: UInt32) async -> [Packet] {
        await deviceEvent { $0.setBatteryLevel(percent) }
    }

    /// Lets device time pass (the battery timer calls this with the measured elapsed time; tests may call it
    /// directly). Returns (and sends) the battery push when the level changed.
    @discardableResult
    public func advanceTime(by elapsed: Duration) async -> [Packet] {
        await deviceEvent { $0.advanceTime(by: elapsed) }
    }

    /// Applies a device-side event to the firmware, saves a changed state, and sends the pushes to every host.
    private func deviceEvent(_ event: (inout ApplicationFirmware) -> [Packet]) async -> [Packet] {
        let before = firmware.state
        let pushes = event(&firmware)
        await saveIfChanged(from: before)
        broadcast(pushes)
        return pushes
    }

    /// Stops the device: cancels the battery timer, closes every host link (ending their `serve` calls) and, when
    /// this device owns its state file, waits for pending saves and releases the file's lock. Idempotent.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        batteryTask?.cancel()
        batteryTask = nil
        let current = Array(hosts.values)
        hosts = [:]
        for host in current {
            host.outbox.finish()
            await host.link.close()
        }
        if ownsStore { await store?.close() }
    }

    // MARK: - Internals

    private func saveIfChanged(from before: HeadsetState) async {
        guard let store, firmware.state != before else { return }
        let result: Result<Void, SimulatorError> = await withCheckedContinuation { continuation in
            // Enqueued synchronously on this actor, so saves hit the disk in the order the changes happened.
            store.enqueueSave(firmware.state, forDevice: index) { continuation.resume(returning: $0) }
        }
        if case .failure(let error) = result {
            saveError = error
            logger?.error("device \(index): \(error.message)")
        }
    }

    private func broadcast(_ pushes: [Packet]) {
        guard !pushes.isEmpty, profile.answers(afterAnswering: requestsAnswered) else { return }
        for push in pushes {
            let frame = SPPFraming.encode(push)
            for host in hosts.values { host.outbox.yield(.push(frame)) }
        }
    }

    private func startBatteryTimer() {
        guard batteryTask == nil, !isShutDown, firmware.drainInterval > .zero else { return }
        let interval = firmware.drainInterval
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

    /// Sends queued frames in order; replies wait `replyDelay` first. Stops (closing the link) when sending fails.
    private static func write(_ stream: AsyncStream<Outbound>, to link: any Transport, replyDelay: Duration?) async {
        for await item in stream {
            let frame: [UInt8]
            switch item {
            case .reply(let bytes):
                if let replyDelay { try? await Task.sleep(for: replyDelay) }
                frame = bytes
            case .push(let bytes):
                frame = bytes
            }
            do {
                try await link.send(frame)
            } catch {
                await link.close()
                return
            }
        }
    }
}
