import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import HeadsetSimulator
import Synchronization
import Testing
import Transport
@_exported import TestSupport

/// The repository's firmware-images/ folder.
let imagesDirectory = repositoryFolder("firmware-images")

func sampleImage(_ name: String, region: FlashRegion? = nil) throws -> FirmwareImage {
    try FirmwareImage.load(path: imagesDirectory + "/" + name, region: region)
}

/// A fresh simulated headset with instant flash timing (no state file).
func makeDevice(_ options: SimulatorOptions = SimulatorOptions(timeScale: 0)) async throws -> SimulatedHeadset {
    try await SimulatedHeadset(statePath: nil, options: options)
}

/// Updater options for tests. The request timeout is what a lost request costs: the tests whose subject is loss
/// recovery (faulty links) make it short; elsewhere nothing is lost, and a short one would turn a loaded machine's
/// delays into resends that spend a fault plan's byte or operation budget differently from run to run. The readiness
/// and reconnection waits are long for the same reason (a device at time scale 0 is ready at once).
func testOptions(window: Int? = nil, wait: Duration = .seconds(60), requestTimeout: Duration = .seconds(5)) -> UpdateOptions {
    UpdateOptions(window: window, requestTimeout: requestTimeout, readyWait: wait, reconnectWait: wait)
}

/// The updater's session in tests. Its timeout is what a lost request costs on the faulty links, so it stays short; but
/// a control request fails the update after three timeouts in a row, so it must outlast a loaded machine's stalls
/// (500 ms did not always).
let fastSession = LightXSession.Options(timeout: .seconds(2), retransmissions: 2)

/// For reading the device after an update: every reply must come, so wait long (a slow reply is not a lost one).
let checkSession = LightXSession.Options(timeout: .seconds(10), retransmissions: 2)

/// Runs an update against `device`, collecting its progress events.
func update(_ device: SimulatedHeadset, _ image: FirmwareImage, options: UpdateOptions = testOptions(),
            connect: (@Sendable () async throws -> any Transport)? = nil) async throws -> (UpdateResult, [UpdateProgress]) {
    let updater = FirmwareUpdater(image: image, options: options, sessionOptions: fastSession,
                                  connect: connect ?? { await device.connect() })
    let events = Task { var all: [UpdateProgress] = []; for await e in updater.progress { all.append(e) }; return all }
    do {
        let result = try await updater.run()
        return (result, await events.value)
    } catch {
        _ = await events.value
        throw error
    }
}

/// The running application's version, read over a fresh link.
func runningVersion(_ device: SimulatedHeadset) async throws -> FirmwareVersion {
    let headset = Headset(session: LightXSession(transport: await device.connect(), options: checkSession))
    defer { Task { await headset.close() } }
    return try await headset.firmwareVersion()
}

/// A counter shared with closures.
final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
}

/// Starts an update of `image` whose link dies after `bytes` and that cannot reconnect: it stops at once, like a
/// killed tool (cancellation ends its reconnect loop; a short ready wait could end it before `bytes` on a loaded
/// machine). Records an issue if the update survives.
func abandonedUpdate(_ device: SimulatedHeadset, _ image: FirmwareImage, afterBytes bytes: Int,
                     sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let opened = Counter()
    do {
        _ = try await update(device, image) {
            guard opened.next() == 1 else { throw CancellationError() }
            return ConditionedTransport(wrapping: await device.connect(), conditions: LinkConditions(disconnectAfterBytes: bytes))
        }
        Issue.record("the update survived a link that always breaks", sourceLocation: sourceLocation)
    } catch {}
    // Like a killed tool, gone once the device has seen its link end (a moment later on a busy machine; until then the
    // device rightly tells the next tool that another host is updating: CI's run under load saw that).
    try await waitUntil("the device saw the abandoned update's link end") { await device.connectedHosts == 0 }
}
