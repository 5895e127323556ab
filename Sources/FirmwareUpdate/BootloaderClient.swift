import Firmware
import Foundation
import Headset
import LightX
import Logging
import Transport

/// Bootloader operations on one device, surviving the resets they cause: the device may drop the link or
/// re-enumerate when it jumps between application and bootloader, and is not ready for a while after each jump.
///
/// Used by `FirmwareUpdater` and by the `tuneup bootloader` and `tuneup firmware` commands.
public final class BootloaderClient: Sendable {
    /// What the device reports about its firmware.
    public struct Status: Sendable, Hashable, Codable {
        /// "bootloader" or "application".
        public var mode: String
        public var authenticated: Bool?
        public var bootloaderVersion: String?
        public var applicationVersion: String?
        public var resourceVersion: String?
        /// Tuneup bootloader extension: erases with distinct addresses.
        public var addressedErase: Bool?
        /// Tuneup bootloader extension: requests the bootloader queues (how many may be in flight).
        public var queueDepth: Int?
        /// Tuneup bootloader extension, secure boot: the SHA-256 (hex) of the key images must be signed with.
        public var secureBootKeyHash: String?
        /// Tuneup bootloader extension, secure boot: the lowest version the device commits.
        public var rollbackFloor: String?
    }

    let link: DeviceLink
    let readyWait: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - wait: how long to wait for the device to become ready, and to come back after a lost link.
    ///   - clock: the clock of every wait, timeout and pause (tests pass a `ManualClock`).
    ///   - connect: opens a link to the device; called again to reconnect.
    public init(sessionOptions: LightXSession.Options = .init(), wait: Duration = .seconds(30),
                clock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "tuneup.bootloader"), connect: @escaping @Sendable () async throws -> any Transport) {
        link = DeviceLink(connect: connect, sessionOptions: sessionOptions, reconnectWait: wait, clock: clock, logger: logger)
        readyWait = wait
        self.logger = logger
    }

    /// Closes the link.
    public func close() async { await link.close() }

    /// Whether the device runs its bootloader (waiting while it is not ready).
    public func isInBootloader() async throws -> Bool {
        try await link.imageType(wait: readyWait)
    }

    /// Mode, authentication, versions and capabilities. Versions the device does not report are nil.
    public func status() async throws -> Status {
        let inBootloader = try await isInBootloader()
        return try await link.retrying { headset in
            var status = Status(mode: inBootloader ? "bootloader" : "application")
            let bootloader = headset.bootloader
            status.authenticated = try await bootloader.isAuthenticated()
            if inBootloader {
                status.bootloaderVersion = try await bootloader.versionFile(at: 0)
                status.applicationVersion = try await bootloader.versionFile(of: .application)
                status.resourceVersion = try await bootloader.versionFile(of: .resource)
                if let capabilities = try await bootloader.capabilities() {
                    status.addressedErase = capabilities.addressedErase
                    status.queueDepth = capabilities.queueDepth
                    status.secureBootKeyHash = capabilities.secureBoot.map { Hex.string($0.keyHash) }
                    status.rollbackFloor = capabilities.secureBoot.map { ImageVersion(packed: $0.rollbackFloor).description }
                }
            } else {
                status.applicationVersion = try await headset.readIfSupported(AppSettings.firmwareVersion)?.description
            }
            return status
        }
    }

    /// Authenticates and jumps to the bootloader (if not there already), then waits until it is ready.
    public func enter() async throws {
        guard try await !isInBootloader() else { return }
        try await authenticate()
        try await jumpToBootloader()
    }

    /// Jumps to the application and waits until it runs. Throws `.bootFailed` when the device has no valid
    /// application to start.
    public func leave() async throws {
        guard try await isInBootloader() else { return }
        let headset = try await link.device()
        try await ensureAuthenticated(headset)
        try await startApplication()
    }

    /// Reads `length` bytes of a region from offset `start` (the bootloader must be running: see `enter()`), several
    /// requests in flight when the bootloader queues them. `progress` gets the bytes read so far.
    public func read(_ region: FlashRegion, from start: Int = 0, length: Int,
                     progress: @Sendable (Int) -> Void = { _ in }) async throws -> [UInt8] {
        guard start >= 0, length >= 0, start + length <= region.maxSize else {
            throw UpdateError(.deviceRefused, "the \(region.rawValue) region holds \(region.maxSize) bytes; cannot read \(length) from \(start)")
        }
        guard length > 0 else { return [] }
        // Kept across reconnects: a resume reads only the blocks not read yet.
        var machine: TransferMachine?
        while true {
            do {
                let bootloader = try await link.device().bootloader
                if machine == nil {
                    let depth = max(1, try await bootloader.capabilities()?.queueDepth ?? 1)
                    machine = TransferMachine(readBack: region, from: start, length: length,
                                              window: WindowControl(fixed: depth, limit: depth, maxTimeout: link.sessionOptions.timeout))
                }
                machine?.resume()
                try await TransferPipeline.run(&machine!, on: bootloader) { progress($0.readPrefix) }
                if let machine, machine.isComplete { return machine.readBytes }
            } catch let error as HeadsetError where error.category == .connection {
                let next = machine?.readPrefix ?? 0
                logger.info("link lost while reading (\(error.message)); resuming at 0x\(String(start + next, radix: 16))")
                machine?.linkLost()
                await link.drop(because: error.message)
            }
        }
    }

    /// The length of the MCUboot image at the start of `region` (header, payload and both TLV areas), or nil when
    /// the region does not start with one: 36 bytes are read (the header, and the TLV info after the protected
    /// TLVs). The bootloader must be running.
    public func imageLength(in region: FlashRegion) async throws -> Int? {
        let header = try await read(region, length: 32)
        func u16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
        func u32(_ b: [UInt8], _ i: Int) -> Int { u16(b, i) | u16(b, i + 2) << 16 }
        guard UInt32(u32(header, 0)) == MCUbootImage.magic else { return nil }
        // Header: magic, load address, u16 header size, u16 protected-TLV size, u32 payload size.
        let trailer = u16(header, 8) + u32(header, 12) + u16(header, 10)
        guard trailer + 4 <= region.maxSize else { return nil }
        let info = try await read(region, from: trailer, length: 4)
        // Unprotected TLV info: u16 magic 0x6907, u16 total length (info included).
        guard u16(info, 0) == 0x6907 else { return nil }
        return min(region.maxSize, trailer + u16(info, 2))
    }

    /// Runs `step` on the device in whichever mode it runs (reads that work in both), reopening the link and
    /// running it again when the link drops under it: `step` must be idempotent.
    public func onDevice<T: Sendable>(_ step: @Sendable (Headset) async throws -> T) async throws -> T {
        try await link.retrying(step)
    }

    /// Runs `step` on the bootloader, ready and authenticated (the caller entered it with `enter()`); a device
    /// that came back in its application (power cycle) is taken to its bootloader again. `step` must be idempotent.
    public func inBootloader<T: Sendable>(_ step: @Sendable (Headset) async throws -> T) async throws -> T {
        _ = try await readyBootloader()
        return try await link.retrying { headset in
            try await ensureAuthenticated(headset)
            return try await step(headset)
        }
    }

    // MARK: Steps shared with the updater

    func authenticate() async throws {
        try await link.retrying { headset in
            if try await !self.authenticate(headset) { self.logger.info("the device does not ask for authentication") }
        }
    }

    /// Authenticates again if the device forgot (after a power cycle).
    func ensureAuthenticated(_ headset: Headset) async throws {
        if try await headset.bootloader.isAuthenticated() == true { return }
        _ = try await authenticate(headset)
    }

    /// Authenticates on `headset`; false when the device does not ask for authentication. Throws
    /// `.authenticationFailed` when it refuses, `.deviceBusy` when another host's update owns it.
    private func authenticate(_ headset: Headset) async throws -> Bool {
        do {
            try await headset.authenticate()
            return true
        } catch let error as HeadsetError where error.code == .deviceNotSupported && error.command == .bootAuthChallenge {
            return false
        } catch let error as HeadsetError where error.reason == .busy {
            throw UpdateError.busy
        } catch let error as HeadsetError where error.category == .device {
            throw UpdateError(.authenticationFailed, error.message)
        }
    }

    /// Shuts the application down and jumps to the bootloader, then waits until it is ready.
    func jumpToBootloader() async throws {
        try await switchMode(toBootloader: true) { headset in
            // AppShutdown is a courtesy; some devices answer NotSupported.
            try await headset.bootloader.shutDownApplication()
            let answer = try await headset.bootloader.jumpToBootloader()
            if answer.isBusy { throw UpdateError.busy }
            if answer.status != .ok && answer.status != .notReady {
                throw UpdateError(.deviceRefused, "the device refuses to enter its bootloader (\(answer.status))")
            }
        }
    }

    /// The link to a ready, authenticated bootloader; re-enters it if the device came back in its application.
    func readyBootloader() async throws -> Headset {
        if try await link.imageType(wait: readyWait) == false {
            try await authenticate()
            try await jumpToBootloader()
        }
        let headset = try await link.device()
        try await ensureAuthenticated(headset)
        return headset
    }

    /// Jumps to the application and waits until it runs.
    func startApplication() async throws {
        do {
            try await switchMode(toBootloader: false) { headset in
                let answer = try await headset.bootloader.jumpToApplication()
                if answer.isBusy { throw UpdateError.busy }
                if answer.status != .ok && answer.status != .notReady {
                    throw UpdateError(.bootFailed, "the bootloader refuses to start the application (\(answer.status)): no valid committed image")
                }
            }
        } catch let error as UpdateError where error.code == .notReady {
            throw UpdateError(.bootFailed, "the device did not start its application: \(error.message)")
        }
    }

    /// Sends a jump and waits for the device to come up in the other mode. A device that answers in its old mode
    /// once ready never got the jump (lost on the link), so it is sent again, up to five times. A jump that times
    /// out is not an error: the device may reset before it answers.
    private func switchMode(toBootloader wanted: Bool, jump: @Sendable (Headset) async throws -> Void) async throws {
        let deadline = await link.now() + readyWait
        for attempt in 1...5 {
            try await link.retrying { headset in
                do {
                    try await jump(headset)
                } catch let error as HeadsetError where error.code == .timeout {
                    // It may have reset before answering: the mode tells.
                }
            }
            let mode = try await link.imageType(wait: max(.zero, deadline - (await link.now())))
            if mode == wanted { return }
            logger.debug("the device is still in its \(mode ? "bootloader" : "application") after jump \(attempt); jumping again")
        }
        let target = wanted ? "bootloader" : "application"
        throw UpdateError(.notReady, "the device did not switch to its \(target) after 5 jumps")
    }
}
