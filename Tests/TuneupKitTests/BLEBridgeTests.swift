import Glibc
import Testing
import TestSupport
import Transport
@testable import TuneupKit

/// The `ble:` scheme: its addresses, and the one line a host without Bluetooth gives when one is opened.
@Suite struct BLEBridgeTests {
    @Test func addresses() throws {
        #expect(try Devices.parseAddress("ble:00:aa:01:00:00:00").description == "ble:00:AA:01:00:00:00")
        #expect(try Devices.parseAddress("ble:00:AA:01:00:00:00:random").description == "ble:00:AA:01:00:00:00:random")
        for bad in ["ble:", "ble:00:AA:01", "ble:00:AA:01:00:00:00:7"] {
            do {
                _ = try Devices.parseAddress(bad)
                Issue.record("\(bad) parsed")
            } catch {
                #expect(error.code == .invalidAddress)
                #expect(error.message == "bad BLE address '\(bad)': expected ble:AA:BB:CC:DD:EE:FF[:random]")
            }
        }
    }

    @Test(.enabled(if: socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0) < 0 && errno == EAFNOSUPPORT, "this kernel has Bluetooth"))
    func openingOnAHostWithoutBluetoothIsOneLine() async throws {
        try await withTimeLimit {
            do {
                _ = try await Devices.connector().open(try Devices.parseAddress("ble:00:AA:01:00:00:00"))
                Issue.record("opened")
            } catch let error as TransportError {
                #expect(error.code == .unsupported)
                #expect(error.message == "cannot connect to ble:00:AA:01:00:00:00: no Bluetooth support in this kernel (AF_BLUETOOTH unavailable)")
            }
        }
    }
}
