import Capture
import Firmware
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
        let path = try TemporaryDirectory.make("emulation") + "/flash.pcapng"
        let writer = try await CaptureWriter.create(path: path, application: "tuneup test", warn: { _ in })
        let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 0))
        let capture = LinkCapture(writer: writer, family: .lightX)
        _ = try await flash(device, image) { capture.wrap($0, name: "sim") }
        await writer.close()
        await device.shutdown()
        return try await CaptureFile.read(path: path)
    }

    /// Flashes `image` against an emulator of `script`: every link the updater opens is served by it.
    /// `wait`: how long the updater waits for the device to come back (long, unless it is to fail).
    func flashEmulated(_ script: EmulationScript, _ image: FirmwareImage, wait: Duration = .seconds(60)) async -> (Result<UpdateResult, any Error>, HeadsetEmulator.Outcome) {
        let emulator = HeadsetEmulator(script)
        let options = UpdateOptions(requestTimeout: .seconds(5), readyWait: wait, reconnectWait: wait)
        let updater = FirmwareUpdater(image: image, options: options, sessionOptions: LightXSession.Options(timeout: .seconds(2), retransmissions: 1),
                                      connect: {
                                          let (host, device) = InMemoryTransport.pair()
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
