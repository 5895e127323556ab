import Foundation
import Headset
import Logging
import Testing
import TestSupport
import TuneupKit

/// Opening a device for one action and closing it, as every headset command does, in the library (issue 31 §1).
struct DeviceUseTests {
    @Test func aHeadsetIsOpenedForTheActionAndItsFailureComesBack() async throws {
        try await withTimeLimit {
            let dir = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let address = try Devices.parseAddress("sim:headset:\(dir)/state.json")
            let product = try await Devices.withHeadset(address, logger: Logger(label: "test")) { try await $0.identity().product }
            #expect(product == "Tuneup Sim Headset")
            let error = await #expect(throws: HeadsetError.self) {
                try await Devices.withHeadset(address, logger: Logger(label: "test")) { _ in throw HeadsetError(.timeout, "no answer") }
            }
            #expect(error?.message == "no answer", "a failure that is no refusal stands as it is")
            let mode = try await Devices.withBootloaderClient(address: address, wait: .seconds(10), logger: Logger(label: "test")) { try await $0.status().mode }
            #expect(mode == "application")
        }
    }
}
