import Foundation
import Headset
import LightX
import Synchronization
import Testing
import TestSupport
import TuneupKit

/// What `tuneup monitor` prints and how it follows a headset, made by the library (issue 31 §1).
struct HeadsetMonitorTests {
    @Test func eachPushAsALineAndAsJSONFields() {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let anc = HeadsetPushEvent(.ancEnabled(true), at: date)
        #expect(anc.type == "anc" && anc.enabled == true && anc.text.hasSuffix(".250  ANC on"))
        let battery = HeadsetPushEvent(.batteryLevel(42), at: date)
        #expect(battery.percent == 42 && battery.text.hasSuffix("  battery 42%"))
        let other = HeadsetPushEvent(.other(Command(rawValue: 0xC9), [0x01, 0xAB]), at: date)
        #expect(other.type == "other" && other.command == "0xc9" && other.text.hasSuffix("  push 0xc9 [\(other.payload ?? "")]"))
    }

    @Test func followsUntilTheDeadlineAfterTheDeviceAnswered() async throws {
        try await withTimeLimit {
            let dir = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let headset = try await Devices.openHeadset(try Devices.parseAddress("sim:headset:\(dir)/state.json"))
            let product = Mutex<String?>(nil)
            // A deadline already passed: the device is asked first, then the follow ends at once.
            try await HeadsetMonitor.follow(headset, address: "sim", count: nil, until: .now, started: { name in product.withLock { $0 = name } },
                                            emit: { _ in })
            await headset.close()
            #expect(product.withLock { $0 } == "Tuneup Sim Headset")
        }
    }

    @Test func aDeviceThatGoesAwayIsADisconnection() async throws {
        try await withTimeLimit {
            let dir = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let headset = try await Devices.openHeadset(try Devices.parseAddress("sim:headset:\(dir)/state.json"))
            let error = await #expect(throws: HeadsetError.self) {
                try await HeadsetMonitor.follow(headset, address: "sim", count: 1, until: nil, started: { _ in Task { await headset.close() } },
                                                emit: { _ in })
            }
            #expect(error?.code == .disconnected && error?.message == "sim disconnected")
        }
    }
}
