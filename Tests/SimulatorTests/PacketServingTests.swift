import Firmware
import LightX
import Testing
import Transport
@testable import HeadsetSimulator

/// A host on a packet link (USB HID): one raw LightX packet per message, requests in the USB style.
/// Default timeouts are long: they are for packets that must come (see `TestHost`).
struct PacketHost: SimulatorHost {
    let transport: any Transport
    var pushes: [Packet] = []

    init(_ transport: any Transport) { self.transport = transport }

    /// `packet` restyled as the USB host sends it: source 0x08, type Nonblocking.
    static func usb(_ packet: Packet) -> Packet {
        var p = packet
        p.header.source = .usb
        p.header.statusByte = (p.header.statusByte & 0x3F) | PacketType.nonblocking.rawValue
        return p
    }

    func send(_ packet: Packet) async throws {
        try await transport.send(RawPacketCodec.encode(Self.usb(packet)))
    }

    /// The next message, decoded; nil after `timeout` or when the link closed.
    func next(timeout: Duration = .seconds(30)) async throws -> Packet? {
        guard let message = try await TestHost.receive(transport, timeout: timeout) else { return nil }
        return try RawPacketCodec.decode(message)
    }

    /// Sends `request` and returns its reply, checking the USB reply rules: the request's modules echoed (source
    /// 0x08, destination 0x40), same opcode, command and address, type Result.
    mutating func request(_ request: Packet, timeout: Duration = .seconds(30),
                          sourceLocation: SourceLocation = #_sourceLocation) async throws -> Packet {
        let reply = try await self.reply(to: request, timeout: timeout)
        #expect(reply.header.source == .usb && reply.header.destination == request.header.destination,
                "modules echoed", sourceLocation: sourceLocation)
        #expect(reply.header.param0 == request.header.param0 && reply.opcode == request.opcode, sourceLocation: sourceLocation)
        #expect(reply.header.type == .result, sourceLocation: sourceLocation)
        #expect(reply.header.param1 == UInt32(reply.buffer.count), sourceLocation: sourceLocation)
        return reply
    }

    mutating func authenticate(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let challenge = try await request(BootRequests.authChallenge())
        #expect(challenge.status == .ok && challenge.buffer.count == Authentication.challengeLength, sourceLocation: sourceLocation)
        let response = try BootRequests.authResponse(Authentication.response(to: challenge.buffer))
        #expect(try await request(response).status == .ok, sourceLocation: sourceLocation)
    }
}

@Suite struct PacketServingTests {
    static let instant = SimulatorOptions(drainInterval: .zero, timeScale: 0)

    func serve(_ device: SimulatedHeadset) -> PacketHost {
        let (host, deviceEnd) = InMemoryTransport.pair(framing: .packets)
        Task { await device.serve(deviceEnd) }
        return PacketHost(host)
    }

    /// Every class of application request, over raw packets.
    @Test func answersEveryApplicationRequestClass() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: Self.instant)
            var host = serve(device)
            // App read (with the default 256-byte zero buffer) and write.
            let battery = try await host.request(AppSettings.batteryLevel.readRequest())
            #expect(battery.status == .ok)
            #expect(try AppSettings.batteryLevel.decode(battery.buffer) == 100)
            let write = try await host.request(try AppSettings.ancEnabled.writeRequest(false))
            #expect(write.status == .ok && write.buffer.isEmpty)
            #expect(try AppSettings.ancEnabled.decode(try await host.request(AppSettings.ancEnabled.readRequest()).buffer) == false)
            // Config string.
            let serial = try #require(ConfigStrings.setting(for: .configSerialNumber))
            #expect(try serial.decode(try await host.request(serial.readRequest()).buffer) == "TS1-000001")
            // Boot commands in the application.
            let type = try await host.request(BootRequests.imageType())
            #expect(try BootRequests.isBootloader(imageTypeReply: type.buffer) == false)
            try await host.authenticate()
            // Refusals.
            #expect(try await host.request(rawRequest(.read, Command(rawValue: 0xB0), destination: .dsp)).status == .notFound)
            #expect(try await host.request(rawRequest(.read, Command(rawValue: 0x9F))).status == .notSupported)
            #expect(try await host.request(rawRequest(.write, .appANCEnable, [1])).status == .fail)
            // A message that is not a LightX packet is skipped; serving goes on.
            try await host.transport.send([1, 2, 3])
            #expect(try await host.request(AppSettings.batteryLevel.readRequest()).status == .ok)
            #expect(await device.answeredRequests == 11)
            await device.shutdown()
        }
    }

    /// Authenticate, jump to the bootloader, a whole firmware update as raw packets, jump back, new version.
    @Test func aFullFirmwareUpdateOverRawPackets() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: Self.instant)
            var host = serve(device)
            try await host.authenticate()
            #expect(try await host.request(BootRequests.appShutdown()).status == .ok)
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            #expect(await device.runningImage == .bootloader)
            // Bootloader requests: image type, authentication survived the jump, capabilities.
            #expect(try BootRequests.isBootloader(imageTypeReply: try await host.request(BootRequests.imageType()).buffer))
            #expect(try BootRequests.isAuthenticated(authStatusReply: try await host.request(BootRequests.authStatus()).buffer))
            let caps = try await host.request(BootRequests.capabilities())
            #expect(caps.status == .ok && caps.buffer.count == 8)
            #expect(try await host.request(AppSettings.batteryLevel.readRequest()).status == .notSupported)

            let image = TestImages.signed()
            let requests = try TestImages.updateRequests(image)
            #expect(requests.last?.command == .bootJumpToApplication)
            for request in requests.dropLast() {
                let reply = try await host.request(request)
                #expect(reply.status == .ok, "\(request.command) at \(request.address): \(reply.status)")
            }
            // Read back the first block, then start the new application.
            let block = try await host.request(try BootRequests.readBlock(.application, offset: 0, count: 256))
            #expect(block.status == .ok && block.buffer == image.prefix(256))
            #expect(try await host.request(BootRequests.jumpToApplication()).status == .ok)
            #expect(await device.runningImage == .application)
            #expect(try firmwareVersion(try await host.request(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 5, 0))
            await device.shutdown()
        }
    }

    /// Pushes go raw to packet links and as SPP frames to byte-stream links, at the same time.
    @Test func pushesReachPacketAndStreamHostsEachInTheirFormat() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: Self.instant)
            var usb = serve(device)
            var spp = TestHost(await device.connect())
            _ = try await usb.request(AppSettings.batteryLevel.readRequest())
            _ = try await spp.request(AppSettings.batteryLevel.readRequest())
            let sent = await device.press(.anc)
            #expect(sent.count == 1)
            let raw = try #require(try await usb.next())
            #expect(raw == sent[0])
            #expect(raw.isPush && raw.header.source == .application)
            let framed = try #require(try await spp.nextPush())
            #expect(framed == sent[0])
            await device.setBatteryLevel(42)
            #expect(try #require(try await usb.next()).command == .appPushBatteryLevel)
            await device.shutdown()
        }
    }

    /// While the bootloader's queue is full, overflow is answered NotReady in the link's format.
    @Test func bootloaderOverflowIsAnsweredRaw() async throws {
        try await withTimeLimit {
            var timing = DeviceTiming.instant
            // Long enough that all six requests are queued while the first erase runs, even on a loaded machine.
            timing.sectorErase = .milliseconds(200)
            let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(drainInterval: .zero, timeScale: 1, timing: timing, queueDepth: 2))
            var host = serve(device)
            try await host.authenticate()
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            for k in 0..<6 { try await host.send(try BootRequests.eraseSector(.application, index: UInt32(k))) }
            var statuses: [Status] = []
            for _ in 0..<6 { statuses.append(try #require(try await host.nextReply()).status) }
            #expect(statuses.contains(.notReady) && statuses.filter { $0 == .ok }.count >= 2, "\(statuses)")
            await device.shutdown()
        }
    }
}

@Suite struct ModeChangeTests {
    static let instant = SimulatorOptions(drainInterval: .zero, timeScale: 0)

    /// The next `count` values of a mode stream, or fewer after `timeout`.
    func take(_ count: Int, from stream: AsyncStream<RunningImage?>, timeout: Duration = .seconds(30)) async throws -> [RunningImage?] {
        try await withTimeLimit(Double(timeout.components.seconds) + 1) {
            var out: [RunningImage?] = []
            for await value in stream {
                out.append(value)
                if out.count == count { break }
            }
            return out
        }
    }

    /// A device with the slow profile serving a packet link, its authenticated host, and its mode stream past the
    /// initial `.application`.
    func slowDeviceInTheApplication() async throws
        -> (SimulatedHeadset, PacketHost, AsyncStream<RunningImage?>.AsyncIterator) {
        var options = Self.instant
        options.profile = .slow
        let device = try await SimulatedHeadset(statePath: nil, options: options)
        let (hostEnd, deviceEnd) = InMemoryTransport.pair(framing: .packets)
        Task { await device.serve(deviceEnd) }
        var host = PacketHost(hostEnd)
        try await host.authenticate()
        var modes = device.modeChanges().makeAsyncIterator()
        #expect(await modes.next() == .some(.application))
        return (device, host, modes)
    }

    @Test func followsJumpsPowerAndShutdown() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: Self.instant)
            let modes = device.modeChanges()
            var iterator = modes.makeAsyncIterator()
            #expect(await iterator.next() == .some(.application), "the current image first")
            let (hostEnd, deviceEnd) = InMemoryTransport.pair(framing: .packets)
            Task { await device.serve(deviceEnd) }
            var host = PacketHost(hostEnd)
            try await host.authenticate()
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            #expect(await iterator.next() == .some(.bootloader))
            #expect(try await host.request(BootRequests.jumpToApplication()).status == .ok)
            #expect(await iterator.next() == .some(.application))
            // A request that does not change the image reports nothing.
            _ = try await host.request(AppSettings.batteryLevel.readRequest())
            await device.powerCut()
            #expect(await iterator.next() == .some(nil))
            #expect(await iterator.next() == .some(.application), "powered up again (time scale 0)")
            await device.reboot()
            #expect(await iterator.next() == .some(nil))
            #expect(await iterator.next() == .some(.application))
            // A second observer starts from the current image.
            var late = device.modeChanges().makeAsyncIterator()
            #expect(await late.next() == .some(.application))
            await device.shutdown()
            #expect(await iterator.next() == nil, "finished at shutdown")
            #expect(await late.next() == nil)
            var afterShutdown = device.modeChanges().makeAsyncIterator()
            #expect(await afterShutdown.next() == .some(.application))
            #expect(await afterShutdown.next() == nil)
        }
    }

    /// A jump is reported only once its reply is on the link: with a slow device (150 ms reply delay) the mode
    /// change comes after the reply can be read.
    @Test func aJumpIsReportedAfterItsReplyWasSent() async throws {
        try await withTimeLimit {
            var (device, host, modes) = try await slowDeviceInTheApplication()
            let sent = ContinuousClock.now
            try await host.send(BootRequests.jumpToBootloader())
            #expect(await modes.next() == .some(.bootloader))
            #expect(ContinuousClock.now - sent >= BehaviourProfile.slowReplyDelay)
            // The reply is already there. (A mode change reported before the reply went out would fail the bound
            // above, so this look need not be short; 20 ms was too short for a loaded machine.)
            let reply = try #require(try await host.next(timeout: .seconds(1)))
            #expect(reply.command == .bootJumpToBootloader && reply.status == .ok)
            #expect(await device.runningImage == .bootloader)
            await device.shutdown()
        }
    }

    /// A power cut overtakes a jump whose reply has not gone out: the jump is never reported.
    @Test func aPowerLossOvertakesAnUnsentJump() async throws {
        try await withTimeLimit {
            var (device, host, modes) = try await slowDeviceInTheApplication()
            try await host.send(BootRequests.jumpToBootloader())
            while await device.runningImage != .bootloader { try await Task.sleep(for: .milliseconds(2)) }
            await device.powerCut()
            #expect(await modes.next() == .some(nil))
            #expect(await modes.next() == .some(.application))
            try await Task.sleep(for: BehaviourProfile.slowReplyDelay + .milliseconds(50))
            await device.shutdown()
            #expect(await modes.next() == nil, "the late jump reply did not report the bootloader")
        }
    }

    /// With no link to reply on (the host left), a jump is reported at once.
    @Test func aJumpWithoutItsLinkIsReportedAtOnce() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: Self.instant)
            var modes = device.modeChanges().makeAsyncIterator()
            #expect(await modes.next() == .some(.application))
            var host = TestHost(await device.connect())
            try await host.authenticate()
            try await host.send(BootRequests.jumpToBootloader())
            await host.transport.close()
            #expect(await modes.next() == .some(.bootloader))
            await device.shutdown()
        }
    }
}
