import CLibUSB
import Glibc
import Logging
import Transport

/// One pass over the USB devices with a fresh libusb context (the guest VM has no udevd, so a context's device list
/// never changes: every scan makes a new one). Blocking: runs on a dedicated thread. Internal.
final class USBScan {
    let context: OpaquePointer
    private var list: UnsafeMutablePointer<OpaquePointer?>?
    private(set) var devices: [(device: OpaquePointer, location: USBDeviceLocation, address: UInt8)] = []
    /// Descriptors of the devices, by position in `devices`.
    private(set) var descriptors: [libusb_device_descriptor] = []
    private var contextExited = false

    /// Initialises a context and lists the devices.
    ///
    /// - Throws: `.unsupported` when libusb cannot start (no USB support here), `.io` when the list fails.
    init() throws(TransportError) {
        var context: OpaquePointer?
        let rc = libusb_init(&context)
        guard rc == 0, let context else {
            throw TransportError(.unsupported, "USB is not available on this system: libusb_init failed (\(LibUSBErrors.name(rc)))")
        }
        self.context = context
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(context, &list)
        guard count >= 0 else {
            libusb_exit(context)
            throw TransportError(.io, "cannot list USB devices: \(LibUSBErrors.name(Int32(clamping: count)))")
        }
        self.list = list
        for i in 0..<Int(count) {
            guard let device = list?[i] else { continue }
            var descriptor = libusb_device_descriptor()
            guard libusb_get_device_descriptor(device, &descriptor) == 0 else { continue }
            var ports = [UInt8](repeating: 0, count: 8)
            let depth = libusb_get_port_numbers(device, &ports, Int32(ports.count))
            let location = USBDeviceLocation(
                bus: libusb_get_bus_number(device), ports: Array(ports.prefix(max(0, Int(depth)))),
                vendorID: descriptor.idVendor, productID: descriptor.idProduct)
            devices.append((device, location, libusb_get_device_address(device)))
            descriptors.append(descriptor)
        }
    }

    /// Devices other than root hubs.
    var attachedCount: Int { devices.filter { !$0.location.ports.isEmpty }.count }

    /// Frees the list and exits the context. Idempotent.
    func finish() {
        if let list {
            libusb_free_device_list(list, 1)
            self.list = nil
        }
        if !contextExited {
            contextExited = true
            libusb_exit(context)
        }
    }

    deinit { finish() }

    /// `/dev/bus/usb/BBB/DDD` for messages.
    static func nodePath(bus: UInt8, address: UInt8) -> String {
        "/dev/bus/usb/" + pad3(bus) + "/" + pad3(address)
    }

    private static func pad3(_ n: UInt8) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, 3 - s.count)) + s
    }
}

/// The identity strings of a device: the kernel's copies in sysfs (read at enumeration, readable without access to
/// the device node), else the string descriptors read from the device. Internal.
enum USBStrings {
    struct Identity: Sendable {
        var manufacturer: String?
        var product: String?
        var serial: String?
        /// Why strings the device has could not be read (nil when nothing is missing).
        var problem: String?
    }

    /// The sysfs directory of a device: `/sys/bus/usb/devices/1-2.3`, or `usb1` for a root hub.
    static func sysfsPath(_ location: USBDeviceLocation) -> String {
        let name = location.ports.isEmpty
            ? "usb\(location.bus)"
            : "\(location.bus)-" + location.ports.map(String.init).joined(separator: ".")
        return "/sys/bus/usb/devices/" + name
    }

    /// Reads one sysfs attribute (at most 4 KiB), without the trailing newline; nil when absent or empty.
    static func sysfsAttribute(_ directory: String, _ name: String) -> String? {
        guard var text = HIDRawDevices.readSmallFile(directory + "/" + name, limit: 4096) else { return nil }
        while text.hasSuffix("\n") { text.removeLast() }
        return text.isEmpty ? nil : text
    }

    /// Whether the device opened at `location` with device number `address` is still attached: its sysfs directory
    /// exists and shows the same device number (a re-enumerated or unplugged device gets a new number or none). When
    /// sysfs cannot be read at all, answers true (no evidence of an unplug).
    static func isStillAttached(_ location: USBDeviceLocation, address: UInt8) -> Bool {
        guard !location.ports.isEmpty else { return true }
        let directory = sysfsPath(location)
        guard let devnum = sysfsAttribute(directory, "devnum") else {
            // Gone, unless sysfs is not there at all.
            return !sysfsExists()
        }
        return UInt8(devnum.trimmingBlanks()) == address
    }

    private static func sysfsExists() -> Bool {
        access("/sys/bus/usb/devices", F_OK) == 0
    }

    /// The identity of a device. `open` is tried only when sysfs lacks a string the descriptor announces.
    static func identity(device: OpaquePointer, location: USBDeviceLocation, descriptor: libusb_device_descriptor,
                         nodePath: String) -> Identity {
        let directory = sysfsPath(location)
        var identity = Identity(
            manufacturer: descriptor.iManufacturer == 0 ? nil : sysfsAttribute(directory, "manufacturer"),
            product: descriptor.iProduct == 0 ? nil : sysfsAttribute(directory, "product"),
            serial: descriptor.iSerialNumber == 0 ? nil : sysfsAttribute(directory, "serial"))
        let missing = (descriptor.iManufacturer != 0 && identity.manufacturer == nil)
            || (descriptor.iProduct != 0 && identity.product == nil)
            || (descriptor.iSerialNumber != 0 && identity.serial == nil)
        guard missing else { return identity }
        var handle: OpaquePointer?
        let rc = libusb_open(device, &handle)
        guard rc == 0, let handle else {
            identity.problem = rc == LIBUSB_ERROR_ACCESS.rawValue
                ? "strings unreadable: permission denied on \(nodePath); \(LibUSBErrors.permissionHint)"
                : "strings unreadable: \(LibUSBErrors.name(rc))"
            return identity
        }
        defer { libusb_close(handle) }
        var failures: [String] = []
        func read(_ index: UInt8, _ name: String) -> String? {
            guard index != 0 else { return nil }
            switch stringDescriptor(handle, index: index) {
            case .success(let text): return text
            case .failure(let error):
                failures.append("\(name): \(error)")
                return nil
            }
        }
        if identity.manufacturer == nil { identity.manufacturer = read(descriptor.iManufacturer, "manufacturer") }
        if identity.product == nil { identity.product = read(descriptor.iProduct, "product") }
        if identity.serial == nil { identity.serial = read(descriptor.iSerialNumber, "serial") }
        if !failures.isEmpty { identity.problem = "strings unreadable: " + failures.joined(separator: ", ") }
        return identity
    }

    struct DescriptorError: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads string descriptor `index` in the device's first language and decodes its UTF-16LE text.
    static func stringDescriptor(_ handle: OpaquePointer, index: UInt8) -> Result<String, DescriptorError> {
        var buffer = [UInt8](repeating: 0, count: 255)
        let languages = libusb_get_string_descriptor(handle, 0, 0, &buffer, Int32(buffer.count))
        guard languages >= 4, buffer[1] == UInt8(LIBUSB_DT_STRING.rawValue) else {
            return .failure(DescriptorError(description: languages < 0 ? LibUSBErrors.name(languages) : "no language list"))
        }
        let language = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
        let n = libusb_get_string_descriptor(handle, index, language, &buffer, Int32(buffer.count))
        guard n >= 2, buffer[1] == UInt8(LIBUSB_DT_STRING.rawValue) else {
            return .failure(DescriptorError(description: n < 0 ? LibUSBErrors.name(n) : "malformed string descriptor"))
        }
        let length = min(Int(n), Int(buffer[0]), buffer.count)
        var units: [UInt16] = []
        var i = 2
        while i + 1 < length {
            units.append(UInt16(buffer[i]) | UInt16(buffer[i + 1]) << 8)
            i += 2
        }
        return .success(String(decoding: units, as: UTF16.self))
    }
}
