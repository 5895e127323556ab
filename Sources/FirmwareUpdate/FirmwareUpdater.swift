import Firmware
import Headset
import LightX
import Logging
import Transport

/// How an update runs.
public struct UpdateOptions: Sendable {
    /// Requests in flight during the transfer: nil adapts between 1 and the device's queue depth; 1 is the
    /// vendor's one-request-at-a-time behaviour (erase everything, then write).
    public var window: Int?
    /// Upper bound of the adaptive window.
    public var maxWindow: Int
    /// Allow an image older than the installed firmware.
    public var allowDowngrade: Bool
    /// When set, only images signed by this key are flashed.
    public var verificationKey: VerificationKey?
    /// Upper bound of the per-request timeout (the transfer adapts below it to the measured latency).
    public var requestTimeout: Duration
    /// How long to wait for the bootloader or the application to become ready after a jump or a power cycle.
    public var readyWait: Duration
    /// How long to keep trying to reopen a lost link before giving up.
    public var reconnectWait: Duration
    /// Skip the sectors the device verifiably holds already (CRC-checked), e.g. after an interrupted update.
    public var resume: Bool
    /// How many verify-and-repair rounds are allowed after the transfer.
    public var maxRepairs: Int
    /// Flash an application image even when the device already runs its version (otherwise nothing is done).
    public var force: Bool

    public init(window: Int? = nil, maxWindow: Int = 64, allowDowngrade: Bool = false, verificationKey: VerificationKey? = nil,
                requestTimeout: Duration = .seconds(2), readyWait: Duration = .seconds(30), reconnectWait: Duration = .seconds(30),
                resume: Bool = true, maxRepairs: Int = 3, force: Bool = false) {
        self.force = force
        self.window = window
        self.maxWindow = maxWindow
        self.allowDowngrade = allowDowngrade
        self.verificationKey = verificationKey
        self.requestTimeout = requestTimeout
        self.readyWait = readyWait
        self.reconnectWait = reconnectWait
        self.resume = resume
        self.maxRepairs = maxRepairs
    }
}

/// What an update did.
public struct UpdateResult: Sendable, Hashable, Codable {
    public var image: String
    public var region: FlashRegion
    public var previousVersion: String?
    public var newVersion: String?
    /// Image size in bytes.
    public var imageBytes: Int
    /// Sectors the image spans.
    public var sectors: Int
    /// Sectors found already correct on the device and not rewritten: the most any (re)start of the transfer
    /// found in place, e.g. after a restarted tool or a power cut.
    public var skippedSectors: Int
    /// Bytes the device acknowledged programming in this run, over every connection (excluding blocks that are all
    /// 0xFF, which an erase leaves as they are).
    public var bytesWritten: Int
    public var seconds: Double
    public var transferSeconds: Double
    public var bytesPerSecond: Double
    /// The most requests in flight at once.
    public var maxWindow: Int
    /// Requests sent again after a loss or a NotReady.
    public var resent: Int
    /// Sectors erased and written again after a failure.
    public var redoneSectors: Int
    /// Times the link was reopened.
    public var reconnects: Int
    /// The device already ran the image's version: nothing was written, committed or restarted.
    public var alreadyInstalled: Bool = false
}

/// Updates a headset's firmware over any transport, from start to confirmation.
///
/// The sequence: check the image (size, signature, model, version) before touching the device; identify;
/// authenticate; shut the application down and jump to the bootloader, polling until it is ready; find what the
/// device already holds (CRC of sector prefixes) and erase and write the rest, pipelined; verify the CRC and
/// repair; commit; jump to the application and confirm its version. A lost link or a power cut is survived by
/// reconnecting and resuming from what the device verifiably holds. Every failing status is an error; nothing is
/// ever reported as success without the device confirming it.
///
/// Progress events arrive on `progress` (any number of consumers), which finishes when `run()` returns.
public final class FirmwareUpdater: Sendable {
    public let image: FirmwareImage
    public let options: UpdateOptions
    /// Progress of the update, for any number of consumers: each access is a new subscription that starts with the
    /// events sent so far (the newest 1024) and ends when `run()` returns or throws.
    public var progress: AsyncStream<UpdateProgress> { reporter.subscribe() }

    private let reporter: ProgressReporter
    private let connect: @Sendable () async throws -> any Transport
    private let sessionOptions: LightXSession.Options
    private let logger: Logger
    private let clock: any Clock<Duration>

    /// - Parameters:
    ///   - clock: the clock of every wait, timeout, pause and stall limit (tests pass a `ManualClock`); the
    ///     result's durations and rates are measured on the real clock whatever it is.
    ///   - connect: opens a link to the device; called again to reconnect.
    public init(image: FirmwareImage, options: UpdateOptions = .init(), sessionOptions: LightXSession.Options = .init(),
                clock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "tuneup.update"), connect: @escaping @Sendable () async throws -> any Transport) {
        self.image = image
        self.options = options
        self.sessionOptions = sessionOptions
        self.clock = clock
        self.logger = logger
        self.connect = connect
        reporter = ProgressReporter()
    }

    /// Runs the update. Throws `UpdateError` (refusals, device errors) or `HeadsetError`.
    public func run() async throws -> UpdateResult {
        var succeeded = false
        defer { reporter.finish(done: succeeded) }
        let start = ContinuousClock.now
        try checkImage()

        reporter.phase(.connect, message: "connecting")
        let device = BootloaderClient(sessionOptions: sessionOptions, wait: options.readyWait, clock: clock, logger: logger, connect: connect)
        await device.link.observeReconnects { [reporter] attempt in reporter.phase(.reconnect, message: attempt.message) }
        do {
            let result = try await update(device, start: start)
            await device.close()
            succeeded = true
            return result
        } catch {
            await device.close()
            throw error
        }
    }

    // MARK: Steps

    private func update(_ device: BootloaderClient, start: ContinuousClock.Instant) async throws -> UpdateResult {
        let link = device.link
        let region = image.region
        let inBootloader = try await device.isInBootloader()
        let previous = try await installedVersion(device, inBootloader: inBootloader)
        try await checkCompatibility(link, installed: previous)
        if region == .application, !inBootloader, !options.force, let previous, let version = image.version,
           release(version) == release(previous) {
            logger.info("the device already runs \(previous); nothing to do")
            let sectors = FlashRegion.sectorCount(forLength: image.bytes.count)
            return UpdateResult(
                image: image.name, region: region, previousVersion: previous.description, newVersion: previous.description,
                imageBytes: image.bytes.count, sectors: sectors, skippedSectors: sectors, bytesWritten: 0,
                seconds: (ContinuousClock.now - start).seconds, transferSeconds: 0, bytesPerSecond: 0, maxWindow: 0,
                resent: 0, redoneSectors: 0, reconnects: 0, alreadyInstalled: true)
        }

        reporter.phase(.authenticate, message: "authenticating")
        try await device.authenticate()
        if !inBootloader {
            reporter.phase(.enterBootloader, message: "entering the bootloader")
            try await device.jumpToBootloader()
        }

        // Transfer, verify and repair, resuming after lost links and power cuts with what this run wrote.
        let plan = TransferPlan(region: region, image: image.bytes, from: 0)
        let sectors = plan.sectorCount
        var skipped = 0
        var transferSeconds = 0.0
        var repairs = 0
        var mismatch = false
        var stalls = StallGuard(wait: options.reconnectWait, now: await link.now())
        // Created on the first link (its window follows the device's queue depth) and kept across reconnects: what
        // the device acknowledged, and a window that a link dropping with requests in flight leaves smaller, so that
        // some of them are acknowledged before it drops again.
        var machine: TransferMachine?
        while true {
            do {
                let headset = try await device.readyBootloader()
                let bootloader = headset.bootloader
                let capabilities = try await bootloader.capabilities()
                if let refusal = refusal(by: capabilities?.secureBoot) {
                    // Nothing is erased yet: leave the device running the application it ran.
                    if !inBootloader { await returnToApplication(device) }
                    throw refusal
                }
                let first = options.resume ? try await verifiedPrefix(bootloader, plan: plan) : 0
                skipped = max(skipped, first)
                if machine == nil {
                    let limit = min(options.maxWindow, capabilities?.queueDepth ?? 1)
                    machine = TransferMachine(
                        program: plan, addressedErase: capabilities?.addressedErase ?? false, eraseFirst: options.window == 1,
                        window: WindowControl(fixed: options.window ?? (capabilities == nil ? 1 : nil),
                                              limit: options.window ?? limit, maxTimeout: options.requestTimeout))
                }
                // What was remembered from the first bad sector on after a mismatch is wrong: redone from the erase.
                machine?.resume(verifiedPrefix: first, afterMismatch: mismatch)
                mismatch = false
                if machine?.isComplete == false {
                    reporter.beginTransfer(machine!)
                    let t0 = ContinuousClock.now
                    defer { transferSeconds += (ContinuousClock.now - t0).seconds }
                    try await TransferPipeline.run(&machine!, on: bootloader) { [reporter] in reporter.transfer($0) }
                }
                reporter.phase(.verify, message: "verifying the CRC")
                if try await verifies(bootloader, plan: plan, sectors: sectors) { break }
                repairs += 1
                guard repairs <= options.maxRepairs else {
                    throw UpdateError(.verifyFailed, "the \(region.rawValue) region's CRC does not match after \(options.maxRepairs) repairs")
                }
                mismatch = true
                logger.warning("CRC mismatch after the transfer; repairing from the first bad sector")
            } catch let error as HeadsetError where error.category == .connection {
                logger.info("link lost during the update (\(error.message)); reconnecting to resume")
                await link.drop(because: error.message)
                machine?.linkLost()
                try stalls.lost(error.message, progress: machine?.state.acknowledgements ?? 0, now: await link.now())
            } catch let error as UpdateError where error.code == .deviceBusy && machine != nil {
                // This host owned the update before its link dropped: a device that has not yet seen the old link go
                // still counts it as the owner, so the "other host" is this one. Treated as a lost link, bounded by
                // the stall guard (a device that really is another host's ends the update with `disconnected`).
                logger.info("the device still counts this host's old link as the update's owner; reconnecting")
                await link.drop(because: error.message)
                machine?.linkLost()
                try stalls.lost(error.message, progress: machine?.state.acknowledgements ?? 0, now: await link.now())
            }
        }
        let state = machine?.state ?? TransferState()

        if region == .application {
            reporter.phase(.commit, message: "committing")
            try await commit(device, sectors: sectors)
        }
        reporter.phase(.reboot, message: "starting the new firmware")
        try await device.startApplication()
        reporter.phase(.confirm, message: "confirming the version")
        let newVersion = try await confirm(link)
        let seconds = (ContinuousClock.now - start).seconds
        return UpdateResult(
            image: image.name, region: region, previousVersion: previous?.description, newVersion: newVersion,
            imageBytes: image.bytes.count, sectors: sectors, skippedSectors: skipped, bytesWritten: state.bytesAcknowledged,
            seconds: seconds, transferSeconds: transferSeconds,
            bytesPerSecond: transferSeconds > 0 ? Double(state.bytesAcknowledged) / transferSeconds : 0,
            maxWindow: state.statistics.maxWindow, resent: state.statistics.resent + (await link.retransmissions),
            redoneSectors: state.statistics.redoneSectors, reconnects: await link.reconnects)
    }

    /// Refusals that need no device: signature, hash, size.
    private func checkImage() throws {
        if image.bytes.count > image.region.maxSize {
            throw UpdateError(.tooLarge, "\(image.name) has \(image.bytes.count) bytes; the \(image.region.rawValue) region holds \(image.region.maxSize)")
        }
        if image.mcuboot != nil {
            do {
                try image.verify(with: options.verificationKey)
            } catch {
                throw UpdateError.image(error)
            }
        } else if options.verificationKey != nil {
            throw UpdateError(.unsigned, "\(image.name) is not a signed image, and a verification key is configured")
        }
    }

    /// Refusals that need to read the device: model, version.
    private func checkCompatibility(_ link: DeviceLink, installed: FirmwareVersion?) async throws {
        let deviceModel = try await link.retrying { try await $0.readIfSupported(ConfigStrings.identity[2]) }
        if let wanted = image.model, let deviceModel, !deviceModel.isEmpty, wanted != deviceModel {
            throw UpdateError(.wrongModel, "\(image.name) is for model \(wanted); the device is a \(deviceModel)")
        }
        if image.region == .application, let installed, let version = image.version, !options.allowDowngrade {
            let new = release(version)
            let old = release(installed)
            if new < old {
                throw UpdateError(.downgrade, "\(image.name) is version \(version), older than the installed \(installed); use --allow-downgrade to install it anyway")
            }
        }
    }

    /// Why a secure-boot device would refuse to commit the image (read from its capabilities), if it would: not
    /// signed (or raw), signed by another key than the device's, or older than its rollback floor. Nil for a device
    /// that does not say (no policy in its capabilities) and for the resource region (never committed).
    private func refusal(by policy: SecureBootPolicy?) -> UpdateError? {
        guard let policy, image.region == .application else { return nil }
        let device = "the device accepts only images signed by key \(Hex.short(policy.keyHash))"
        guard let mcuboot = image.mcuboot, mcuboot.isSigned else {
            return UpdateError(.unsigned, "\(image.name) is \(image.mcuboot == nil ? "a raw image" : "not signed"); \(device) (secure boot)")
        }
        if let hash = mcuboot.keyHash, hash != policy.keyHash {
            return UpdateError(.badSignature, "\(image.name) is signed by another key (key hash \(Hex.short(hash))); \(device)")
        }
        if mcuboot.version.packed < policy.rollbackFloor {
            let floor = ImageVersion(packed: policy.rollbackFloor)
            return UpdateError(.downgrade, "\(image.name) is version \(mcuboot.version), below the device's rollback floor \(floor); "
                               + "the device refuses it, and --allow-downgrade cannot override a device's floor")
        }
        return nil
    }

    /// Jumps back to the application after a refusal in the bootloader; a failure is only logged (the refusal is
    /// what the caller reports).
    private func returnToApplication(_ device: BootloaderClient) async {
        do {
            try await device.startApplication()
        } catch {
            logger.warning("could not start the application again after the refusal: \(error)")
        }
    }

    /// The application version installed: from the application itself, or from the bootloader's version file.
    private func installedVersion(_ device: BootloaderClient, inBootloader: Bool) async throws -> FirmwareVersion? {
        try await device.link.retrying { headset in
            if !inBootloader { return try await headset.readIfSupported(AppSettings.firmwareVersion) }
            return try await headset.bootloader.versionFile(of: .application).flatMap(FirmwareVersion.init)
        }
    }

    /// The number of leading sectors whose CRC already matches the image, found by bisection with VerifyCRC.
    private func verifiedPrefix(_ bootloader: Bootloader, plan: TransferPlan) async throws -> Int {
        let total = plan.sectorCount
        if try await verifies(bootloader, plan: plan, sectors: total) { return total }
        var good = 0, bad = total
        while bad - good > 1 {
            let mid = (good + bad) / 2
            if try await verifies(bootloader, plan: plan, sectors: mid) { good = mid } else { bad = mid }
        }
        if good > 0 { logger.info("the device already holds \(good) of \(total) sectors; resuming after them") }
        return good
    }

    private func verifies(_ bootloader: Bootloader, plan: TransferPlan, sectors: Int) async throws -> Bool {
        let answer: BootAnswer
        do {
            answer = try await bootloader.verifyCRC(plan.region, sectors: sectors, crc: plan.crc(ofFirst: sectors),
                                                    timeout: max(sessionOptions.timeout, .seconds(8)))
        } catch let error as HeadsetError where error.code == .invalidArgument {
            throw UpdateError(.badImage, error.message)
        }
        if answer.isBusy { throw UpdateError.busy }
        switch answer.status {
        case .ok: return true
        case .fail: return false
        default: throw UpdateError(.deviceRefused, "the device refuses to verify the CRC (\(answer.status))")
        }
    }

    private func commit(_ device: BootloaderClient, sectors: Int) async throws {
        try await device.link.retrying { headset in
            try await device.ensureAuthenticated(headset)
            // The device only commits right after a matching verification: verify again on this link.
            guard try await self.verifies(headset.bootloader, plan: TransferPlan(region: .application, image: self.image.bytes), sectors: sectors) else {
                throw UpdateError(.verifyFailed, "the application region no longer matches the image")
            }
            let answer = try await headset.bootloader.commit(sectors: sectors, timeout: max(self.sessionOptions.timeout, .seconds(8)))
            if answer.isBusy { throw UpdateError.busy }
            guard answer.isOK else {
                throw UpdateError(.commitFailed, "the device refused to commit the image (\(answer.status))"
                                  + (self.options.verificationKey == nil ? "; it may require a signed image or refuse a downgrade" : ""))
            }
        }
    }

    /// Reads the running version and checks it against the image's.
    private func confirm(_ link: DeviceLink) async throws -> String? {
        guard image.region == .application else { return image.version?.description }
        let running = try await link.retrying { try await $0.readIfSupported(AppSettings.firmwareVersion) }
        guard let running else { return nil }
        if let expected = image.version,
           release(expected) != release(running) {
            throw UpdateError(.versionMismatch, "the device runs \(running) after the update; the image is \(expected)")
        }
        return running.description
    }
}

/// Ends an update whose link keeps dropping without the transfer getting anywhere: after `limit` reopened links in a
/// row that were lost again before the device acknowledged anything, or when nothing moved for the reconnect wait.
struct StallGuard {
    static let limit = 5
    let wait: Duration
    private var streak = 0
    private var mark = 0
    /// When the transfer last got somewhere, on the link's clock.
    private var lastProgress: Duration

    init(wait: Duration, now: Duration) {
        self.wait = wait
        lastProgress = now
    }

    /// The link was lost (`error`: why, one line) at `now` (the link's clock) with `progress` acknowledgements so far. Throws
    /// `.disconnected` to stop.
    mutating func lost(_ error: String, progress: Int, now: Duration) throws {
        if progress > mark {
            // This link got somewhere.
            mark = progress
            streak = 0
            lastProgress = now
            return
        }
        streak += 1
        if streak >= Self.limit {
            throw UpdateError(.disconnected, "the link keeps dropping: \(streak) reconnects in a row without progress (last: \(error))")
        }
        if now - lastProgress >= wait {
            throw UpdateError(.disconnected, "the link keeps dropping: no progress within \(wait.shortDescription) (last: \(error))")
        }
    }
}

/// major.minor.revision of an image's or a device's version, for comparing the two (build numbers aside).
private func release(_ v: ImageVersion) -> (Int, Int, Int) { (Int(v.major), Int(v.minor), Int(v.revision)) }
private func release(_ v: FirmwareVersion) -> (Int, Int, Int) { (Int(v.major), Int(v.minor), Int(v.revision)) }
