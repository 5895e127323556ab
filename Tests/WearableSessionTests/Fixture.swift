import TestSupport
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

/// A simulated wearable on a manual clock, served in process, and a session with it (on real time for its request
/// timers, so advancing the device's clock never times a request out).
struct Fixture {
    let clock = ManualClock()
    let device: SimulatedWearable
    let wearable: InProcessWearable
    let session: WearableDeviceSession

    init(profile: WearableProfile = WearableProfile(), options: WearableDeviceSession.Options = .init()) throws {
        device = SimulatedWearable(profile: profile, clock: clock)
        let wearable = try InProcessWearable(device: device)
        self.wearable = wearable
        session = WearableDeviceSession(peer: "memory:wearable", options: options) { try wearable.connect() }
    }

    func pump(ticks: Int) async { await pumpTransmissions(clock, ticks: ticks) }

    func shutdown() async {
        await session.close()
        await wearable.server.shutdown()
    }
}

/// A simulated wearable's transmissions on `clock`, one period (40 ms) at a time, each once the device's streamer
/// waits for it: `ticks` periods.
func pumpTransmissions(_ clock: ManualClock, ticks: Int) async {
    for _ in 0..<ticks {
        while clock.pendingSleeps == 0 { await Task.yield() }
        clock.advance(by: .milliseconds(40))
    }
    // The last transmission has been handed to the link once the streamer waits for the next one.
    while clock.pendingSleeps == 0 { await Task.yield() }
}

/// The first `count` elements of `stream` (fewer when it ends first).
func collect<S: AsyncSequence>(_ stream: S, _ count: Int) async -> [S.Element] where S.Failure == Never {
    var out: [S.Element] = []
    guard count > 0 else { return out }
    for await element in stream {
        out.append(element)
        if out.count == count { break }
    }
    return out
}

/// Everything `stream` yields until it ends.
func drain<S: AsyncSequence>(_ stream: S) async -> [S.Element] where S.Failure == Never {
    var out: [S.Element] = []
    for await element in stream { out.append(element) }
    return out
}

extension SensorValue {
    var vector: Vector? {
        if case let .vector(v, _) = self { return v }
        return nil
    }

    var quaternion: Quaternion? {
        if case let .quaternion(q, _) = self { return q }
        return nil
    }
}

func norm(_ v: Vector) -> Double { (v.x * v.x + v.y * v.y + v.z * v.z).squareRoot() }

/// A profile with room for every sensor at 20 ms (for the motion tests).
func roomyProfile(motion: HeadMotion, bootTimestamp: UInt16 = 0) -> WearableProfile {
    var device = WearableProfile.standardDevice
    device.maxActiveSensors = 4
    device.maxPayloadPerTransmissionPeriod = 200
    return WearableProfile(deviceInformation: device, bootTimestamp: bootTimestamp, motion: motion)
}
