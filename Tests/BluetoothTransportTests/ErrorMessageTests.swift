import Glibc
import Testing
import Transport
@testable import BluetoothTransport

/// The one-line errors for each failure the brief names.
@Suite struct ErrorMessageTests {
    let device = BluetoothAddress("00:AA:01:00:00:00")!
    let context = "cannot connect to bt:00:AA:01:00:00:00:5"

    func check(_ error: TransportError, _ code: TransportError.Code, _ message: String, errno e: Int32) {
        #expect(error.code == code)
        #expect(error.message == message)
        #expect(error.errno == e)
        #expect(!error.message.contains("\n"))
    }

    @Test func noBluetoothInTheKernel() {
        check(BluetoothErrors.socketError(EAFNOSUPPORT, context: context), .unsupported,
              "\(context): no Bluetooth support in this kernel (AF_BLUETOOTH unavailable)", errno: 97)
        check(BluetoothErrors.adapterError(EAFNOSUPPORT, adapter: "hci0", context: context), .unsupported,
              "\(context): no Bluetooth support in this kernel (AF_BLUETOOTH unavailable)", errno: 97)
        check(BluetoothErrors.socketError(EPROTONOSUPPORT, context: context), .unsupported,
              "\(context): this kernel's Bluetooth stack has no RFCOMM support (is the rfcomm module loaded?)", errno: EPROTONOSUPPORT)
    }

    @Test func adapterAbsent() {
        check(BluetoothErrors.adapterError(ENODEV, adapter: "hci3", context: context), .notFound,
              "\(context): no Bluetooth adapter hci3", errno: ENODEV)
    }

    @Test func connectFailures() {
        check(BluetoothErrors.connectError(ECONNREFUSED, address: device, channel: 5, context: context), .connectionRefused,
              "\(context): no service on RFCOMM channel 5", errno: ECONNREFUSED)
        check(BluetoothErrors.connectError(EHOSTDOWN, address: device, channel: 5, context: context), .notFound,
              "\(context): 00:AA:01:00:00:00 is not in range or not connectable (page timeout)", errno: EHOSTDOWN)
        check(BluetoothErrors.connectError(ETIMEDOUT, address: device, channel: 5, context: context), .timedOut,
              "\(context): 00:AA:01:00:00:00 did not answer (connection timed out)", errno: ETIMEDOUT)
        check(BluetoothErrors.connectError(EACCES, address: device, channel: 5, context: context), .permissionDenied,
              "\(context): permission denied (security or pairing required?)", errno: EACCES)
        check(BluetoothErrors.connectError(EBUSY, address: device, channel: 5, context: context), .busy,
              "\(context): the link is busy (device or resource busy)", errno: EBUSY)
        // No adapter at all on this host: the route error says so.
        let route = BluetoothErrors.connectError(EHOSTUNREACH, address: device, channel: 5, context: context)
        #expect(route.code == .notFound)
        if !hostHasBluetooth {
            #expect(route.message == "\(context): no Bluetooth adapter is available")
        }
        check(BluetoothErrors.connectError(EIO, address: device, channel: 5, context: context), .io,
              "\(context): input/output error", errno: EIO)
    }

    @Test func sdpFailures() {
        let c = "cannot connect to bt:00:AA:01:00:00:00"
        check(BluetoothErrors.sdpError(ECONNREFUSED, address: device, context: c), .connectionRefused,
              "\(c): 00:AA:01:00:00:00 has no SDP server (connection refused); name the RFCOMM channel: bt:00:AA:01:00:00:00:CHANNEL",
              errno: ECONNREFUSED)
        check(BluetoothErrors.sdpError(EHOSTDOWN, address: device, context: c), .notFound,
              "\(c): 00:AA:01:00:00:00 is not in range or not connectable (page timeout)", errno: EHOSTDOWN)
        check(BluetoothErrors.sdpError(ETIMEDOUT, address: device, context: c), .timedOut,
              "\(c): 00:AA:01:00:00:00 did not answer the SDP query (timed out)", errno: ETIMEDOUT)
    }
}
