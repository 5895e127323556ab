import Transport

/// Opens `bt:` addresses with the Bluetooth back end.
enum BluetoothBridge {
    static func open(_ address: DeviceAddress) async throws -> any Transport {
        throw TransportError(.unsupported, "Bluetooth is not available in this build yet (\(address))")
    }
}
