import CLibUSB
import Support
import Glibc
import Transport

/// A USB device as `tuneup devices` shows it.
public struct USBDeviceInfo: Sendable, Hashable {
    /// Whether this process may open the device.
    public enum Access: Sendable, Hashable {
        /// The device node opens (the device may still be busy with another program).
        case granted
        /// Opening was refused by the system: the udev rule is missing (see tools/udev/).
        case permissionDenied
        /// Opening failed for another reason (the libusb error name).
        case failed(String)
    }

    /// Bus, ports and ids.
    public var location: USBDeviceLocation
    /// `/dev/bus/usb/BBB/DDD`.
    public var nodePath: String
    /// The role of its product id in the known-device table, nil for a device the table does not know.
    public var role: USBKnownDevices.Role?
    /// The partner product id (bootloader id of an application id, or vice versa), when the table has one.
    public var partnerProductID: UInt16?
    /// The manufacturer string, when the device has one and it could be read.
    public var manufacturer: String?
    /// The product string.
    public var product: String?
    /// The serial-number string.
    public var serial: String?
    /// Why strings the device has could not be read (e.g. "strings unreadable: permission denied on ..."), else nil.
    public var stringsProblem: String?
    /// Whether this process may open the device.
    public var access: Access
    /// The hidraw node of its interface 0 (`USBHeadsetListing`), through which `usb:` reaches it by default.
    public var hidraw: HIDRawNode?
    /// Whether this process may open that node (nil without one).
    public var hidrawAccess: Access?

    /// Which paths reach it, for `tuneup devices`: "hidraw /dev/hidraw0 (hid-generic stays bound), else libusb", or
    /// "libusb (no hidraw node)".
    public var reachableBy: String {
        guard let hidraw else { return "libusb (no hidraw node)" }
        var text = "hidraw \(hidraw.path)"
        if let driver = hidraw.driver { text += " (\(driver) stays bound)" }
        if hidrawAccess == .permissionDenied { text += " (permission denied: install the udev rule from tools/udev/)" }
        return text + "; libusb with --usb-backend libusb"
    }

    /// The most specific address to open it with: `usb:VID:PID:SERIAL` when it has a serial, else the port form
    /// `usb:BUS-PORT`, else `usb:VID:PID` (a root hub).
    public var address: String {
        if let serial, !serial.isEmpty, !serial.contains(where: { $0 == " " || $0 == "\t" }) {
            return DeviceAddress.usb(vendorID: location.vendorID, productID: location.productID, serial: serial).description
        }
        return (location.portAddress ?? .usb(vendorID: location.vendorID, productID: location.productID, serial: nil)).description
    }
}

/// Lists USB devices with their identity strings, for `tuneup devices`.
public enum USBDeviceList {
    /// Scans once with a fresh libusb context on a dedicated thread.
    ///
    /// - Parameters:
    ///   - all: every device (root hubs included) instead of the known headsets only.
    ///   - known: the table that decides which devices are headsets and their roles.
    /// - Returns: the devices sorted by bus and port chain. Identity strings come from the kernel's copies in sysfs
    ///   (no device I/O, no permission needed); when those are missing, from the string descriptors, and when that is
    ///   refused, `stringsProblem` says so. `access` reports whether the device node opens.
    /// - Throws: `TransportError(.unsupported)` when libusb cannot start, `.io` when the list fails,
    ///   `CancellationError`.
    /// Whether this machine has a USB subsystem at all (`/sys/bus/usb`): without one, an empty scan does not mean
    /// "nothing attached".
    public static var hasUSBSubsystem: Bool { Glibc.access("/sys/bus/usb", Glibc.F_OK) == 0 }

    public static func scan(all: Bool, known: USBKnownDevices) async throws -> [USBDeviceInfo] {
        let result: Result<[USBDeviceInfo], TransportError> = try await Blocking.run("tuneup-usb-list") {
            Result { () throws(TransportError) -> [USBDeviceInfo] in
                let scan = try USBScan()
                defer { scan.finish() }
                var found: [USBDeviceInfo] = []
                for (i, entry) in scan.devices.enumerated() {
                    let location = entry.location
                    let role = known.role(vendorID: location.vendorID, productID: location.productID)
                    guard all || role != nil else { continue }
                    let node = USBScan.nodePath(bus: location.bus, address: entry.address)
                    let identity = USBStrings.identity(device: entry.device, location: location,
                                                       descriptor: scan.descriptors[i], nodePath: node)
                    let partner = known.matchingProductIDs(vendorID: location.vendorID, productID: location.productID)
                        .dropFirst().first
                    found.append(USBDeviceInfo(
                        location: location, nodePath: node, role: role, partnerProductID: partner,
                        manufacturer: identity.manufacturer, product: identity.product, serial: identity.serial,
                        stringsProblem: identity.problem, access: access(entry.device)))
                }
                return found.sorted { a, b in
                    a.location.bus != b.location.bus ? a.location.bus < b.location.bus
                        : a.location.ports.lexicographicallyPrecedes(b.location.ports)
                }
            }
        }
        return try result.get()
    }

    /// Whether the device node opens (no transfer is made).
    private static func access(_ device: OpaquePointer) -> USBDeviceInfo.Access {
        var handle: OpaquePointer?
        let rc = libusb_open(device, &handle)
        if rc == 0, let handle {
            libusb_close(handle)
            return .granted
        }
        return rc == LIBUSB_ERROR_ACCESS.rawValue ? .permissionDenied : .failed(LibUSBErrors.name(rc))
    }
}
