import Firmware
import LightX
import Support
import Transport

/// What a device is built with and does not change while it runs.
struct DeviceConfiguration: Sendable {
    /// The device's index (factory identity, state-file slot).
    var index: Int
    /// Timing, already multiplied by the time scale.
    var timing: DeviceTiming
    /// With secure boot, the key every booted or committed application must be signed with.
    var secureBootKey: VerificationKey?
    /// Flow-control depth Q the bootloader reports in its capabilities.
    var queueDepth: Int
    /// Battery drain period of the application.
    var drainInterval: Duration
    /// A unit of a production line (`--blank`): its uid, spread and factory commands; nil for the classic headset.
    var factory: FactoryUnit? = nil
}

/// The application the commit log points at, when it is bootable: its record's CRC matches the application region
/// (and, with secure boot, the image verifies with the key).
struct CommittedApplication: Sendable {
    var record: CommitRecord
    var manifest: AppManifest?
    var version: ImageVersion { record.version }
}

/// What the device keeps in RAM that the in-process simulator carries from one CLI process to the next (a device
/// that "stayed on"): the image running, authentication, the bootloader's remembered verifications and how much of
/// the readiness delay is left.
struct RunningSnapshot: Sendable, Hashable {
    var image: RunningImage
    var authenticated: Bool
    var verified: [FlashRegion: Bootloader.Verification]
    var remainingReadyDelay: Duration
}

/// One simulated headset as hardware: the NOR flash, the non-volatile settings, power, and the image its MCU runs.
/// A value type without I/O or clock reads (time comes in as `now`); `SimulatedHeadset` owns one and does the I/O,
/// the queueing and the sleeping.
///
/// States (an explicit machine; `state` plus `readyAt`):
///
/// | state | entered by | answers |
/// |---|---|---|
/// | off | a power cut (`powerOff()`) | nothing; the owner closes every link |
/// | bootloader, starting | power-on without a bootable application; JumpToBootloader (0x25) from the app | NotReady to every request until `readyAt` |
/// | bootloader | `readyAt` passed | Boot commands and Config strings (`Bootloader`); App commands NotSupported |
/// | application, starting | power-on with a bootable application; JumpToApplication (0x2A) | NotReady until `readyAt` |
/// | application | `readyAt` passed | `ApplicationFirmware`; JumpToBootloader resets into the bootloader |
///
/// RAM (authentication, the outstanding challenge, the bootloader's verifications, EQ working gains) is lost by every
/// reset and power cycle, except that authentication survives the jump from the application into the bootloader.
struct DeviceMachine: Sendable {
    enum State: Sendable, Hashable {
        case off
        case bootloader
        case application
    }

    /// The effects of handling one request.
    struct Step: Sendable {
        /// The replies to send (one, or none when the device lost power or is off).
        var replies: [Packet] = []
        /// Device-busy time the request took (flash operations).
        var busy: Duration = .zero
        /// Flash ranges changed, to persist.
        var touched: [Range<Int>] = []
        /// Whether the non-volatile settings changed, to persist.
        var settingsChanged = false
        /// Whether fault injection cut the power: the machine is off now.
        var powerCut = false

        mutating func record(_ op: FlashOperation) {
            busy += op.busy
            if let t = op.touched { touched.append(t) }
            if op.status == .powerCut { powerCut = true }
        }
    }

    let config: DeviceConfiguration
    var flash: NORFlash
    var settings: HeadsetState
    private(set) var state: State = .off
    /// Until when the running firmware answers NotReady.
    var readyAt: ContinuousClock.Instant
    /// The bootloader's RAM (meaningful in `.bootloader`).
    var bootloader = Bootloader()
    /// The application (non-nil exactly in `.application`).
    var application: ApplicationFirmware?
    /// Source of authentication challenges, shared by both images.
    var random: SeededRandom
    /// Battery drain time carried while the application is not running.
    var drainElapsed: Duration = .zero
    /// Factory measurements (0x6B) taken so far: the position in the unit's measurement noise. Physics rather than
    /// memory: no reset or power cycle rewinds it (a new simulator process starts at 0).
    var measurementsTaken: UInt64 = 0
    /// The link whose update owns the device, and when it last sent a request (see `UpdateOwner`).
    private(set) var updateOwner: UpdateOwner?
    /// The committed application, once evaluated; `.none` until then and after every change to the application region
    /// or the commit log.
    private var committedCache: CommittedApplication??

    /// A device that is off, with `flash` (the factory flash when nil) and `settings`.
    init(config: DeviceConfiguration, flash contents: [UInt8]?, settings: HeadsetState, randomSeed: UInt64,
         faults: FlashFaults, now: ContinuousClock.Instant) {
        self.config = config
        self.flash = NORFlash(contents: contents ?? FactoryFirmware.flashContents, timing: config.timing, faults: faults)
        self.settings = settings
        self.random = SeededRandom(seed: randomSeed)
        self.readyAt = now
    }

    /// Whether the device has power.
    var isPowered: Bool { state != .off }

    /// The image running, nil when off.
    var runningImage: RunningImage? {
        switch state {
        case .off: return nil
        case .bootloader: return .bootloader
        case .application: return .application
        }
    }

    // MARK: - Power

    /// Powers the device up: RAM starts empty (with `resetRAM`, EQ working gains fall back to the persisted ones),
    /// the bootloader evaluates the commit log and starts the committed application when it is bootable, else stays
    /// in itself. With `delayed`, the firmware answers NotReady for `readyDelay`.
    mutating func powerOn(now: ContinuousClock.Instant, delayed: Bool, resetRAM: Bool = true) {
        if resetRAM { settings = settings.poweredOn() }
        bootloader = Bootloader()
        application = nil
        if let committed = evaluateCommitted().application {
            startApplication(committed, now: now, delayed: delayed)
        } else {
            state = .bootloader
            readyAt = delayed ? now + config.timing.readyDelay : now
        }
    }

    /// Cuts the power: everything in RAM is lost.
    mutating func powerOff() {
        if let app = application {
            random = app.random
            drainElapsed = app.drainElapsed
        }
        application = nil
        bootloader = Bootloader()
        updateOwner = nil
        state = .off
    }

    /// The RAM the in-process simulator keeps between processes (nil when off).
    func snapshot(now: ContinuousClock.Instant) -> RunningSnapshot? {
        let remaining = readyAt > now ? readyAt - now : .zero
        switch state {
        case .off:
            return nil
        case .bootloader:
            return RunningSnapshot(image: .bootloader, authenticated: bootloader.isAuthenticated, verified: bootloader.verified,
                                   remainingReadyDelay: remaining)
        case .application:
            return RunningSnapshot(image: .application, authenticated: application?.isAuthenticated ?? false, verified: [:],
                                   remainingReadyDelay: remaining)
        }
    }

    /// Resumes a device that stayed on: the image, authentication and verifications of `snapshot`. An application
    /// is only resumed while the committed application is still bootable (otherwise: bootloader).
    mutating func resume(_ snapshot: RunningSnapshot, now: ContinuousClock.Instant) {
        switch snapshot.image {
        case .application:
            guard let committed = evaluateCommitted().application else {
                powerOn(now: now, delayed: false, resetRAM: false)
                return
            }
            startApplication(committed, now: now, delayed: false)
            application?.isAuthenticated = snapshot.authenticated
        case .bootloader:
            application = nil
            bootloader = Bootloader(isAuthenticated: snapshot.authenticated, verified: snapshot.verified)
            state = .bootloader
        }
        readyAt = now + snapshot.remainingReadyDelay
    }

    // MARK: - Requests

    /// Handles one host request from link `link` (see the state table); nil for a request still queued from a link
    /// that has closed since (it runs, but cannot claim an update: see `UpdateOwner`).
    mutating func handle(_ request: Packet, now: ContinuousClock.Instant, from link: UInt64? = 0) -> Step {
        var step = Step()
        guard state != .off else { return step }
        if now < readyAt {
            step.replies = [ApplicationFirmware.reply(to: request, .notReady)]
            return step
        }
        if !UpdateOwner.admits(request, from: link, owner: &updateOwner, now: now) {
            step.replies = [ApplicationFirmware.reply(to: request, .busy)]
            return step
        }
        let before = settings
        switch state {
        case .off:
            break
        case .application:
            handleInApplication(request, now: now, step: &step)
        case .bootloader:
            let outcome = handleInBootloader(request, now: now, step: &step)
            if step.powerCut {
                powerOff()
            } else {
                step.replies = [ApplicationFirmware.reply(to: request, outcome)]
            }
        }
        step.settingsChanged = settings != before
        return step
    }

    private mutating func handleInApplication(_ request: Packet, now: ContinuousClock.Instant, step: inout Step) {
        guard var app = application else { return }
        if let outcome = factoryOutcome(request, inBootloader: false, step: &step) {
            step.replies = [ApplicationFirmware.reply(to: request, outcome)]
            return
        }
        step.replies = app.handle(request)
        settings = app.state
        if app.jumpToBootloaderRequested {
            random = app.random
            drainElapsed = app.drainElapsed
            enterBootloader(authenticated: app.isAuthenticated, now: now)
        } else {
            application = app
        }
    }

    /// A host link closed: an update it owned is free to be taken over (e.g. by the same host reconnecting).
    mutating func linkClosed(_ link: UInt64) {
        if updateOwner?.link == link { updateOwner = nil }
    }

    // MARK: - Device events

    /// A device-side event (button, battery): applied to the running application (whose pushes are returned), or —
    /// when `applicationOnly` is false — to the settings while the application is not running (no pushes).
    mutating func deviceEvent(applicationOnly: Bool, _ body: (inout ApplicationFirmware) -> [Packet]) -> (pushes: [Packet], changed: Bool) {
        let before = settings
        if state == .application, var app = application {
            let pushes = body(&app)
            settings = app.state
            application = app
            return (pushes, settings != before)
        }
        guard !applicationOnly else { return ([], false) }
        var fw = ApplicationFirmware(state: settings, drainInterval: config.drainInterval)
        fw.drainElapsed = drainElapsed
        _ = body(&fw)
        settings = fw.state
        drainElapsed = fw.drainElapsed
        return ([], settings != before)
    }

    // MARK: - Resets

    /// Resets into the bootloader (JumpToBootloader): RAM is lost except authentication.
    mutating func enterBootloader(authenticated: Bool, now: ContinuousClock.Instant) {
        settings = settings.poweredOn()
        application = nil
        bootloader = Bootloader(isAuthenticated: authenticated)
        state = .bootloader
        readyAt = now + config.timing.readyDelay
    }

    /// Starts `committed`: the settings adopt its manifest; a fresh (unauthenticated) application runs.
    mutating func startApplication(_ committed: CommittedApplication, now: ContinuousClock.Instant, delayed: Bool) {
        var s = settings
        s.adopt(committed.manifest, imageVersion: committed.version, index: config.index)
        var app = ApplicationFirmware(state: s, drainInterval: config.drainInterval)
        app.random = random
        app.drainElapsed = drainElapsed
        var files: [UInt32: String] = [0: s.identity.bootVersion]
        if let resource = resourceVersion() { files[FlashRegion.resource.versionFileAddress] = resource.versionFileText }
        app.versionFiles = files
        settings = s
        application = app
        bootloader = Bootloader()
        updateOwner = nil
        state = .application
        readyAt = delayed ? now + config.timing.readyDelay : now
    }

    // MARK: - Flash inspection

    /// The committed application when it is bootable, and the read time the check took (zero when cached).
    mutating func evaluateCommitted() -> (application: CommittedApplication?, busy: Duration) {
        if let cached = committedCache { return (cached, .zero) }
        var busy = Duration.zero
        let result: CommittedApplication? = {
            guard let entry = CommitLog.latest(in: flash) else { return nil }
            let record = entry.record
            guard record.sectors >= 1, Int(record.sectors) <= FlashMap.sectorCount(of: .application) else { return nil }
            let range = FlashMap.application.lowerBound..<(FlashMap.application.lowerBound + Int(record.sectors) * FlashMap.sectorSize)
            let (crc, t) = flash.crc(of: range)
            busy += t
            guard crc == record.crc else { return nil }
            let bytes = flash[range]
            if let key = config.secureBootKey, !Self.isSigned(bytes, by: key) { return nil }
            return CommittedApplication(record: record, manifest: AppManifest.find(in: Array(bytes)))
        }()
        committedCache = .some(result)
        return (result, busy)
    }

    /// Forgets the evaluation of the committed application (the application region or the log changed).
    mutating func invalidateCommitted() { committedCache = nil }

    /// The MCUboot version of the image at the start of the resource region, if there is one.
    func resourceVersion() -> ImageVersion? {
        MCUbootLayout(flash[FlashMap.resource])?.version
    }

    /// Whether `bytes` start with an MCUboot image that verifies with `key` (hash and Ed25519 signature).
    static func isSigned(_ bytes: ArraySlice<UInt8>, by key: VerificationKey) -> Bool {
        guard let layout = MCUbootLayout(bytes),
              let image = try? MCUbootImage(parsing: Array(bytes.prefix(layout.totalSize))) else { return false }
        do {
            try image.verify(with: key)
            return true
        } catch {
            return false
        }
    }
}
