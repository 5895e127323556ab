import BluetoothTransport
import Logging
import Transport

/// Opens `ble:` addresses: an ATT bearer (L2CAP LE, CID 4) to a Bluetooth LE device, from the adapter
/// `TUNEUP_BT_ADAPTER` names (else the kernel's choice). The link carries one ATT PDU per packet, so a Wearable session
/// on it speaks real ATT.
public enum BLEBridge {
    /// The scheme's name.
    public static let scheme = "ble"
    /// Limit for the connection (the kernel waits for the device to advertise, then connects).
    public static let connectTimeout: Duration = .seconds(10)

    /// Parses the text after `ble:`.
    public static func parse(_ rest: String, _ text: String) throws(TransportError) -> DeviceAddress {
        guard let address = BLEAddress(parsing: rest) else {
            throw TransportError(.invalidAddress, "bad BLE address '\(text)': expected ble:AA:BB:CC:DD:EE:FF[:random]")
        }
        return .registered(RegisteredAddress(scheme: scheme, text: address.description, value: address))
    }

    /// The address scheme (for `AddressSchemes`).
    public static let addressScheme = AddressScheme(
        name: scheme, form: "ble:AA:BB:CC:DD:EE:FF[:random]",
        summary: "Bluetooth LE (ATT), e.g. a Bose Wearable; adapter: \(BluetoothBridge.adapterVariable)", parse: parse)

    /// Opens a link to `address` (a `ble:` address). Throws `TransportError` with a one-line message.
    public static func open(_ address: DeviceAddress, logger: Logger? = nil) async throws -> any Transport {
        guard case let .registered(r) = address, r.scheme == scheme, let device = r.value(as: BLEAddress.self) else {
            throw TransportError(.invalidAddress, "\(address) is not a BLE address (expected ble:AA:BB:CC:DD:EE:FF)")
        }
        let adapter = BluetoothBridge.adapterFromEnvironment()
        do {
            return try await BLEConnection.connect(to: device, adapter: adapter, timeout: connectTimeout, logger: logger)
        } catch let error as TransportError where error.code == .invalidAddress && adapter != nil {
            throw TransportError(.invalidAddress, "\(BluetoothBridge.adapterVariable)=\(adapter ?? ""): \(error.message)")
        }
    }
}

