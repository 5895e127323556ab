// The BLE wearable's end-to-end driver for the VM scenario (tools/vm/tuneup), until `tuneup sim wearable --ble` and
// the `tuneup wearable` commands carry it:
//   wearable-ble-e2e serve ADAPTER          the simulated wearable as a BLE peripheral (prints its ble: address; a
//                                           double tap every second so gestures flow); runs until killed
//   wearable-ble-e2e search ADAPTER SECS    LE scan for devices advertising 0xFDD2 (one ble: address a line)
//   wearable-ble-e2e stream ADDRESS SECS    open a session, print the device information, stream accelerometer and
//                                           gyroscope at 50 Hz with double taps for SECS, print the counts
// Exit 0 on success; one "wearable-ble-e2e: ..." line and exit 1 otherwise.
import Glibc
import TuneupKit
import Transport
import Wearable
import WearableSession
import WearableSimulator

/// One line to a descriptor, unbuffered (the scenario reads the first line while the process runs on).
func line(_ text: String, to fd: Int32) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    line("wearable-ble-e2e: \(message)", to: 2)
    exit(1)
}

func say(_ text: String) { line(text, to: 1) }

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch (arguments.first, arguments.count) {
    case ("serve", 2):
        let device = SimulatedWearable(profile: WearableProfile(motion: HeadMotion(seed: 7)), name: "Tuneup Wearable")
        let peripheral = try await BLEWearablePeripheral.start(device, adapter: arguments[1])
        say(peripheral.endpoint)
        while true {
            try await Task.sleep(for: .seconds(1))
            device.tap(double: true)
        }
    case ("search", 3):
        let found = try await BLEWearablePeripheral.search(adapter: arguments[1], for: .seconds(Double(arguments[2]) ?? 3))
        for ad in found { say("\(ad.address) \(ad.name ?? "-") rssi \(ad.rssi)") }
        if found.isEmpty { fail("no device advertising 0xFDD2") }
    case ("stream", 3):
        let address = try Devices.parseAddress(arguments[1])
        let session = WearableDeviceSession(address: address, connector: Devices.connector())
        try await session.open()
        guard let info = await session.deviceInformation else { fail("no device information") }
        say("device: version \(info.majorVersion).\(info.minorVersion) product 0x\(String(info.productID, radix: 16)) variant \(info.variant) mtu \(await session.mtu)")
        let readings = await session.sensorReadings()
        let gestures = await session.gestureReadings()
        let counting = Task { var n = 0; for await _ in readings { n += 1 }; return n }
        let tapping = Task { var n = 0; for await _ in gestures { n += 1 }; return n }
        try await session.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms); $0.enable(sensor: .gyroscope, at: ._20ms) }
        try await session.configureGestures { $0.set(gesture: .doubleTap, enabled: true); $0.set(gesture: .headNod, enabled: true) }
        try await Task.sleep(for: .seconds(Double(arguments[2]) ?? 3))
        let statistics = await session.statistics
        await session.close()
        let samples = await counting.value, taps = await tapping.value
        let gaps = statistics.sensors.values.map(\.gaps).reduce(0, +)
        say("samples \(samples) gaps \(gaps) gestures \(taps) notifications \(statistics.sensorNotifications) malformed \(statistics.malformedNotifications)")
        if samples == 0 || taps == 0 || statistics.malformedNotifications > 0 { fail("streaming incomplete") }
    default:
        fail("usage: serve ADAPTER | search ADAPTER SECONDS | stream ble:ADDRESS SECONDS")
    }
} catch let error as TransportError {
    fail(error.message)
} catch let error as WearableSessionError {
    fail(error.message)
} catch {
    fail("\(error)")
}
