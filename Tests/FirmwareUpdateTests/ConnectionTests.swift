import Firmware
import FirmwareUpdate
import Foundation
import Synchronization
import Headset
import LightX
import HeadsetSimulator
import Testing
import Transport

/// Opening the device, and losing and finding it again.
@Suite struct ConnectionTests {
    /// A device that cannot be opened at all (no such port, nothing listening, a corrupt simulator file) fails at
    /// once with the error as it is: the reconnect wait is for a device coming back, not for one never there. (The
    /// wait is an hour: a test that waited it out would trip the time limit; one open attempt shows none was made.)
    @Test(.timeLimit(.minutes(2))) func firstOpenFailsAtOnceWithItsOwnError() async throws {
        let image = try sampleImage("app-1.4.3-small.img")
        let attempts = Counter()
        let refusal = TransportError(.notFound, "serial:/nonexistent: no such device")
        let connect: @Sendable () async throws -> any Transport = {
            _ = attempts.next()
            throw refusal
        }
        let options = testOptions(wait: .seconds(3600))
        let updater = FirmwareUpdater(image: image, options: options, sessionOptions: fastSession, connect: connect)
        do {
            _ = try await updater.run()
            Issue.record("the update succeeded without a device")
        } catch let error as TransportError {
            #expect(error.code == .notFound)
            #expect(error.message == refusal.message)
        }
        #expect(attempts.count == 1, "tried again instead of failing with the first error")

        // The bootloader commands and `firmware read` too.
        let client = BootloaderClient(sessionOptions: fastSession, wait: .seconds(3600), connect: connect)
        await #expect(throws: TransportError.self) { _ = try await client.status() }
        await #expect(throws: TransportError.self) { try await client.enter() }
        await #expect(throws: TransportError.self) { _ = try await client.read(.application, length: 256) }
        await client.close()
    }
}

/// A link that goes down as soon as the host sends a flash write (BootWriteImage 0x27): no block can ever be
/// acknowledged on it.
final class DropsOnWrite: Transport {
    let inner: any Transport
    init(_ inner: any Transport) { self.inner = inner }
    var peerDescription: String { inner.peerDescription }
    var framing: LinkFraming { inner.framing }
    func send(_ bytes: [UInt8]) async throws {
        // An SPP frame: ff 5a, length, then the header; the command is byte 13.
        if bytes.count > 13, bytes[0] == 0xFF, bytes[1] == 0x5A, bytes[13] == Command.bootWriteImage.rawValue {
            await inner.close()
            throw TransportError(.closed, "the test link went down at a flash write")
        }
        try await inner.send(bytes)
    }
    func receive() async throws -> [UInt8] { try await inner.receive() }
    func close() async { await inner.close() }
}

extension ConnectionTests {
    /// issue 7 item 2: a link that drops every 3000 bytes made `flash` erase sector 0 again on every reconnect and
    /// never finish. What was acknowledged is kept: the update completes after a few reconnects.
    @Test func linkDroppingEvery3000BytesCompletes() async throws {
        let faults = FaultPlan(link: LinkConditions(disconnectAfterBytes: 3000))
        let device = try await makeDevice(SimulatorOptions(timeScale: 0, faults: faults))
        let image = try sampleImage("app-1.4.3-small.img")
        let before = await device.flashStatistics
        let (result, events) = try await update(device, image)
        #expect(result.newVersion == "1.4.3")
        #expect(result.reconnects >= 1 && result.reconnects <= 12, "\(result.reconnects) reconnects")
        let after = await device.flashStatistics
        // A reconnect redoes an erase only when the link dropped before the erase was acknowledged (under load that
        // is a few of the reconnects: CI saw 4 redone); the bug erased again on every reconnect.
        let erases = after.erases - before.erases
        #expect(erases - result.sectors < max(3, result.reconnects),
                "sectors are erased again on every reconnect: \(erases) erases for \(result.sectors) sectors, \(result.reconnects) reconnects")
        #expect(events.contains { $0.phase == .reconnect })
        let flash = await device.flashContents(of: .application)
        #expect(Array(flash.prefix(image.bytes.count)) == image.bytes)
        await device.shutdown()
    }

    /// A link that can never carry a write to its acknowledgement ends with `disconnected` after a bounded number
    /// of fruitless reconnects, not after the whole wait (an hour: waiting it out would trip the time limit).
    @Test(.timeLimit(.minutes(3))) func linkThatNeverGetsABlockThroughStops() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.4.3-small.img")
        let opened = Counter()
        do {
            _ = try await update(device, image, options: testOptions(wait: .seconds(3600))) {
                _ = opened.next()
                return DropsOnWrite(await device.connect())
            }
            Issue.record("the update completed over a link that cannot write")
        } catch let error as UpdateError {
            #expect(error.code == .disconnected, "\(error.message)")
            #expect(error.message.contains("5 reconnects in a row without progress"), "\(error.message)")
        }
        // Each loss halves the window until a lone erase gets through (progress); then five fruitless links.
        #expect(opened.count <= 10, "\(opened.count) links opened")
        // The device keeps running: the bootloader, ready for another attempt.
        #expect(await device.runningImage == .bootloader)
        await device.shutdown()
    }

    /// issue 7 item 7: an update that loses its device mid-transfer (a lost link, a power cut) and resumes reports
    /// the reconnection, keeps the whole image's totals with a monotonic fraction, and counts in its result every
    /// byte written, the sectors the resume kept and the reconnects.
    @Test(arguments: ["disconnect", "power cut"])
    func resumeWithinARunIsReported(_ how: String) async throws {
        let probe = try await makeDevice()
        let first = await probe.flashStatistics.operations
        await probe.shutdown()
        // About 60 KB into the image (erases and page programs are flash operations).
        let faults = how == "power cut" ? FaultPlan(powerCutAt: [first + 300], seed: 1) : .none
        let device = try await makeDevice(SimulatorOptions(timeScale: 0, faults: faults))
        let image = try sampleImage("app-2.0.0.img")
        let links = Counter()
        let (result, events) = try await update(device, image) {
            let link = await device.connect()
            guard how == "disconnect", links.next() == 1 else { return link }
            return ConditionedTransport(wrapping: link, conditions: LinkConditions(disconnectAfterBytes: 80_000))
        }
        #expect(result.newVersion == "2.0.0")
        #expect(result.reconnects >= 1)
        let plan = (0..<FlashRegion.sectorCount(forLength: image.bytes.count)).map { s in
            stride(from: s * 4096, to: min(image.bytes.count, s * 4096 + 4096), by: 256).filter { o in
                image.bytes[o..<min(image.bytes.count, o + 256)].contains { $0 != 0xFF }
            }.count
        }.reduce(0, +) * 256
        // Only the writes in flight when the link went down may have gone unacknowledged (and then been found in
        // place): the count covers both connections, not only the last.
        #expect(result.bytesWritten >= plan - result.maxWindow * 256 && result.bytesWritten <= plan + result.maxWindow * 256,
                "every acknowledged byte counts, over both connections: \(result.bytesWritten) of \(plan)")
        #expect(result.skippedSectors > 0, "the resume kept the sectors written before the loss")
        // A reconnect event as soon as the link was lost, with the attempt number.
        let reconnect = try #require(events.first { $0.phase == .reconnect })
        #expect(reconnect.message?.contains("attempt 1") == true, "\(reconnect.message ?? "")")
        // The whole image's totals throughout; the fraction never goes back.
        let transfer = events.filter { $0.phase == .erase || $0.phase == .write }
        #expect(Set(transfer.map(\.bytesTotal)) == [plan])
        #expect(Set(transfer.map(\.sectorsTotal)) == [result.sectors])
        #expect(transfer.allSatisfy { $0.bytesWritten <= $0.bytesTotal })
        let fractions = events.map(\.fraction)
        #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "progress went backwards")
        #expect(events.last?.phase == .done)
        await device.shutdown()
    }

    /// A link that opens but on which the device never answers (a wrong tty such as /dev/null, a port that accepts and
    /// hangs up, a silent device) fails with its first error too, not after the reconnect wait (an hour: waiting it
    /// out would trip the time limit). The silent device's requests time out at once: nothing could answer them.
    @Test(.timeLimit(.minutes(2)), arguments: [true, false])
    func aDeviceThatNeverAnsweredIsNotWaitedFor(hangsUp: Bool) async throws {
        let image = try sampleImage("app-1.4.3-small.img")
        let attempts = Counter()
        let connect: @Sendable () async throws -> any Transport = {
            _ = attempts.next()
            let (host, device) = InMemoryTransport.pair()
            if hangsUp { await device.close() } else { Task { _ = device; try? await Task.sleep(for: .seconds(3600)) } }
            return host
        }
        let silent = LightXSession.Options(timeout: .milliseconds(100), retransmissions: 0)
        let updater = FirmwareUpdater(image: image, options: testOptions(wait: .seconds(3600)), sessionOptions: silent, connect: connect)
        do {
            _ = try await updater.run()
            Issue.record("the update succeeded without a device")
        } catch let error as HeadsetError {
            #expect(error.category == .connection, "\(error)")
        }
        #expect(attempts.count == 1, "tried again instead of failing with the first error")
        let client = BootloaderClient(sessionOptions: silent, wait: .seconds(3600), connect: connect)
        await #expect(throws: HeadsetError.self) { _ = try await client.status() }
        await client.close()
    }
}

/// The updater's waits on the injected clock: a device lost mid-transfer that never comes back is given up after the
/// reconnect wait of the updater's clock, with its backed-off attempts, and no real second of it is waited for.
@Suite struct UpdaterClockTests {
    @Test(.timeLimit(.minutes(2))) func aDeviceThatDoesNotComeBackIsGivenUpAfterTheReconnectWaitOnTheInjectedClock() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.4.3-small.img")
        let clock = ManualClock()
        let attempts = Counter()
        let updater = FirmwareUpdater(image: image, options: testOptions(wait: .seconds(30)), sessionOptions: fastSession, clock: clock) {
            guard attempts.next() == 1 else { throw TransportError(.notFound, "tcp:sim: the device is gone") }
            return ConditionedTransport(wrapping: await device.connect(), conditions: LinkConditions(disconnectAfterBytes: 6000))
        }
        let done = Counter()
        let run = Task {
            defer { _ = done.next() }
            return try await updater.run()
        }
        // Until the link is lost, virtual time stands still (no request times out however slow the machine). From the
        // first reconnect attempt on, the only sleeps are the reconnect pauses: each is run out at once.
        try await waitUntil("the link is lost and reconnecting", within: 60) { attempts.count >= 2 || done.count > 0 }
        var advanced = Duration.zero
        while advanced < .seconds(120) {
            try await waitUntil("a reconnect pause or the end", within: 60) { clock.pendingSleeps > 0 || done.count > 0 }
            if done.count > 0 { break }
            guard let next = clock.nextDeadline else { continue }
            let step = max(next - clock.now.offset, .milliseconds(1))
            clock.advance(by: step)
            advanced += step
            await Task.yield()
        }
        do {
            _ = try await run.value
            Issue.record("the update completed without its device")
        } catch let error as UpdateError {
            #expect(error.code == .disconnected && error.message.contains("did not come back within 30 s"), "\(error.message)")
        }
        // Backed off from 50 ms to 1 s: 5 attempts in the first 1.55 s, then one a second: about 30, never a flood.
        #expect((20...40).contains(attempts.count - 1), "\(attempts.count - 1) reconnect attempts in 30 virtual seconds")
        #expect(advanced >= .seconds(29) && advanced <= .seconds(32), "virtual time run out: \(advanced)")
        await device.shutdown()
    }
}

/// `imageLength(in:)` needs the header and the TLV info: it reads 36 bytes, not the whole image.
@Suite struct ImageLengthTests {
    @Test func readsOnlyTheHeaderAndTheTLVInfo() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.5.0.img")
        _ = try await update(device, image)
        let links = Mutex<[ConditionedTransport]>([])
        let client = BootloaderClient(sessionOptions: fastSession, wait: .seconds(10)) {
            let link = ConditionedTransport(wrapping: await device.connect(), conditions: LinkConditions())
            links.withLock { $0.append(link) }
            return link
        }
        try await client.enter()
        let before = links.withLock { $0.reduce(0) { $0 + $1.statistics.incoming.bytes } }
        #expect(try await client.imageLength(in: .application) == image.bytes.count)
        let read = links.withLock { $0.reduce(0) { $0 + $1.statistics.incoming.bytes } } - before
        #expect(read < 2_000, "\(read) bytes came back for a \(image.bytes.count)-byte image")
        await client.close()
        await device.shutdown()
    }
}

/// Progress for many consumers: one that subscribed before the update and one that came in the middle see the same
/// events (the late one gets those already sent first), each with a fraction that never goes back.
@Suite struct ProgressConsumersTests {
    @Test func lateAndEarlyConsumersSeeTheSameEvents() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.4.3-small.img")
        let updater = FirmwareUpdater(image: image, options: testOptions(), sessionOptions: fastSession) { await device.connect() }
        let early = updater.progress
        let collectEarly = Task { var all: [UpdateProgress] = []; for await e in early { all.append(e) }; return all }
        let late = Task { () -> [UpdateProgress] in
            var all: [UpdateProgress] = []
            // Subscribe once the transfer has begun.
            for await e in updater.progress where e.phase == .write { break }
            for await e in updater.progress { all.append(e) }
            return all
        }
        _ = try await updater.run()
        let a = await collectEarly.value, b = await late.value
        #expect(a.count > 5 && a == b, "\(a.count) early events, \(b.count) late")
        #expect(zip(a, a.dropFirst()).allSatisfy { $0.fraction <= $1.fraction })
        #expect(a.last?.phase == .done && a.last?.fraction == 1)
        await device.shutdown()
    }
}
