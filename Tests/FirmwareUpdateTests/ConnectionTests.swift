import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import Simulator
import Testing
import Transport

/// Opening the device, and losing and finding it again.
@Suite struct ConnectionTests {
    /// A device that cannot be opened at all (no such port, nothing listening, a corrupt simulator file) fails at
    /// once with the error as it is: the reconnect wait is for a device coming back, not for one never there.
    @Test func firstOpenFailsAtOnceWithItsOwnError() async throws {
        let image = try sampleImage("app-1.4.3-small.img")
        let attempts = Counter()
        let refusal = TransportError(.notFound, "serial:/nonexistent: no such device")
        let connect: @Sendable () async throws -> any Transport = {
            _ = attempts.next()
            throw refusal
        }
        let options = testOptions(wait: .seconds(30))
        let started = ContinuousClock.now
        let updater = FirmwareUpdater(image: image, options: options, sessionOptions: fastSession, connect: connect)
        do {
            _ = try await updater.run()
            Issue.record("the update succeeded without a device")
        } catch let error as TransportError {
            #expect(error.code == .notFound)
            #expect(error.message == refusal.message)
        }
        #expect(ContinuousClock.now - started < .seconds(1), "failed at once, not after the 30 s wait")
        #expect(attempts.count == 1)

        // The bootloader commands and `firmware read` too.
        let client = BootloaderClient(sessionOptions: fastSession, wait: .seconds(30), connect: connect)
        let again = ContinuousClock.now
        await #expect(throws: TransportError.self) { _ = try await client.status() }
        await #expect(throws: TransportError.self) { try await client.enter() }
        await #expect(throws: TransportError.self) { _ = try await client.read(.application, length: 256) }
        #expect(ContinuousClock.now - again < .seconds(1))
        await client.close()
    }
}
