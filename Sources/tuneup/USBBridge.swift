import Transport

/// Opens `usb:` addresses with the USB back end.
struct USBBridge: Sendable {
    /// Fixed reply-poll interval (nil: adaptive).
    var pollInterval: Duration?

    func open(_ address: DeviceAddress) async throws -> any Transport {
        throw TransportError(.unsupported, "USB is not available in this build yet (\(address))")
    }
}
