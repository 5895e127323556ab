import Capture
import Firmware
import FirmwareUpdate
import Foundation
import Glibc
import Headset
import HeadsetSimulator
import LightX
import Simulator
import Support
import Synchronization
import Testing
import Transport
@_exported import TestSupport

/// The repository's firmware-images/ folder.
let imagesDirectory = repositoryFolder("firmware-images")

/// A transport that keeps every chunk sent through it (what the session asked for, in order).
final class SentBytes: Transport {
    let base: any Transport
    let sent = Mutex<[UInt8]>([])
    init(_ base: any Transport) { self.base = base }
    var peerDescription: String { base.peerDescription }
    var framing: LinkFraming { base.framing }
    func send(_ bytes: [UInt8]) async throws {
        sent.withLock { $0 += bytes }
        try await base.send(bytes)
    }
    func receive() async throws -> [UInt8] { try await base.receive() }
    func close() async { await base.close() }
}

/// Lines handed to a writer's warning.
final class Warnings: Sendable {
    let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
}

/// Runs an update of `image` against `device`, every link wrapped by `wrap`.
func flash(_ device: SimulatedHeadset, _ image: FirmwareImage, wrap: @escaping @Sendable (any Transport) async -> any Transport) async throws -> UpdateResult {
    let options = UpdateOptions(requestTimeout: .seconds(5), readyWait: .seconds(60), reconnectWait: .seconds(60))
    let updater = FirmwareUpdater(image: image, options: options, sessionOptions: LightXSession.Options(timeout: .seconds(2), retransmissions: 2),
                                  connect: { await wrap(await device.connect()) })
    let events = Task { for await _ in updater.progress {} }
    defer { events.cancel() }
    return try await updater.run()
}

@Suite struct CaptureSessionTests {
    /// A flash captured on the host's side: every request the session sent is in the capture, decoded, in order, as
    /// outbound requests; every reply is inbound; the links (application, then bootloader) are interfaces of one file.
    @Test func flashCaptureDecodesToTheSessionsRequests() async throws {
        let directory = try TemporaryDirectory.make("capture")
        let path = directory + "/flash.pcapng"
        let writer = try await CaptureWriter.create(path: path, application: "tuneup test", warn: { _ in })
        let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 0))
        let image = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.5.0.img") }
        let links = Mutex<[SentBytes]>([])
        let capture = LinkCapture(writer: writer, family: .lightX, role: .host)
        let result = try await flash(device, image) { link in
            let recorded = SentBytes(link)
            links.withLock { $0.append(recorded) }
            return capture.wrap(recorded, name: "sim")
        }
        await writer.close()

        let contents = try await CaptureFile.read(path: path)
        #expect(contents.application == "tuneup test")
        let opened = links.withLock { $0 }
        #expect(contents.interfaces.count == opened.count)
        #expect(contents.interfaces.allSatisfy { $0.knownLinkType == .lightXStream && $0.name == "sim" && $0.role == .host })
        let messages = CaptureDecoder.decode(contents)
        #expect(messages.allSatisfy { $0.error == nil })
        for (index, link) in opened.enumerated() {
            var decoder = SPPStreamDecoder()
            decoder.append(link.sent.withLock { $0 })
            let requests = decoder.decodeAll()
            let captured = messages.filter { $0.interface.id == index && $0.direction == .outbound }
            #expect(captured.allSatisfy { $0.field("lightx.kind") == .text("request") })
            #expect(captured.map { $0.field("lightx.command") } == requests.map { .uint(UInt64($0.command.rawValue)) })
            #expect(captured.map { $0.field("lightx.address") } == requests.map { .uint(UInt64($0.address)) })
            #expect(captured.map { $0.field("lightx.buffer_length") } == requests.map { .uint(UInt64($0.buffer.count)) })
            let replies = messages.filter { $0.interface.id == index && $0.direction == .inbound }
            #expect(replies.allSatisfy { $0.field("lightx.kind") == .text("reply") || $0.field("lightx.kind") == .text("push") })
        }
        let writes = messages.filter { $0.field("lightx.command") == .uint(0x27) && $0.direction == .outbound }
        #expect(Set(writes.compactMap { $0.field("lightx.address") }).count * 256 >= result.bytesWritten)
        let verify = try #require(messages.first { $0.field("lightx.command") == .uint(0x2C) && $0.direction == .outbound })
        #expect(verify.field("lightx.arg.sectors") != nil && verify.field("lightx.arg.crc") != nil)
        #expect(messages.map(\.packet) == messages.map(\.packet).sorted())
    }

    /// The device's side (a simulator's server): requests are inbound, replies outbound.
    @Test func deviceSideDirections() async throws {
        let directory = try TemporaryDirectory.make("capture")
        let path = directory + "/sim.pcapng"
        let settings = CaptureSettings(path: path, family: .lightX, role: .device, application: "tuneup test", warn: { _ in })
        let server = try await SimulatorServer.start(count: 1, statePath: nil, options: SimulatorOptions(timeScale: 0))
        server.wrapLinks { try await settings.wrap($0, name: "client") }
        let (host, deviceEnd) = InMemoryTransport.pair()
        let served = try server.serve(link: deviceEnd, onDevice: 0)
        let headset = Headset(session: LightXSession(transport: host, options: LightXSession.Options(timeout: .seconds(10), retransmissions: 2)))
        _ = try await headset.firmwareVersion()
        await headset.close()
        await served.value
        await server.shutdown()
        let writer = try await settings.writer()
        await writer.close()

        let contents = try await CaptureFile.read(path: path)
        #expect(contents.interfaces.map(\.role) == [.device])
        #expect(contents.interfaces.first?.description == "LightX over SPP; device side")
        let messages = CaptureDecoder.decode(contents)
        let requests = messages.filter { $0.direction == .inbound }
        let replies = messages.filter { $0.direction == .outbound }
        #expect(!requests.isEmpty && !replies.isEmpty)
        #expect(requests.allSatisfy { $0.field("lightx.kind") == .text("request") })
        #expect(replies.allSatisfy { $0.field("lightx.kind") == .text("reply") || $0.field("lightx.kind") == .text("push") })
    }

    /// A full disk (/dev/full: every write fails with ENOSPC) ends the capture with one warning; the flash completes.
    @Test func fullDiskWarnsOnceAndTheFlashGoesOn() async throws {
        let fd = try await offThePool { open("/dev/full", O_WRONLY | O_CLOEXEC) }
        try #require(fd >= 0)
        let warnings = Warnings()
        let writer = CaptureWriter(fileDescriptor: fd, path: "/dev/full", warn: warnings.sink)
        let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 0))
        let image = try await offThePool { try FirmwareImage.load(path: imagesDirectory + "/app-1.4.3-small.img") }
        let capture = LinkCapture(writer: writer, family: .lightX)
        let result = try await flash(device, image) { capture.wrap($0) }
        await writer.close()
        #expect(result.newVersion?.hasPrefix("1.4.3") == true)
        #expect(writer.failed)
        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("No space left on device") == true, "\(warnings.all)")
    }

    /// The output rule: an existing file, a symbolic link and a FIFO are refused, each with one line; none is touched.
    @Test func existingLinksAndFIFOsAreRefused() async throws {
        let directory = try TemporaryDirectory.make("capture")
        let existing = directory + "/old.pcapng"
        try await offThePool { try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing)) }
        let link = directory + "/link.pcapng"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory + "/target.pcapng")
        let fifo = directory + "/fifo.pcapng"
        #expect(mkfifo(fifo, 0o600) == 0)
        for (path, code) in [(existing, OutputFileError.Code.exists), (link, .symbolicLink), (fifo, .notRegularFile)] {
            let error = await #expect(throws: OutputFileError.self) { try await CaptureWriter.create(path: path, application: "t", warn: { _ in }) }
            #expect(error?.code == code)
            #expect(error?.message.contains("\n") == false)
        }
        #expect(try await offThePool { try String(contentsOfFile: existing, encoding: .utf8) } == "keep me")
        #expect(!FileManager.default.fileExists(atPath: directory + "/target.pcapng"))
    }
}
