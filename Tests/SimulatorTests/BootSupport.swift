import Firmware
import LightX
import Testing
import Transport
@testable import HeadsetSimulator

/// Test images and helpers for the bootloader and flash tests.
enum TestImages {
    /// A manifest unlike the factory one: 1.5.0, 8 bands, three presets, 5 ambient steps, another product name.
    static let newManifest = AppManifest(
        version: "1.5.0", model: "TS-1", product: "Tuneup Sim Headset Pro",
        bandFrequencies: [60, 150, 400, 1000, 2400, 6000, 12000, 16000], minGain: -12, maxGain: 12,
        presets: [
            .init(name: "Bass", gains: [8, 6, 3, 0, 0, 0, 0, 0]),
            .init(name: "Flat", gains: [0, 0, 0, 0, 0, 0, 0, 0]),
            .init(name: "Treble", gains: [0, 0, 0, 0, 2, 5, 7, 9]),
        ],
        ambientSteps: 5)

    /// `manifest` with another version.
    static func manifest(version: String, _ base: AppManifest = newManifest) -> AppManifest {
        var m = base
        m.version = version
        return m
    }

    /// A signed MCUboot application image carrying `manifest` in a payload of `size` bytes.
    static func signed(_ manifest: AppManifest = newManifest, size: Int = 6000, key: SigningKey? = DevelopmentKeys.testOnlySigningKey,
                       version: ImageVersion? = nil) -> [UInt8] {
        let v = version ?? ImageVersion(parsing: manifest.version) ?? ImageVersion(major: 0, minor: 0, revision: 0)
        return MCUbootImage.sign(payload: AppManifest.buildPayload(manifest, size: size, seed: 42), version: v, model: "TS-1",
                                 region: .application, key: key).bytes
    }

    /// The sector count and CRC-32/JAMCRC the updater sends for `image`: the image padded with 0xFF (erased flash) to
    /// whole sectors.
    static func sectorsAndCRC(_ image: [UInt8]) -> (sectors: UInt32, crc: UInt32) {
        let sectors = FlashRegion.sectorCount(forLength: image.count)
        let padded = image + [UInt8](repeating: 0xFF, count: sectors * FlashRegion.sectorSize - image.count)
        return (UInt32(sectors), CRC32JAMCRC.checksum(padded))
    }

    /// The requests of a full update of `image` into `region`: addressed erases, 256-byte writes, verify, and (for the
    /// application) commit and jump.
    static func updateRequests(_ image: [UInt8], region: FlashRegion = .application, commit: Bool = true) throws -> [Packet] {
        let (sectors, crc) = sectorsAndCRC(image)
        var requests: [Packet] = []
        for k in 0..<sectors {
            requests.append(try BootRequests.eraseSector(region, index: k, addressed: true))
        }
        for offset in stride(from: 0, to: image.count, by: 256) {
            let chunk = Array(image[offset..<min(image.count, offset + 256)])
            requests.append(try BootRequests.writeBlock(region, offset: UInt32(offset), data: chunk))
        }
        requests.append(try BootRequests.verifyCRC(region, sectors: sectors, crc: crc))
        if commit && region == .application {
            requests.append(try BootRequests.commit(sectors: sectors))
            requests.append(BootRequests.jumpToApplication())
        }
        return requests
    }
}

extension DeviceMachine {
    /// A powered device on the factory (or given) flash with instant timing, in the application.
    static func testDevice(flash: [UInt8]? = nil, settings: HeadsetState = .factory(), secureBootKey: VerificationKey? = nil,
                           timing: DeviceTiming = .instant, faults: FlashFaults = .none, queueDepth: Int = 32,
                           now: ContinuousClock.Instant = .now) -> DeviceMachine {
        let config = DeviceConfiguration(index: 0, timing: timing, secureBootKey: secureBootKey, queueDepth: queueDepth,
                                         drainInterval: .zero)
        var m = DeviceMachine(config: config, flash: flash, settings: settings, randomSeed: 77, faults: faults, now: now)
        m.powerOn(now: now, delayed: false)
        return m
    }

    /// Handles `request` now, expecting exactly one reply.
    mutating func reply(_ request: Packet, at now: ContinuousClock.Instant = .now,
                        sourceLocation: SourceLocation = #_sourceLocation) -> Packet {
        let step = handle(request, now: now)
        #expect(step.replies.count == 1, "expected one reply to \(request.command), got \(step.replies.count)", sourceLocation: sourceLocation)
        return step.replies.first ?? (try! Packet.reply(to: request, status: .commFailure))
    }

    /// The status of the reply to `request`.
    mutating func status(_ request: Packet, at now: ContinuousClock.Instant = .now,
                         sourceLocation: SourceLocation = #_sourceLocation) -> Status {
        reply(request, at: now, sourceLocation: sourceLocation).status
    }

    /// Runs the challenge-response handshake with whatever image runs.
    mutating func authenticate(at now: ContinuousClock.Instant = .now, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let challenge = reply(BootRequests.authChallenge(), at: now)
        let response = try BootRequests.authResponse(Authentication.response(to: challenge.buffer))
        #expect(reply(response, at: now).status == .ok, sourceLocation: sourceLocation)
    }

    /// Authenticates in the application and jumps to the (instantly ready) bootloader.
    mutating func enterBootloaderForTest(at now: ContinuousClock.Instant = .now) throws {
        try authenticate(at: now)
        #expect(status(BootRequests.jumpToBootloader(), at: now) == .ok)
        #expect(state == .bootloader)
    }

    /// Sends every request, expecting Ok for each; returns the statuses.
    @discardableResult
    mutating func run(_ requests: [Packet], at now: ContinuousClock.Instant = .now,
                      sourceLocation: SourceLocation = #_sourceLocation) -> [Status] {
        requests.map { request in
            let s = status(request, at: now)
            #expect(s == .ok, "\(request.command) at 0x\(String(request.address, radix: 16)): \(s)", sourceLocation: sourceLocation)
            return s
        }
    }
}

extension TestHost {
    /// Authenticates over the link.
    mutating func authenticate(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let challenge = try await request(BootRequests.authChallenge())
        let response = try BootRequests.authResponse(Authentication.response(to: challenge.buffer))
        #expect(try await request(response).status == .ok, sourceLocation: sourceLocation)
    }

    /// Polls BootImageType until it is answered (not NotReady); returns whether the bootloader runs. The timeout is a
    /// hang guard (readiness delays in tests are at most a few seconds; a loaded machine adds to them).
    mutating func waitForImageType(timeout: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let reply = try await request(BootRequests.imageType())
            if reply.status == .ok { return try BootRequests.isBootloader(imageTypeReply: reply.buffer) }
            #expect(reply.status == .notReady)
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestFailure("the device stayed NotReady for \(timeout)")
    }
}

/// The factory settings with the 0x87 reply decoded.
func firmwareVersion(_ reply: Packet) throws -> FirmwareVersion {
    try AppSettings.firmwareVersion.decode(reply.buffer)
}
