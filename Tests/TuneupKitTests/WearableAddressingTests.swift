import Testing
import Transport
import TuneupKit

/// A wearable's address from --device or $TUNEUP_DEVICE, and what a failure says of the latter (issue 31 §1).
struct WearableAddressingTests {
    @Test func theOptionThenTheEnvironmentThenTheSimulator() throws {
        #expect(try Devices.wearableAddress(option: nil, environment: nil) == Devices.parseWearableAddress("sim:wearable"))
        #expect(try Devices.wearableAddress(option: "tcp:127.0.0.1:4500", environment: "usb:1209:0001") == Devices.parseWearableAddress("tcp:127.0.0.1:4500"))
        let headset = #expect(throws: WearableAddressError.self) { try Devices.wearableAddress(option: nil, environment: "usb:1209:0001") }
        #expect(headset?.message.hasPrefix("$TUNEUP_DEVICE is 'usb:1209:0001', a headset's address, not a wearable's: give the wearable with --device (") == true)
        #expect(headset?.message.hasSuffix(") or unset TUNEUP_DEVICE") == true && headset?.category == .usage)
        #expect(throws: TransportError.self) { try Devices.wearableAddress(option: "usb:1209:0001", environment: nil) }
    }

    @Test func aConnectionFailureAsksWhetherTheEnvironmentsAddressIsAWearables() {
        let refused = TransportError(.connectionRefused, "tcp:127.0.0.1:1: connection refused")
        let named = Devices.wearableOpenFailure(refused, environment: "tcp:127.0.0.1:1") as? WearableAddressError
        #expect(named?.message == "tcp:127.0.0.1:1: connection refused (is tcp:127.0.0.1:1, from $TUNEUP_DEVICE, a wearable?)")
        #expect(named?.category == .connection)
        #expect(Devices.wearableOpenFailure(refused, environment: nil) is TransportError)
        #expect(Devices.wearableOpenFailure(CancellationError(), environment: "tcp:x:1") is CancellationError)
    }
}
