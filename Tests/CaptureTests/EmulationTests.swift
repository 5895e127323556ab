import Capture
import Firmware
import Foundation
import FirmwareUpdate
import Headset
import HeadsetSimulator
import LightX
import Synchronization
import Testing
import Transport

/// Issue 32 §4: a recorded flash replayed as an emulated device.
@Suite struct EmulationTests {
    /// Records a flash of `image` from a fresh simulated headset (the host's side); returns the capture.
    func record(_ image: FirmwareImage) async throws -> CaptureContents {
        try await CaptureFile.read(path: try await recordFile(image))
    }

    /// Records a flash of `image` as `record` does; returns the capture's path.
    /// `framing`: `.packets` records over links as a USB headset's (raw packets: HID feature reports, link type 148).
    func recordFile(_ image: FirmwareImage, framing: LinkFraming = .byteStream) async throws -> String {
        let path = try TemporaryDirectory.make("emulation") + "/flash.pcapng"
        let writer = try await CaptureWriter.create(path: path, application: "tuneup test", warn: { _ in })
        let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 0))
        let capture = LinkCapture(writer: writer, family: .lightX)
        if framing == .packets {
            let options = UpdateOptions(requestTimeout: .seconds(5), readyWait: .seconds(60), reconnectWait: .seconds(60))
            let updater = FirmwareUpdater(image: image, options: options, sessionOptions: LightXSession.Options(timeout: .seconds(2), retransmissions: 2),
                                          connect: {
                                              let (host, deviceEnd) = InMemoryTransport.pair(framing: .packets)
                                              Task { await device.serve(deviceEnd) }
                                              return capture.wrap(host, name: "usb:1209:0001")
                                          })
            let events = Task { for await _ in updater.progress {} }
            defer { events.cancel() }
            _ = try await updater.run()
        } else {
            _ = try await flash(device, image) { capture.wrap($0, name: "sim") }
        }
        await writer.close()
        await device.shutdown()
        return path
    }

    /// Flashes `image` against an emulator of `script`: every link the updater opens is served by it.
    /// `wait`: how long the updater waits for the device to come back (long, unless it is to fail).
    func flashEmulated(_ script: EmulationScript, _ image: FirmwareImage, wait: Duration = .seconds(60),
                       framing: LinkFraming = .byteStream) async -> (Result<UpdateResult, any Error>, HeadsetEmulator.Outcome) {
        let emulator = HeadsetEmulator(script)
        let options = UpdateOptions(requestTimeout: .seconds(5), readyWait: wait, reconnectWait: wait)
        let updater = FirmwareUpdater(image: image, options: options, sessionOptions: LightXSession.Options(timeout: .seconds(2), retransmissions: 1),
                                      connect: {
                                          let (host, device) = InMemoryTransport.pair(framing: framing)
                                          Task { await emulator.serve(device) }
                                          return host
                                      })
        let events = Task { for await _ in updater.progress {} }
        let result: Result<UpdateResult, any Error>
        do { result = .success(try await updater.run()) } catch { result = .failure(error) }
        events.cancel()
        return (result, await emulator.outcome())
    }

    @Test func recordedFlashReplaysToCompletion() async throws {
        let image = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.4.3-small.img") }
        let script = try EmulationScript(try await record(image))
        #expect(script.exchanges.contains { $0.request.command == .bootWriteImage })
        let (result, outcome) = await flashEmulated(script, image)
        #expect(outcome == .completed)
        let update = try result.get()
        #expect(update.newVersion?.hasPrefix("1.4.3") == true)
    }

    /// A flash recorded over USB HID feature reports (link type 148, as over `usb:`/`hidraw:`) is a script of raw
    /// packets, link by link, and replays on links of raw packets (a USB gadget's) to completion.
    @Test func usbHIDCaptureReplaysOnPacketLinks() async throws {
        let image = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.4.3-small.img") }
        let contents = try await CaptureFile.read(path: try await recordFile(image, framing: .packets))
        #expect(contents.interfaces.allSatisfy { $0.knownLinkType == .lightXHID })
        let script = try EmulationScript(contents)
        // (In process the simulated headset keeps a raw-packet link across its jumps: a USB gadget re-enumerates it.)
        #expect(script.links.count == contents.interfaces.count && script.links.allSatisfy { $0.linkType == .lightXHID && $0.name == "usb:1209:0001" })
        let writes = script.exchanges.filter { $0.request.command == .bootWriteImage }
        #expect(!writes.isEmpty && writes.allSatisfy { $0.replies.first?.header.status == .ok })
        #expect(script.exchanges.allSatisfy { $0.request.header.source == .usb })
        let (result, outcome) = await flashEmulated(script, image, framing: .packets)
        #expect(outcome == .completed)
        #expect(try result.get().newVersion?.hasPrefix("1.4.3") == true)
    }

    @Test func anotherImageDivergesAtItsFirstDifferingRequest() async throws {
        let recorded = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.4.3-small.img") }
        let other = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.5.0.img") }
        let script = try EmulationScript(try await record(recorded))
        // The updater is to fail here: it need not wait long for a device that will not come back.
        let (result, outcome) = await flashEmulated(script, other, wait: .milliseconds(200))
        guard case let .diverged(text) = outcome else {
            Issue.record("expected a divergence, got \(outcome)")
            return
        }
        #expect(throws: (any Error).self) { try result.get() }
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3 && lines[0].contains("first difference at frame byte"), "\(text)")
        #expect(lines[1].hasPrefix("  request") && lines[2].hasPrefix("  recording"))
    }

    /// A recorded flash cut in the middle of a block (a writer killed mid-write would never leave one, but a copy
    /// cut short does) is refused as a whole: the script is not built from the blocks before the cut, and the error
    /// names the block cut and its offset.
    @Test func cutCaptureIsRefusedWithTheBlockNamed() async throws {
        let image = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.4.3-small.img") }
        let path = try await recordFile(image)
        let bytes = try await offThePool { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
        let (number, offset, length) = try #require(PcapNGBlocks.containing(bytes.count / 2, in: bytes))
        let cut = path + ".cut"
        let cutBytes = Data(bytes.prefix(offset + length / 2))
        try await offThePool { try cutBytes.write(to: URL(fileURLWithPath: cut)) }
        let error = await #expect(throws: CaptureError.self) { _ = try await EmulationScript.load(path: cut) }
        #expect(error?.code == .truncated)
        #expect(error?.message.contains("block \(number) at offset \(offset)") == true, "\(error?.message ?? "")")
        // The same bytes cut at the block's start are whole blocks: they load, with the requests before the cut.
        let whole = try EmulationScript(try PcapNG.parse(Array(bytes.prefix(offset))))
        #expect(!whole.exchanges.isEmpty)
    }

    /// A script of one link with these requests and a reply (status Ok, no buffer) to each, recorded on the host's side.
    func script(_ requests: [Packet]) throws -> EmulationScript {
        var file = PcapNG.sectionHeader(application: "t")
        file += PcapNG.interfaceDescription(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        for (t, p) in requests.enumerated() {
            file += PcapNG.enhancedPacket(interface: 0, timestamp: UInt64(t), direction: .outbound, data: SPPFraming.encode(p))
            file += PcapNG.enhancedPacket(interface: 0, timestamp: UInt64(t), direction: .inbound, data: SPPFraming.encode(try Packet.reply(to: p)))
        }
        return try EmulationScript(try PcapNG.parse(file))
    }

    /// The values a station issues anew on each run (docs/capture.md §6: the serial, the Bluetooth name, the Bluetooth
    /// address) match a recording that differs only in them; a request that differs elsewhere diverges.
    @Test(arguments: EmulationMachine.hostChosen.keys.sorted())
    func hostChosenValuesMatchLoosely(_ byte: UInt8) throws {
        let command = Command(rawValue: byte)
        let recorded = try Packet.request(.write, command, argument: Array("TS1-000001\0".utf8))
        let lock = try Packet.request(.write, .factoryLock, argument: [1, 0, 0, 0])
        let script = try script([recorded, lock])
        #expect(EmulationMachine.hostChosen[byte] == .buffer)

        var machine = EmulationMachine(script)
        _ = machine.handle(.linkOpened)
        let issuedToday = try Packet.request(.write, command, argument: Array("TS1-000042-20261208\0".utf8))
        #expect(machine.handle(.request(issuedToday)) == [.send([try Packet.reply(to: recorded)])])
        #expect(machine.handle(.request(lock)) == [.send([try Packet.reply(to: lock)]), .finished])

        for elsewhere in [
            try Packet.request(.write, command, argument: Array("TS1-000042\0".utf8), address: 0x10),  // the address
            try Packet.request(.read, command),  // the opcode
            try Packet.request(.write, command, argument: Array("TS1-000042\0".utf8), destination: .dsp),  // the module
        ] {
            var strict = EmulationMachine(script)
            _ = strict.handle(.linkOpened)
            guard case .diverged? = strict.handle(.request(elsewhere)).first else {
                Issue.record("\(elsewhere.header) matched a recorded \(recorded.header)")
                continue
            }
        }
    }

    /// Every other command is matched byte for byte: a request whose buffer differs (the factory key, an image block)
    /// diverges.
    @Test func otherCommandsAreMatchedByteForByte() throws {
        for (recorded, live) in [
            (try Packet.request(.write, .factoryUnlock, argument: [UInt8](repeating: 1, count: 16)),
             try Packet.request(.write, .factoryUnlock, argument: [UInt8](repeating: 2, count: 16))),
            (try Packet.request(.write, .bootWriteImage, argument: [UInt8](repeating: 0xA5, count: 256), address: 0x100),
             try Packet.request(.write, .bootWriteImage, argument: [UInt8](repeating: 0xA6, count: 256), address: 0x100)),
        ] {
            #expect(EmulationMachine.hostChosen[recorded.command.rawValue] == nil)
            var machine = EmulationMachine(try script([recorded]))
            _ = machine.handle(.linkOpened)
            guard case .diverged? = machine.handle(.request(live)).first else {
                Issue.record("\(live.command) with another buffer matched")
                continue
            }
        }
    }

    /// A command named with a loose address is answered at the host's address: the reply carries its request's
    /// param0 (the host matches replies by opcode and param0), not the recorded one.
    @Test func looseAddressIsAnsweredAtTheHostsAddress() throws {
        let recorded = try Packet.request(.read, .bootReadImage, argument: [UInt8](repeating: 0, count: 16), address: 0x100)
        var machine = EmulationMachine(try script([recorded]))
        machine.loose[Command.bootReadImage.rawValue] = .address
        _ = machine.handle(.linkOpened)
        let live = try Packet.request(.read, .bootReadImage, argument: [UInt8](repeating: 0, count: 16), address: 0x200)
        let actions = machine.handle(.request(live))
        guard case let .send(replies)? = actions.first, let reply = replies.first else {
            Issue.record("no reply: \(actions)")
            return
        }
        #expect(reply.header.address == 0x200 && reply.header.opcode == live.header.opcode && reply.command == .bootReadImage)
    }

    /// Which recorded links ran the bootloader (what a USB gadget presents for each), from the image type the device
    /// reported or the jump that ended the link before; the emulator says which link comes next when one ends.
    @Test func linksKnowWhetherTheBootloaderRan() async throws {
        var file = PcapNG.sectionHeader(application: "t")
        var t: UInt64 = 0
        func exchange(_ interface: Int, _ request: Packet, _ reply: [UInt8] = []) throws {
            t += 1
            file += PcapNG.enhancedPacket(interface: interface, timestamp: t, direction: .outbound, data: SPPFraming.encode(request))
            file += PcapNG.enhancedPacket(interface: interface, timestamp: t, direction: .inbound, data: SPPFraming.encode(try Packet.reply(to: request, buffer: reply)))
        }
        for name in ["usb:1209:0001", "usb:1209:0002", "usb:1209:0002", "usb:1209:0001"] {
            file += PcapNG.interfaceDescription(linkType: 147, name: name, description: "LightX over SPP; host side")
        }
        let imageType = try Packet.request(.read, .bootImageType)
        try exchange(0, imageType, [1])  // the application runs
        try exchange(0, try Packet.request(.write, .bootJumpToBootloader))
        try exchange(1, imageType, [0])  // the bootloader runs
        try exchange(2, try Packet.request(.read, .bootCapabilities))  // not asked: as the link before
        try exchange(2, try Packet.request(.write, .bootJumpToApplication))
        try exchange(3, try Packet.request(.read, .configProductName), Array("Tuneup\0".utf8))  // not asked: after the jump back
        let script = try EmulationScript(try PcapNG.parse(file))
        #expect(script.links.map(\.runsBootloader) == [false, true, true, false])

        // Link by link: the hook hears of each next link as one ends, and of the end (nil) before the outcome.
        let emulator = HeadsetEmulator(script)
        let ended = EndedLinks()
        let links: [[Packet]] = [
            [imageType, try Packet.request(.write, .bootJumpToBootloader)], [imageType],
            [try Packet.request(.read, .bootCapabilities), try Packet.request(.write, .bootJumpToApplication)],
            [try Packet.request(.read, .configProductName)],
        ]
        for (k, requests) in links.enumerated() {
            let (host, device) = InMemoryTransport.pair()
            let serving = Task { await emulator.serve(device) { next in ended.links.withLock { $0.append(next) } } }
            for request in requests { try await host.send(SPPFraming.encode(request)) }
            await serving.value
            #expect(ended.links.withLock { $0.count } == k + 1)
        }
        #expect(ended.links.withLock { $0 } == [script.links[1], script.links[2], script.links[3], nil])
        #expect(await emulator.outcome() == .completed)
    }

    /// A recording of a run that lost requests (resent after a timeout, a sector redone from its erase) replays
    /// against a run that loses none, and a run that resends a request answered earlier (not the last one) is
    /// answered again as then.
    @Test func resendsOfEitherRunAreAnsweredOrPassedOver() throws {
        let erase = try BootRequests.eraseSector(.application, index: 0, addressed: true)
        let blocks = try (0..<3).map { k in try BootRequests.writeBlock(.application, offset: UInt32(k * 256), data: [UInt8](repeating: UInt8(k + 1), count: 256)) }
        let verify = try BootRequests.verifyCRC(.application, sectors: 1, crc: 0x1234_5678)
        // Recorded: block 1 resent after block 2, then the sector redone (its erase and its blocks again).
        let lossy = try script([erase, blocks[0], blocks[1], blocks[2], blocks[1], erase, blocks[0], blocks[1], blocks[2], verify])
        var clean = EmulationMachine(lossy)
        _ = clean.handle(.linkOpened)
        for request in [erase] + blocks { #expect(clean.handle(.request(request)) == [.send([try Packet.reply(to: request)])]) }
        #expect(clean.handle(.request(verify)) == [.send([try Packet.reply(to: verify)]), .finished])

        var resending = EmulationMachine(try script([erase] + blocks + [verify]))
        _ = resending.handle(.linkOpened)
        for request in [erase, blocks[0], blocks[1], blocks[2], blocks[0]] {
            #expect(resending.handle(.request(request)) == [.send([try Packet.reply(to: request)])])
        }
        #expect(resending.handle(.request(verify)) == [.send([try Packet.reply(to: verify)]), .finished])

        // Another block where the recording has the next one still diverges.
        var other = EmulationMachine(lossy)
        _ = other.handle(.linkOpened)
        _ = other.handle(.request(erase))
        let wrong = try BootRequests.writeBlock(.application, offset: 0, data: [UInt8](repeating: 9, count: 256))
        guard case .diverged? = other.handle(.request(wrong)).first else { Issue.record("no divergence"); return }
    }

    /// The machine alone: a poll repeated more or fewer times than recorded still matches.
    @Test func pollsRepeatedOrSkipped() throws {
        let poll = try Packet.request(.read, .bootImageType)
        let next = try Packet.request(.read, .bootAuthStatus)
        let answer = { (p: Packet) in try Packet.reply(to: p, buffer: [0]) }
        var file = PcapNG.sectionHeader(application: "t")
        file += PcapNG.interfaceDescription(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        var t: UInt64 = 0
        for p in [poll, poll, poll, next] {
            t += 1
            file += PcapNG.enhancedPacket(interface: 0, timestamp: t, direction: .outbound, data: SPPFraming.encode(p))
            file += PcapNG.enhancedPacket(interface: 0, timestamp: t, direction: .inbound, data: SPPFraming.encode(try answer(p)))
        }
        let script = try EmulationScript(try PcapNG.parse(file))
        var fewer = EmulationMachine(script)
        _ = fewer.handle(.linkOpened)
        #expect(fewer.handle(.request(poll)) == [.send([try answer(poll)])])
        #expect(fewer.handle(.request(next)) == [.send([try answer(next)]), .finished])
        var more = EmulationMachine(script)
        _ = more.handle(.linkOpened)
        for _ in 0..<5 { #expect(more.handle(.request(poll)) == [.send([try answer(poll)])]) }
        #expect(more.handle(.request(next)) == [.send([try answer(next)]), .finished])
        var wrong = EmulationMachine(script)
        _ = wrong.handle(.linkOpened)
        guard case .diverged? = wrong.handle(.request(next)).first else { Issue.record("no divergence"); return }
    }
}

/// The blocks of a pcapng file as a reader walks them (by their total lengths), for tests that cut files.
enum PcapNGBlocks {
    /// The block (its number from 1, offset and total length) that holds byte `position`, nil past the end.
    static func containing(_ position: Int, in bytes: [UInt8]) -> (number: Int, offset: Int, length: Int)? {
        var offset = 0, number = 0
        while offset + 8 <= bytes.count {
            number += 1
            let length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
            guard length >= 12 else { return nil }
            if position < offset + length { return (number, offset, length) }
            offset += length
        }
        return nil
    }
}

/// The links an emulator's `linkEnded` hook was given.
final class EndedLinks: Sendable {
    let links = Mutex<[EmulationScript.Link?]>([])
}
