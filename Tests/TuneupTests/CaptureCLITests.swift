import Capture
import Foundation
import Glibc
import Spawn
import Testing

/// `--capture` and `tuneup capture show` (docs/capture.md).
@Suite(.serialized) struct CaptureCLITests {
    /// The tool's side and the simulator's side of one probe: the same requests, outbound on one and inbound on the
    /// other; `capture show` prints them.
    @Test func probeCapturedOnBothSides() async throws {
        let directory = Scratch.directory
        let simFile = directory + "/sim.pcapng", hostFile = directory + "/host.pcapng"
        let sim = try await RunningSimulator.start(["--time-scale", "0", "--capture", simFile])
        let r = try await CLI.run(["probe", "--device", sim.addresses[0], "--capture", hostFile])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(await sim.quit() == 0)

        let host = CaptureDecoder.decode(try await CaptureFile.read(path: hostFile))
        let device = CaptureDecoder.decode(try await CaptureFile.read(path: simFile))
        let hostRequests = host.filter { $0.direction == .outbound }
        let deviceRequests = device.filter { $0.direction == .inbound }
        #expect(!hostRequests.isEmpty)
        #expect(hostRequests.allSatisfy { $0.field("lightx.kind") == .text("request") })
        #expect(deviceRequests.allSatisfy { $0.field("lightx.kind") == .text("request") })
        #expect(hostRequests.map { $0.field("lightx.command") } == deviceRequests.map { $0.field("lightx.command") })
        #expect(host.filter { $0.direction == .inbound }.map { $0.field("lightx.command") }
                == device.filter { $0.direction == .outbound }.map { $0.field("lightx.command") })
        #expect(host.first?.interface.name == sim.addresses[0])

        let shown = try await CLI.run(["capture", "show", hostFile, "--format", "json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let report = try json(shown.stdout)
        let messages = try #require(report["messages"] as? [[String: Any]])
        #expect(messages.count == host.count)
        #expect((messages.first?["fields"] as? [String: Any])?["lightx.kind"] as? String == "request")
        let text = try await CLI.run(["capture", "show", hostFile])
        #expect(text.status == 0 && text.stdout.contains("request Read ConfigProductName"), "\(text.stdout.prefix(600))")
    }

    /// A speaker play: the control link and the audio datagrams, in one file, decoded without an error.
    @Test func speakerPlayCapturesControlAndAudio() async throws {
        let file = Scratch.directory + "/play.pcapng"
        let pcm = [UInt8](repeating: 0x11, count: 44_100)  // a quarter of a second of s16le stereo
        let r = try await CLI.run(["speaker", "play", "-", "--raw", "s16le:44100:2", "--speaker", "sim:speaker", "--capture", file],
                                  stdin: String(decoding: pcm, as: UTF8.self))
        #expect(r.status == 0, "\(r.stderr)")
        let contents = try await CaptureFile.read(path: file)
        #expect(contents.interfaces.first?.knownLinkType == .hkwhdControl && contents.interfaces.first?.name == "sim:speaker")
        #expect(contents.interfaces.contains { $0.knownLinkType == .hkwhdAudio && $0.name.hasPrefix("udp:127.0.0.1:") })
        let messages = CaptureDecoder.decode(contents)
        #expect(messages.allSatisfy { $0.error == nil }, "\(messages.filter { $0.error != nil }.prefix(3).map(\.summary))")
        #expect(messages.contains { $0.field("hkwhd.audio.sequence") != nil && $0.direction == .outbound })
        #expect(messages.contains { $0.field("hkwhd.type") == .uint(0x0E) && $0.direction == .outbound })  // play
    }

    /// The speaker's side: `sim speaker --capture` records the control links it serves, requests inbound.
    @Test func simSpeakerCapturesItsSide() async throws {
        let file = Scratch.directory + "/sim-speaker.pcapng"
        let sim = try await RunningSimulator.start(["--discovery-port", "0", "--capture", file], kind: "speaker")
        let r = try await CLI.run(["speaker", "info", "--speaker", sim.addresses[0]])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(await sim.quit() == 0)
        let contents = try await CaptureFile.read(path: file)
        #expect(contents.interfaces.map(\.role) == [.device] && contents.interfaces.first?.knownLinkType == .hkwhdControl)
        let messages = CaptureDecoder.decode(contents)
        #expect(messages.filter { $0.direction == .inbound }.map { $0.field("hkwhd.type") }.prefix(2) == [.uint(0x01), .uint(0x02)])
        #expect(messages.filter { $0.direction == .outbound }.allSatisfy {
            guard case let .uint(type)? = $0.field("hkwhd.type") else { return false }
            return type >= 0x40
        })
    }

    /// The speaker's side of a discovery and a play (issue 32 §1): `sim speaker --capture` records the discovery query
    /// it got and its answer, the audio datagrams it received, the clock-sync requests it answered and its replies,
    /// each on an interface of its own named by the controller's address, and every one decodes.
    @Test func simSpeakerCapturesItsDatagrams() async throws {
        let file = Scratch.directory + "/sim-speaker-datagrams.pcapng"
        let port = UInt16.random(in: 47000...48999)  // discovery on a port of this test's own
        let sim = try await RunningSimulator.start(["--discovery-port", String(port), "--capture", file], kind: "speaker")
        let list = try await CLI.run(["speaker", "list", "--discovery-target", "127.0.0.1:\(port)", "--window", "0.5"])
        #expect(list.status == 0, "\(list.stderr)")
        let pcm = [UInt8](repeating: 0x11, count: 88_200)  // half a second of s16le stereo
        let r = try await CLI.run(["speaker", "play", "-", "--raw", "s16le:44100:2", "--speaker", sim.addresses[0]],
                                  stdin: String(decoding: pcm, as: UTF8.self))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(await sim.quit() == 0)

        let contents = try await CaptureFile.read(path: file)
        #expect(contents.interfaces.allSatisfy { $0.role == .device })
        for type in [CaptureLinkType.hkwhdAudio, .hkwhdClock, .hkwhdDiscovery] {
            #expect(contents.interfaces.contains { $0.knownLinkType == type && $0.name.hasPrefix("udp:127.0.0.1:") },
                    "no \(type) interface: \(contents.interfaces.map(\.name))")
        }
        let messages = CaptureDecoder.decode(contents)
        #expect(messages.allSatisfy { $0.error == nil }, "\(messages.filter { $0.error != nil }.prefix(3).map(\.summary))")
        func on(_ type: CaptureLinkType, _ direction: CaptureDirection) -> [DecodedMessage] {
            messages.filter { $0.interface.knownLinkType == type && $0.direction == direction }
        }
        #expect(on(.hkwhdAudio, .inbound).contains { $0.field("hkwhd.audio.sequence") != nil })
        #expect(on(.hkwhdAudio, .outbound).isEmpty)
        #expect(!on(.hkwhdClock, .inbound).isEmpty && on(.hkwhdClock, .inbound).allSatisfy { $0.field("hkwhd.clock.type") == .uint(1) })
        #expect(!on(.hkwhdClock, .outbound).isEmpty && on(.hkwhdClock, .outbound).allSatisfy { $0.field("hkwhd.clock.type") == .uint(2) })
        #expect(on(.hkwhdDiscovery, .inbound).contains { $0.field("hkwhd.discovery.type") == .uint(1) })
        let controlPort = UInt64(sim.addresses[0].split(separator: ":").last.flatMap { UInt64($0) } ?? 0)
        #expect(on(.hkwhdDiscovery, .outbound).contains { $0.field("hkwhd.discovery.control_port") == .uint(controlPort) },
                "\(on(.hkwhdDiscovery, .outbound).map(\.summary))")
    }

    /// `speaker receive --capture` records its side as `sim speaker` does: the control link and the datagrams.
    @Test func speakerReceiveCapturesItsSide() async throws {
        let dir = Scratch.directory
        let file = dir + "/receive.pcapng"
        let receiver = try await SpeakerReceiveCLITests.Receiver.start(dir, extra: ["--capture", file])
        defer { if receiver.process.isRunning { receiver.process.terminate() } }
        let pcm = [UInt8](repeating: 0x11, count: 96_000)  // half a second of s16le stereo at 48 kHz
        let play = try await CLI.run(["speaker", "play", "-", "--raw", "s16le:48000:2", "--speaker", receiver.address],
                                     stdin: String(decoding: pcm, as: UTF8.self))
        #expect(play.status == 0, "\(play.stderr)")
        let (status, stderr) = try await receiver.quit()
        #expect(status == 0, "\(stderr)")

        let contents = try await CaptureFile.read(path: file)
        #expect(contents.interfaces.allSatisfy { $0.role == .device })
        #expect(contents.interfaces.contains { $0.knownLinkType == .hkwhdControl })
        let messages = CaptureDecoder.decode(contents)
        #expect(messages.allSatisfy { $0.error == nil }, "\(messages.filter { $0.error != nil }.prefix(3).map(\.summary))")
        #expect(messages.contains { $0.interface.knownLinkType == .hkwhdAudio && $0.direction == .inbound && $0.field("hkwhd.audio.sequence") != nil })
        #expect(messages.contains { $0.interface.knownLinkType == .hkwhdClock && $0.direction == .outbound && $0.field("hkwhd.clock.type") == .uint(2) })
    }

    /// A wearable session: requests out, responses and notifications in, Tuneup's GATT framing named.
    @Test func wearableInfoCaptured() async throws {
        let file = Scratch.directory + "/wearable.pcapng"
        let r = try await CLI.run(["wearable", "info", "--device", "sim:wearable", "--capture", file])
        #expect(r.status == 0, "\(r.stderr)")
        let contents = try await CaptureFile.read(path: file)
        #expect(contents.interfaces.map(\.knownLinkType) == [.wearableStream])
        let messages = CaptureDecoder.decode(contents)
        #expect(messages.allSatisfy { $0.error == nil })
        let requests: Set<UInt64> = [0x02, 0x0A, 0x10, 0x12]
        for m in messages {
            guard case let .uint(op)? = m.field("wearable.opcode") else { Issue.record("no opcode: \(m.summary)"); continue }
            #expect(requests.contains(op) == (m.direction == .outbound), "\(m.summary)")
        }
    }

    /// Not a capture, or one cut mid-block: one line, exit 65.
    @Test func badFilesAreRefusedWithOneLine() async throws {
        let directory = Scratch.directory
        let garbage = directory + "/garbage.pcapng"
        try await offThePool { try Data("this is not a capture at all".utf8).write(to: URL(fileURLWithPath: garbage)) }
        let r = try await CLI.run(["capture", "show", garbage])
        #expect(r.status == 65)
        #expect(r.stderrLines.count == 1 && r.stderr.contains("not a pcapng capture"), "\(r.stderr)")

        var file = PcapNG.sectionHeader(application: "t")
        file += PcapNG.interfaceDescription(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        let cutAt = file.count
        file += PcapNG.enhancedPacket(interface: 0, timestamp: 1, direction: .outbound, data: [1, 2, 3])
        let cut = directory + "/cut.pcapng"
        let cutBytes = Data(file.prefix(file.count - 5))
        try await offThePool { try cutBytes.write(to: URL(fileURLWithPath: cut)) }
        let c = try await CLI.run(["capture", "show", cut])
        #expect(c.status == 65)
        #expect(c.stderrLines.count == 1 && c.stderr.contains("block 3 at offset \(cutAt)"), "\(c.stderr)")

        let missing = try await CLI.run(["capture", "show", directory + "/none.pcapng"])
        #expect(missing.status == 74 && missing.stderrLines.count == 1, "\(missing.stderr)")
    }

    /// An existing file is never replaced: one line, exit 74, the file as it was, the device not touched.
    @Test func existingFileIsRefused() async throws {
        let existing = Scratch.directory + "/old.pcapng"
        try await offThePool { try Data("keep".utf8).write(to: URL(fileURLWithPath: existing)) }
        let r = try await CLI.run(["probe", "--capture", existing])
        #expect(r.status == 74)
        #expect(r.stderrLines.count == 1 && r.stderr.contains("exists"), "\(r.stderr)")
        #expect(try await offThePool { try String(contentsOfFile: existing, encoding: .utf8) } == "keep")
    }

    /// A flash killed with SIGKILL mid-transfer leaves a capture that reads whole (every block written whole), with
    /// the image writes it got to.
    @Test func sigkillMidFlashLeavesWholeBlocks() async throws {
        let file = Scratch.directory + "/killed.pcapng"
        let sim = try await RunningSimulator.start(["--time-scale", "1"])
        let flash = try ChildProcess(CLI.binary.path, ["flash", images + "/app-1.5.0.img", "--device", sim.addresses[0], "--capture", file],
                                     environment: ["XDG_STATE_HOME": Scratch.directory, "TUNEUP_DEVICE": nil], stdin: .pipe)
        flash.closeInput()
        try await waitUntil("the flash's capture to pass 96 KiB", within: 120) {
            ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) > 96 * 1024
        }
        flash.signal(SIGKILL)
        _ = try await exitStatus(of: flash)
        _ = await sim.stop()
        let contents = try await CaptureFile.read(path: file)
        let writes = CaptureDecoder.decode(contents).filter { $0.field("lightx.command") == .uint(0x27) && $0.direction == .outbound }
        #expect(!writes.isEmpty)
    }
}

/// Issue 32 §4: `tuneup sim headset --emulate` replays a flash recorded on the simulator's side over TCP, the
/// re-enumeration included.
@Suite(.serialized) struct EmulationCLITests {
    @Test func recordedFlashReplaysAgainstTheSameFlash() async throws {
        let file = Scratch.directory + "/recorded.pcapng"
        let image = images + "/app-1.4.3-small.img"
        let sim = try await RunningSimulator.start(["--time-scale", "0", "--capture", file])
        let recorded = try await CLI.run(["flash", image, "--device", sim.addresses[0]])
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(await sim.quit() == 0)

        let emulated = try await RunningSimulator.start(["--emulate", file])
        let replay = try await CLI.run(["flash", image, "--device", emulated.addresses[0]])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(try await exitStatus(of: emulated.process) == 0)
        #expect(await emulated.errors.text().contains("emulation complete"))
    }

    /// A recorded flash cut in the middle of a block: refused before listening (no address on stdout), one line
    /// naming the block and its offset, exit 65 (bad data, docs/cli.md).
    @Test func captureCutMidBlockIsRefusedWithTheBlockNamed() async throws {
        let file = Scratch.directory + "/recorded.pcapng"
        let sim = try await RunningSimulator.start(["--time-scale", "0", "--capture", file])
        let recorded = try await CLI.run(["flash", images + "/app-1.4.3-small.img", "--device", sim.addresses[0]])
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(await sim.quit() == 0)

        let bytes = try await offThePool { Array(try Data(contentsOf: URL(fileURLWithPath: file))) }
        // The block that holds the middle of the file, cut in its middle.
        var offset = 0, number = 0, length = 0
        while offset + 8 <= bytes.count {
            number += 1
            length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
            if bytes.count / 2 < offset + length || length < 12 { break }
            offset += length
        }
        try #require(length >= 12 && offset + length <= bytes.count)
        let cut = Scratch.directory + "/cut.pcapng"
        let cutBytes = Data(bytes.prefix(offset + length / 2))
        try await offThePool { try cutBytes.write(to: URL(fileURLWithPath: cut)) }

        let r = try await CLI.run(["sim", "headset", "--emulate", cut])
        #expect(r.status == 65)
        #expect(r.stdout.isEmpty, "it listened: \(r.stdout)")
        #expect(r.stderrLines.count == 1 && r.stderr.contains("block \(number) at offset \(offset)"), "\(r.stderr)")
    }
}
