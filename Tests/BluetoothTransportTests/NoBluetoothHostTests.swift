import Glibc
import Testing
import TestSupport
import Transport
@testable import BluetoothTransport

/// On a kernel without AF_BLUETOOTH (this build machine: errno 97) every entry point fails with one clear line.
// Connect timeouts are 30 s: every call here fails at once, and a short timeout could win that race on a loaded
// machine (turning "unsupported" into "timed out").
@Suite(.enabled(if: !hostHasBluetooth, "this kernel has Bluetooth; the VM scenario covers the real stack"))
struct NoBluetoothHostTests {
    let device = BluetoothAddress("00:AA:01:00:00:00")!
    let unsupported = "no Bluetooth support in this kernel (AF_BLUETOOTH unavailable)"

    @Test func connectOnAChannelIsUnsupported() async throws {
        try await withTimeLimit {
            let error = await expectTransportError(.unsupported) {
                _ = try await RFCOMMTransport.connect(to: device, channel: 5, timeout: .seconds(30))
            }
            #expect(error?.message == "cannot connect to bt:00:AA:01:00:00:00:5: \(unsupported)")
            #expect(error?.errno == EAFNOSUPPORT)
        }
    }

    @Test func connectThroughSDPIsUnsupported() async throws {
        try await withTimeLimit {
            let error = await expectTransportError(.unsupported) {
                _ = try await RFCOMMTransport.connect(to: device, channel: nil, timeout: .seconds(30))
            }
            #expect(error?.message == "cannot connect to bt:00:AA:01:00:00:00: \(unsupported)")
        }
    }

    @Test func connectFromANamedAdapterIsUnsupported() async throws {
        try await withTimeLimit {
            for adapter in ["hci1", "00:AA:01:01:00:01"] {
                let error = await expectTransportError(.unsupported) {
                    _ = try await RFCOMMTransport.connect(to: device, channel: 5, adapter: adapter, timeout: .seconds(30))
                }
                #expect(error?.message == "cannot connect to bt:00:AA:01:00:00:00:5: \(unsupported)")
            }
        }
    }

    @Test func listenIsUnsupported() async throws {
        try await withTimeLimit {
            let any = await expectTransportError(.unsupported) { _ = try await RFCOMMListener.bind(adapter: nil, channel: 5) }
            #expect(any?.message == "cannot listen on bt:any:5: \(unsupported)")
            let named = await expectTransportError(.unsupported) { _ = try await RFCOMMListener.bind(adapter: "hci0", channel: 5) }
            #expect(named?.message == "cannot listen on bt:hci0:5: \(unsupported)")
        }
    }

    @Test func adapterQueriesAreUnsupported() async {
        let list = await expectTransportError(.unsupported) { _ = try BluetoothAdapters.list() }
        #expect(list?.message == "cannot list Bluetooth adapters: \(unsupported)")
        let one = await expectTransportError(.unsupported) { _ = try BluetoothAdapters.adapter(named: "hci0") }
        #expect(one?.message == "cannot use Bluetooth adapter hci0: \(unsupported)")
        #expect(BluetoothAdapters.defaultAdapter() == nil)
    }

    @Test func failuresLeakNoDescriptors() async throws {
        try await withTimeLimit {
            let before = openDescriptors()
            for _ in 0..<100 {
                _ = try? await RFCOMMTransport.connect(to: device, channel: 5, timeout: .seconds(30))
                _ = try? await RFCOMMTransport.connect(to: device, channel: nil, adapter: "hci0", timeout: .seconds(30))
                _ = try? await RFCOMMListener.bind(adapter: nil, channel: 0)
                _ = try? BluetoothAdapters.list()
            }
            // Other suites run concurrently and open descriptors of their own (let those settle): a leak here would be 100+.
            let growth = try await settledValue(below: 50) { openDescriptors() - before }
            #expect(growth < 50)
        }
    }
}

/// Argument checks that come before any socket, on every host.
@Suite struct ArgumentTests {
    let device = BluetoothAddress("00:AA:01:00:00:00")!

    @Test func badAdapterNameIsAnInvalidAddress() async {
        let error = await expectTransportError(.invalidAddress) {
            _ = try await RFCOMMTransport.connect(to: device, channel: 5, adapter: "bluetooth0", timeout: .seconds(30))
        }
        #expect(error?.message == "cannot connect to bt:00:AA:01:00:00:00:5: bad Bluetooth adapter 'bluetooth0': expected hciN (e.g. hci0) or the adapter's address AA:BB:CC:DD:EE:FF")
        let listen = await expectTransportError(.invalidAddress) { _ = try await RFCOMMListener.bind(adapter: "hci", channel: 5) }
        #expect(listen?.message.hasPrefix("cannot listen on bt:hci:5: bad Bluetooth adapter 'hci'") == true)
    }

    @Test func channelOutOfRange() async {
        let zero = await expectTransportError(.invalidAddress) {
            _ = try await RFCOMMTransport.connect(to: device, channel: 0, timeout: .seconds(30))
        }
        #expect(zero?.message == "cannot connect to bt:00:AA:01:00:00:00:0: RFCOMM channel 0 is out of range (1...30)")
        _ = await expectTransportError(.invalidAddress) { _ = try await RFCOMMTransport.connect(to: device, channel: 31, timeout: .seconds(30)) }
        let listen = await expectTransportError(.invalidAddress) { _ = try await RFCOMMListener.bind(adapter: nil, channel: 31) }
        #expect(listen?.message == "cannot listen on bt:any:31: RFCOMM channel 31 is out of range (1...30, or 0 for any free channel)")
    }
}
