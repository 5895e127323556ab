import Capture
import DeviceAccess
import Firmware
import FirmwareUpdate
import Foundation
import Headset
import HeadsetSimulator
import LightX
import Speaker
import SpeakerSession
import SpeakerSimulator
import Simulator
import Testing
import TestSupport
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

// The Lua dissectors of tools/wireshark/ (docs/wireshark.md) against the project's own decoding (issue 32 §2):
// captures of real sessions with the simulated devices — the quickstart's flash, a station's factory steps, a
// speaker's control session and its datagrams, a wearable stream over the framing and over ATT — are decoded by
// Debian's tshark with the dissectors and by the project's codecs, and compared packet by packet (docs/capture.md
// §3's fields). tshark must be installed (CI installs it): a missing tshark fails these tests.

private let imagesDirectory: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("firmware-images").path) {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent("firmware-images").path
}()

private let session = LightXSession.Options(timeout: .seconds(10), retransmissions: 2)

/// The quickstart's flash (firmware-images/app-1.5.0.img onto the simulated headset), recorded on the host's side.
private func recordedFlash() async throws -> Recording {
    let recording = Recording()
    let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 0))
    let image = try FirmwareImage.load(path: imagesDirectory + "/app-1.5.0.img")
    let updater = FirmwareUpdater(image: image, options: UpdateOptions(requestTimeout: .seconds(10), readyWait: .seconds(60), reconnectWait: .seconds(60)),
                                  sessionOptions: session, connect: { RecordingTransport(await device.connect(), recording) })
    let events = Task { for await _ in updater.progress {} }
    _ = try await updater.run()
    await events.value
    return recording
}

/// A station's factory steps on a blank unit (what `tuneup station run` sends each unit): read the unit, measure,
/// write its identity, calibrate and store, lock.
private func recordedFactoryRun() async throws -> Recording {
    let recording = Recording()
    var options = SimulatorOptions(timeScale: 0)
    options.production = ProductionLine(seed: 5)
    let device = try await SimulatedHeadset(statePath: nil, options: options)
    let client = BootloaderClient(sessionOptions: session, wait: .seconds(60)) { RecordingTransport(await device.connect(), recording) }
    let steps = FactorySteps(client: client)
    _ = try await steps.info()
    for m in FactoryMeasurement.allCases { _ = try await steps.measure(m) }
    _ = try await steps.writeIdentity(FactoryIdentity(serialNumber: "TS1-000042", bluetoothName: "Tuneup TS-1",
                                                      bluetoothAddress: BDAddress(value: 0x001B_66A1_B2C3)))
    _ = try await steps.calibrate(store: true)
    _ = try await steps.lock()
    await client.close()
    return recording
}

/// The SPP interfaces of a recording (link type 147), one per link, host side.
private func sppCapture(_ recording: Recording, name: String) -> CaptureFixture {
    var capture = CaptureFixture()
    var interfaces: [Int: Int] = [:]
    for link in 0..<recording.links {
        interfaces[link] = capture.addInterface(linkType: 147, name: "\(name) link \(link + 1)", description: "LightX over SPP; host side")
    }
    for chunk in recording.chunks { capture.add(interfaces[chunk.link]!, chunk.direction, chunk.bytes) }
    return capture
}

/// Decodes `capture` with tshark and with the project's codecs and compares them; returns (packets, messages).
private func dissectAndCompare(_ capture: CaptureFixture, _ name: String, expected: [ExpectedMessage]? = nil,
                               dropBadChecksums: Int = 0,
                               sourceLocation: SourceLocation = #_sourceLocation) async throws -> (packets: Int, messages: Int, result: TsharkResult) {
    let directory = try TemporaryDirectory.make("tuneup-wireshark")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/" + name + ".pcapng"
    try await capture.write(to: path)
    // TUNEUP_KEEP_CAPTURES=DIR keeps a copy of each capture (docs/wireshark.md's examples come from them).
    if let keep = ProcessInfo.processInfo.environment["TUNEUP_KEEP_CAPTURES"] { try await capture.write(to: keep + "/" + name + ".pcapng") }
    let result = try await Tshark.dissect(path, in: directory)
    #expect(result.errors.isEmpty, "\(name): \(result.errors.prefix(5))", sourceLocation: sourceLocation)
    #expect(result.stderr.isEmpty, "\(name): tshark said \(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.packets == capture.packets.count, sourceLocation: sourceLocation)
    var messages = result.messages
    if dropBadChecksums > 0 {
        let bad = messages.filter { $0.fields["lightx.checksum.status"] == ["0"] }
        #expect(bad.count == dropBadChecksums, "\(name): frames with a bad checksum", sourceLocation: sourceLocation)
        messages.removeAll { $0.fields["lightx.checksum.status"] == ["0"] }
    }
    let project = try expected ?? projectDecoding(capture)
    #expect(!project.isEmpty, sourceLocation: sourceLocation)
    let compared = compare(messages, project, sourceLocation: sourceLocation)
    var against = "the codecs"
    if expected == nil {
        // Tuneup's own link types: the project's decoder of captures (what `tuneup capture show` prints) too; it
        // decodes a frame with a bad checksum as tshark does (the codecs' stream decoder skips it).
        let decoded = projectMessages(CaptureDecoder.decode(try await CaptureFile.read(path: path)))
        compare(result.messages, decoded, sourceLocation: sourceLocation)
        against += " and CaptureDecoder"
    }
    print("\(name): \(capture.packets.count) packets, \(compared) messages compared field by field, tshark = \(against)")
    return (capture.packets.count, compared, result)
}

@Suite(.serialized) struct WiresharkDissectorTests {
    @Test func tsharkIsInstalled() {
        #expect(Tshark.path != nil, "tshark is not installed: the dissectors are proven with it (apt-get install tshark)")
    }

    /// Every command name of the codec is the dissector's (tshark -G values lists a field's value strings).
    @Test func commandNamesAreTheCodecs() async throws {
        let directory = try TemporaryDirectory.make("tuneup-wireshark")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, output, _) = try await Tshark.run(["-G", "values"] + Tshark.scriptArguments, in: directory)
        #expect(status == 0)
        var names: [UInt8: String] = [:]
        for line in output.split(separator: "\n") {
            let cells = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard cells.count == 4, cells[0] == "V", cells[1] == "lightx.command" else { continue }
            if let value = UInt8(cells[2].dropFirst(2), radix: 16) { names[value] = String(cells[3]) }
        }
        for (value, name) in Command.knownNames { #expect(names[value] == name, "command 0x\(String(value, radix: 16))") }
        for command in [Command.factoryHardwareID, .factoryLock, .factoryUnlock, .factoryMeasurement, .diagAncStartCalibration,
                        .diagAncStoreCalibrationData, .diagBDAddr] {
            #expect(names[command.rawValue] != nil, "factory command 0x\(String(command.rawValue, radix: 16)) has a name")
        }
    }

    /// The quickstart's flash as Tuneup's capture of a byte stream (USER0): SPP frames reassembled per direction.
    @Test func quickstartFlashOverSPP() async throws {
        let recording = try await recordedFlash()
        var capture = sppCapture(recording, name: "sim")
        // A link whose second frame is corrupted: the dissector flags it (an expert warning, not an error) and the
        // frames around it decode as the project's decoder finds them.
        let bad = capture.addInterface(linkType: 147, name: "tcp:127.0.0.1:4100", description: "LightX over SPP; host side")
        let ack = SPPFraming.encode(try Packet.reply(to: try AppSettings.ancEnabled.writeRequest(true)))
        var corrupt = ack
        corrupt[corrupt.count - 1] ^= 0x01
        capture.add(bad, .inbound, ack + corrupt.prefix(7))
        capture.add(bad, .inbound, Array(corrupt.dropFirst(7)) + ack)
        let (packets, messages, result) = try await dissectAndCompare(capture, "flash-spp", dropBadChecksums: 1)
        #expect(result.warnings["lightx.expert.bad_checksum"] == 1)
        // The simulated headset already holds the image's leading sectors that equal its installed application's, so the
        // flash writes only the rest: some 700 requests and their replies.
        #expect(messages > 1000, "\(messages) messages in \(packets) packets")
    }

    /// The same flash over TCP (Ethernet captures of port 4100 and of another port, found by the heuristic): frames
    /// reassembled across segments by TCP's desegmentation.
    @Test(arguments: [UInt16(4100), 43215])
    func quickstartFlashOverTCP(port: UInt16) async throws {
        let recording = try await recordedFlash()
        var capture = CaptureFixture()
        var expected: [ExpectedMessage] = []
        var decoders: [String: SPPStreamDecoder] = [:]
        // Each link its own connection: the client's ports from 40000.
        var sequence: [String: UInt32] = [:]
        let ethernet = capture.addInterface(linkType: 1, name: "lo", description: "")
        for chunk in recording.chunks {
            let client = UInt16(40000 + chunk.link)
            let outbound = chunk.direction == .outbound
            let key = "\(chunk.link)/\(outbound)"
            let otherKey = "\(chunk.link)/\(!outbound)"
            let seq = sequence[key] ?? 1
            let ack = sequence[otherKey] ?? 1
            // Split large chunks so that frames also straddle segments.
            var rest = chunk.bytes[...]
            var seqNow = seq
            while !rest.isEmpty {
                let piece = Array(rest.prefix(rest.count > 100 ? 97 : rest.count))
                rest = rest.dropFirst(piece.count)
                capture.add(ethernet, nil, outbound
                    ? tcpSegment(fromPort: client, toPort: port, seq: seqNow, ack: ack, payload: piece)
                    : tcpSegment(fromPort: port, toPort: client, seq: seqNow, ack: ack, payload: piece))
                seqNow &+= UInt32(piece.count)
                var decoder = decoders[key] ?? SPPStreamDecoder()
                decoder.append(piece)
                while let p = decoder.next() {
                    expected.append(ExpectedMessage(packet: capture.packets.count, protocolName: "lightx",
                                                    fields: lightXFields(p, fromHost: outbound, frame: SPPFraming.encode(p), reportFlag: nil)))
                }
                decoders[key] = decoder
            }
            sequence[key] = seqNow
        }
        _ = try await dissectAndCompare(capture, "flash-tcp-\(port)", expected: expected)
    }

    /// The same flash as USB HID feature reports (USER1): host 0xF1 then 0xF0, device 0xF0 then 0xF1.
    @Test func quickstartFlashAsHIDReports() async throws {
        let recording = try await recordedFlash()
        var capture = CaptureFixture()
        let usb = capture.addInterface(linkType: 148, name: "usb:1209:0001", description: "LightX over USB HID feature reports; host side")
        for (_, fromHost, packet) in lightXPackets(recording) {
            for report in try hidReports(RawPacketCodec.encode(packet), fromHost: fromHost) {
                capture.add(usb, fromHost ? .outbound : .inbound, report)
            }
        }
        _ = try await dissectAndCompare(capture, "flash-hid")
    }

    /// The same flash in an ordinary usbmon capture (LINKTYPE_USB_LINUX_MMAPPED): SET_REPORT and GET_REPORT control
    /// transfers on endpoint 0, found by the heuristic (no descriptors in the capture).
    /// With the device's descriptors in the capture (a capture started before the headset enumerated), Wireshark knows
    /// the interface is HID and the dissector takes the HID class's control transfers.
    @Test(arguments: [false, true])
    func quickstartFlashInUsbmon(withDescriptors: Bool) async throws {
        let recording = try await recordedFlash()
        var capture = CaptureFixture()
        let bus = capture.addInterface(linkType: 220, name: "usbmon1", description: "")
        var expected: [ExpectedMessage] = []
        var urb: UInt64 = 0xFFFF_8880_0000_0000
        if withDescriptors {
            // Device descriptor (1209:0001), configuration with one HID interface, SET_CONFIGURATION.
            let device: [UInt8] = [18, 1, 0, 2, 0, 0, 0, 64, 0x09, 0x12, 0x01, 0, 0, 1, 1, 2, 3, 1]
            let configuration: [UInt8] = [9, 2, 34, 0, 1, 1, 0, 0x80, 50, 9, 4, 0, 0, 1, 3, 0, 0, 0,
                                          9, 0x21, 0x11, 1, 0, 1, 0x22, 30, 0, 7, 5, 0x81, 3, 8, 0, 10]
            for (value, reply) in [(UInt16(0x0100), device), (0x0200, configuration)] {
                urb += 0x100
                let setup: [UInt8] = [0x80, 6, UInt8(value & 0xFF), UInt8(value >> 8), 0, 0, UInt8(reply.count), 0]
                capture.add(bus, nil, usbmonRecord(id: urb, submit: true, endpointIn: true, device: 5, setup: setup, data: [], length: reply.count))
                capture.add(bus, nil, usbmonRecord(id: urb, submit: false, endpointIn: true, device: 5, setup: nil, data: reply))
            }
            urb += 0x100
            capture.add(bus, nil, usbmonRecord(id: urb, submit: true, endpointIn: false, device: 5, setup: [0, 9, 1, 0, 0, 0, 0, 0], data: []))
            capture.add(bus, nil, usbmonRecord(id: urb, submit: false, endpointIn: false, device: 5, setup: nil, data: []))
        }
        for (_, fromHost, packet) in lightXPackets(recording) {
            let raw = RawPacketCodec.encode(packet)
            let reports = try hidReports(raw, fromHost: fromHost)
            for report in reports {
                urb += 0x100
                let id = report[0]
                if fromHost {
                    capture.add(bus, nil, usbmonRecord(id: urb, submit: true, endpointIn: false, device: 5,
                                                       setup: hidSetup(set: true, report: id, length: report.count), data: report))
                    if id == HIDReports.headerReportID {
                        expected.append(ExpectedMessage(packet: capture.packets.count, protocolName: "lightx",
                                                        fields: lightXFields(try RawPacketCodec.decode(raw), fromHost: true, frame: nil, reportFlag: 0)))
                    }
                    capture.add(bus, nil, usbmonRecord(id: urb, submit: false, endpointIn: false, device: 5, setup: nil, data: [], length: report.count))
                } else {
                    capture.add(bus, nil, usbmonRecord(id: urb, submit: true, endpointIn: true, device: 5,
                                                       setup: hidSetup(set: false, report: id, length: report.count), data: [], length: report.count))
                    capture.add(bus, nil, usbmonRecord(id: urb, submit: false, endpointIn: true, device: 5, setup: nil, data: report))
                }
            }
            if !fromHost {
                expected.append(ExpectedMessage(packet: capture.packets.count, protocolName: "lightx",
                                                fields: lightXFields(try RawPacketCodec.decode(raw), fromHost: false, frame: nil, reportFlag: 1)))
            }
        }
        let (_, _, result) = try await dissectAndCompare(capture, withDescriptors ? "flash-usbmon-hid" : "flash-usbmon", expected: expected)
        if withDescriptors {
            #expect(result.messages.count == expected.count, "the HID class's transfers are the dissector's")
        }
    }

    /// A station's factory steps on a blank unit (USER0).
    @Test func stationFactoryRunOverSPP() async throws {
        let recording = try await recordedFactoryRun()
        let capture = sppCapture(recording, name: "sim:blank")
        let (_, messages, result) = try await dissectAndCompare(capture, "station")
        #expect(messages > 20)
        // Every factory command is named (none shown as unknown).
        let commands = Set(result.messages.compactMap { $0.fields["lightx.command"]?.first })
        #expect(commands.isSuperset(of: ["0x68", "0x6b", "0x04", "0x11", "0x75", "0x71", "0x72", "0x69"]), "\(commands.sorted())")
    }

    /// A speaker's control session (USER2, requests, replies and events of a play), its audio datagrams (USER3) and
    /// clock datagrams (USER4).
    @Test func speakerPlay() async throws {
        let recording = Recording()
        let speaker = SimulatedSpeaker(.init(identity: .simulated(index: 0, seed: 7), clock: DACClock()))
        speaker.setControlPort(45455)
        let server = try SimulatedDeviceServer(devices: [speaker])
        let (a, b) = InMemoryTransport.pair()
        try server.serve(link: b, onDevice: 0)
        let control = try await SpeakerSession.open(transport: RecordingTransport(a, recording), address: "speaker:127.0.0.1:45455",
                                                    options: RequestOptions(timeout: .seconds(30)))
        _ = try await control.deviceInfo()
        _ = try await control.status()
        try await control.setVolume(25)
        try await control.setName("Kitchen")
        try await control.joinGroup(id: 0xCC8B_F596, name: "Living Room")
        let format = try AudioFormat(sampleRate: 48000, channels: 2, sampleFormat: .s16le)
        await #expect(throws: (any Error).self) { try await control.play(streamId: 7, format: format, source: .localFile, title: "song.wav") }
        try await control.joinSession()
        let reply = try await control.clockSync(t1: 1_000_000_000)
        try await control.setClockMap(try ClockMap(controllerReference: 1_000_255_000, speakerReference: reply.t2, rate: 25000))
        try await control.play(streamId: 7, format: format, source: .localFile, title: "song.wav")
        try await control.pause(streamId: 7)
        try await control.resume(streamId: 7)
        try await control.stop(streamId: 7)
        try await control.leaveSession()
        await control.close()
        await server.shutdown()

        var capture = CaptureFixture()
        let stream = capture.addInterface(linkType: 149, name: "speaker:127.0.0.1:45455", description: "HKWirelessHD control; host side")
        for chunk in recording.chunks { capture.add(stream, chunk.direction, chunk.bytes) }
        let audio = capture.addInterface(linkType: 150, name: "udp:127.0.0.1:45456", description: "HKWirelessHD audio datagrams; host side")
        for k in 0..<20 {
            let pcm = (0..<(2 * 2 * 100)).map { UInt8(truncatingIfNeeded: $0 &* (k + 1)) }
            let packet = try AudioPacket(streamId: 7, sequence: UInt32(k), firstFrame: UInt64(k * 100),
                                         presentationTime: 1_100_000_000 + UInt64(k) * 2_083_333, format: format, pcm: pcm)
            capture.add(audio, .outbound, packet.encode())
        }
        capture.add(audio, .outbound, try AudioPacket(streamId: 7, sequence: 20, firstFrame: 2000, presentationTime: 1_141_666_660,
                                                      format: format, endOfStream: true, pcm: []).encode())
        let clock = capture.addInterface(linkType: 151, name: "udp:127.0.0.1:45455", description: "HKWirelessHD clock datagrams; host side")
        for k in 0..<5 {
            let t1 = UInt64(1_000_000_000 + k * 250_000_000)
            capture.add(clock, .outbound, ClockDatagram.request(t1: t1).encode())
            capture.add(clock, .inbound, ClockDatagram.reply(try ClockSyncReply(t1: t1, t2: t1 + 4_000_250_000, t3: t1 + 4_000_260_000)).encode())
        }
        let (_, messages, result) = try await dissectAndCompare(capture, "speaker")
        #expect(messages > 40)
        #expect(result.warnings.isEmpty, "\(result.warnings)")
    }

    /// A wearable stream over Tuneup's GATT framing (USER5) and over real ATT (USER6): open, configure, stream, a
    /// gesture, and a refused configuration.
    @Test(arguments: [false, true])
    func wearableStream(overATT: Bool) async throws {
        let recording = Recording()
        let (client, server) = overATT ? try seqpacketPair() : InMemoryTransport.pair()
        let clock = ManualClock()
        let device = SimulatedWearable(profile: WearableProfile(motion: HeadMotion(seed: 3)), clock: clock)
        let serving = Task { await device.serve(server) }
        let wrapped = RecordingTransport(client, recording)
        let wearable = WearableDeviceSession(peer: overATT ? "ble:client" : "memory:wearable", options: .init(mtu: 247)) { wrapped }
        try await wearable.open()
        let readings = await wearable.sensorReadings()
        _ = try await wearable.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms); $0.enable(sensor: .rotation, at: ._20ms) }
        try await wearable.configureGestures { $0.set(gesture: .doubleTap, enabled: true) }
        device.tap(double: true)
        for _ in 0..<10 {
            while clock.pendingSleeps == 0 { await Task.yield() }
            clock.advance(by: .milliseconds(40))
        }
        var received = 0
        for await _ in readings { received += 1; if received == 20 { break } }
        await #expect(throws: WearableSessionError.self) {
            try await wearable.configureSensors(checked: false) { $0.enable(sensor: .uncalibratedMagnetometer, at: ._20ms) }
        }
        await wearable.close()
        await serving.value

        var capture = CaptureFixture()
        let interface = capture.addInterface(linkType: overATT ? 153 : 152, name: overATT ? "ble:AA:BB:CC:DD:EE:FF" : "sim:wearable",
                                             description: overATT ? "Bose Wearable ATT; host side" : "Bose Wearable GATT framing; host side")
        for chunk in recording.chunks { capture.add(interface, chunk.direction, chunk.bytes) }
        let (_, messages, result) = try await dissectAndCompare(capture, overATT ? "wearable-att" : "wearable-framed")
        #expect(messages > 15)
        // Sensor data notifications are decoded as records (the value's layout), not left as bytes.
        let notifications = result.messages.filter { $0.fields["wearable.opcode"] == ["0x1b"] }
        #expect(!notifications.isEmpty && notifications.allSatisfy { $0.fields["wearable.v.sensor"] != nil || $0.fields["wearable.v.gesture"] != nil })
    }
}

/// A pair of connected AF_UNIX SOCK_SEQPACKET sockets as `.packets` transports: the shape of an L2CAP LE channel.
private func seqpacketPair() throws -> (any Transport, any Transport) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw TransportError(.io, "socketpair: errno \(errno)")
    }
    return (try FileDescriptorTransport(adopting: fds[0], peerDescription: "ble:client", framing: .packets),
            try FileDescriptorTransport(adopting: fds[1], peerDescription: "ble:device", framing: .packets))
}

/// What is cut short or broken shows as expert information, never as a Lua error or a malformed packet.
@Suite struct WiresharkBrokenInputTests {
    @Test func cutAndBrokenMessagesAreExpertInformation() async throws {
        var capture = CaptureFixture()
        let spp = capture.addInterface(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        let frame = SPPFraming.encode(try AppSettings.ancEnabled.writeRequest(true))
        capture.add(spp, .outbound, [0x00, 0x13] + Array(frame.prefix(9)))  // bytes outside any frame, then a frame cut short
        let usb = capture.addInterface(linkType: 148, name: "usb:1209:0001", description: "LightX over USB HID feature reports; host side")
        capture.add(usb, .inbound, [0xF0, 0x01, 0x40, 0x08])  // a header report cut short
        capture.add(usb, .inbound, [0x33, 0x00])  // not a LightX report
        capture.add(usb, .inbound, [0xF1] + [UInt8](repeating: 0, count: 256))  // a buffer nobody announced
        let control = capture.addInterface(linkType: 149, name: "speaker:127.0.0.1:45455", description: "HKWirelessHD control; host side")
        var bad = try ControlPacket(requestId: 4, message: .setVolume(try SpeakerVolume(25))).encode()
        bad[bad.count - 1] ^= 0xFF
        capture.add(control, .outbound, bad)
        let audio = capture.addInterface(linkType: 150, name: "udp", description: "HKWirelessHD audio datagrams; host side")
        capture.add(audio, .outbound, [0x54, 0x41, 0x01, 0x00, 0, 0, 0, 7])
        let clock = capture.addInterface(linkType: 151, name: "udp", description: "HKWirelessHD clock datagrams; host side")
        capture.add(clock, .outbound, Array(ClockDatagram.request(t1: 5).encode().prefix(20)))
        let stream = capture.addInterface(linkType: 152, name: "sim:wearable", description: "Bose Wearable GATT framing; host side")
        capture.add(stream, .inbound, [0x57, 0x00, 0x02, 0x0B, 0x00])  // a read response cut inside its handle
        let att = capture.addInterface(linkType: 153, name: "ble:AA:BB:CC:DD:EE:FF", description: "Bose Wearable ATT; host side")
        capture.add(att, .inbound, [0x1B, 0x0A])  // a notification cut inside its handle
        capture.add(att, .inbound, [0x1B, 0x0A, 0x00, 0x09, 0x00])  // a sensor record of an unknown sensor
        // And noise of every kind: no input makes a dissector fail.
        var random = TestRandom(seed: 0x5EED)
        func next() -> UInt64 { random.next() }
        for interface in 0..<capture.interfaces.count {
            for _ in 0..<40 {
                let count = Int(next() % 300)
                capture.add(interface, next() % 2 == 0 ? .inbound : .outbound, (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) })
            }
        }
        let directory = try TemporaryDirectory.make("tuneup-wireshark")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await capture.write(to: directory + "/broken.pcapng")
        let result = try await Tshark.dissect(directory + "/broken.pcapng", in: directory)
        #expect(result.errors.isEmpty, "\(result.errors.prefix(5))")
        #expect(result.stderr.isEmpty, "tshark said \(result.stderr)")
        #expect(result.packets == capture.packets.count)
        for name in ["lightx.expert.garbage", "lightx.expert.partial", "lightx.expert.truncated", "lightx.expert.hid",
                     "hkwhd.expert.bad_crc", "hkwhd.expert.truncated", "wearable.expert.truncated", "wearable.expert.value"] {
            #expect(result.experts[name, default: 0] > 0, "no \(name): \(result.experts)")
        }
    }
}

/// A wearable's ATT session as a Bluetooth HCI capture would hold it (btmon, LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR):
/// Wireshark's own ATT dissector follows the discovery, and the characteristics' values it hands over by UUID are
/// the wearable dissector's.
@Suite struct WiresharkBluetoothTests {
    @Test func realATTInAnHCICaptureHasItsValuesDecoded() async throws {
        let recording = Recording()
        let (client, server) = try seqpacketPairForHCI()
        let clock = ManualClock()
        let device = SimulatedWearable(profile: WearableProfile(motion: HeadMotion(seed: 3)), clock: clock)
        let serving = Task { await device.serve(server) }
        let wrapped = RecordingTransport(client, recording)
        let wearable = WearableDeviceSession(peer: "ble:client", options: .init(mtu: 247)) { wrapped }
        try await wearable.open()
        let readings = await wearable.sensorReadings()
        _ = try await wearable.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms) }
        for _ in 0..<3 {
            while clock.pendingSleeps == 0 { await Task.yield() }
            clock.advance(by: .milliseconds(40))
        }
        var received = 0
        for await _ in readings { received += 1; if received == 4 { break } }
        await wearable.close()
        await serving.value

        var capture = CaptureFixture()
        let hci = capture.addInterface(linkType: 201, name: "hci0", description: "")
        var valuePDUs = 0
        for chunk in recording.chunks {
            let pdu = chunk.bytes
            let l2cap = [UInt8(pdu.count & 0xFF), UInt8(pdu.count >> 8), 0x04, 0x00] + pdu
            let acl = [0x02, 0x40, 0x20, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap
            capture.add(hci, nil, [0, 0, 0, chunk.direction == .inbound ? 1 : 0] + acl)
            // Values of the service's characteristics: read responses to them, writes and notifications.
            if let opcode = pdu.first, [0x12, 0x1B].contains(opcode) || (opcode == 0x0B && pdu.count > 1) { valuePDUs += 1 }
        }
        let directory = try TemporaryDirectory.make("tuneup-wireshark")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await capture.write(to: directory + "/hci.pcapng")
        let (status, output, errors) = try await Tshark.run(["-n"] + Tshark.scriptArguments + ["-r", directory + "/hci.pcapng", "-T", "fields",
                                                             "-e", "frame.number", "-e", "wearable.characteristic", "-e", "wearable.v.sensor",
                                                             "-e", "_ws.malformed", "-e", "_ws.expert.message"], in: directory)
        #expect(status == 0, "\(errors)")
        let rows = output.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == capture.packets.count)
        // (Wireshark's HCI dissector notes that the capture holds no connection's start: not the dissectors' business.)
        #expect(rows.allSatisfy { $0.count < 4 || ($0[3].isEmpty && ($0.count < 5 || !$0[4].contains("Lua"))) }, "malformed or Lua errors: \(output)")
        let decoded = rows.filter { $0.count > 1 && !$0[1].isEmpty }
        // Every value PDU but the four notification descriptors' (CCCD) writes: no characteristic of the service.
        #expect(decoded.count >= valuePDUs - 4 && decoded.count > 5, "\(decoded.count) values decoded of \(valuePDUs): \(output)")
        #expect(decoded.contains { $0[1].contains("sensorData") && !$0[2].isEmpty }, "a sensor data notification's records")
    }
}

private func seqpacketPairForHCI() throws -> (any Transport, any Transport) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw TransportError(.io, "socketpair: errno \(errno)")
    }
    return (try FileDescriptorTransport(adopting: fds[0], peerDescription: "ble:client", framing: .packets),
            try FileDescriptorTransport(adopting: fds[1], peerDescription: "ble:device", framing: .packets))
}
