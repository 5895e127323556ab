import Transport
import USBTransport

extension DeviceRegistry {
    /// The port addresses (`usb:BUS-PORTS`) of every attached known USB headset, in its application or its
    /// bootloader, in port order: the slots of a USB station. Throws `SettingError` for a bad `TUNEUP_USB_IDS`,
    /// `TransportError` when USB cannot be scanned.
    public static func attachedUSBHeadsets() async throws -> [String] {
        let known = try USBBridge.knownDevices()
        let devices = try await USBDeviceList.scan(all: false, known: known)
        return devices.compactMap { $0.location.portAddress?.description }.sorted()
    }

    /// Whether a unit is at `address` now, without sending it anything: a USB port holds a known headset; any other
    /// address is a link that opens (and is closed again at once).
    public static func isPresent(_ address: DeviceAddress, connector: TransportConnector) async -> Bool {
        if case .usbPort = address {
            return (try? await attachedUSBHeadsets())?.contains(address.description) ?? false
        }
        guard let link = try? await connector.open(address) else { return false }
        await link.close()
        return true
    }
}
