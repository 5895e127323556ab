import Glibc
import Support
import Transport

/// A hidraw node (`/dev/hidrawN`) as sysfs describes it: the HID device behind it and, when it sits on USB, the USB
/// device and interface.
public struct HIDRawNode: Sendable, Hashable, CustomStringConvertible {
    /// `hidraw0`.
    public var name: String
    /// `/dev/hidraw0` (under the scan's device root).
    public var path: String
    /// The HID bus type (HID_ID's first field): 0x03 USB, 0x05 Bluetooth.
    public var busType: UInt16
    /// The vendor id (HID_ID).
    public var vendorID: UInt16
    /// The product id (HID_ID).
    public var productID: UInt16
    /// HID_UNIQ (the USB serial-number string for usbhid), else the USB device's `serial` attribute; nil when neither.
    public var serial: String?
    /// HID_NAME.
    public var hidName: String?
    /// The kernel HID driver bound to the HID device (`hid-generic`, a vendor driver), nil when none is.
    public var driver: String?
    /// Where the USB device is (bus and port chain from the sysfs path; ids from HID_ID); nil for a node not on USB.
    public var location: USBDeviceLocation?
    /// The USB interface number the HID device belongs to (nil when not on USB).
    public var interface: Int?

    public init(name: String, path: String, busType: UInt16, vendorID: UInt16, productID: UInt16, serial: String? = nil,
                hidName: String? = nil, driver: String? = nil, location: USBDeviceLocation? = nil, interface: Int? = nil) {
        self.name = name
        self.path = path
        self.busType = busType
        self.vendorID = vendorID
        self.productID = productID
        self.serial = serial
        self.hidName = hidName
        self.driver = driver
        self.location = location
        self.interface = interface
    }

    /// `hidraw:/dev/hidraw0`.
    public var address: DeviceAddress { HIDRawAddress.address(path: path) }

    /// `hidraw:/dev/hidraw0 (1209:0001, usb:1-1 interface 0)`.
    public var description: String {
        var text = "\(address) (\(usbHex4(vendorID)):\(usbHex4(productID))"
        if let location, let port = location.portAddress { text += ", \(port) interface \(interface ?? 0)" }
        return text + ")"
    }
}

/// The `hidraw:` address scheme: `hidraw:/dev/hidrawN`, an absolute path to a hidraw node.
public enum HIDRawAddress {
    /// The scheme's name.
    public static let scheme = "hidraw"

    /// The address of the node at `path`.
    public static func address(path: String) -> DeviceAddress {
        .registered(RegisteredAddress(scheme: scheme, text: "\(scheme):\(path)", value: path))
    }

    /// Parses the text after `hidraw:`: an absolute path without NUL or blanks (`/dev/hidraw0`).
    public static func parse(_ rest: String, _ text: String) throws(TransportError) -> DeviceAddress {
        guard rest.hasPrefix("/"), rest.count > 1, rest.count < 4096,
              !rest.contains(where: { $0 == "\0" || $0 == " " || $0 == "\t" || $0 == "\n" }) else {
            throw TransportError(.invalidAddress, "bad hidraw address '\(text)': expected hidraw:/dev/hidrawN (an absolute path)")
        }
        return address(path: rest)
    }

    /// The node path of a `hidraw:` address, nil for any other address.
    public static func path(of address: DeviceAddress) -> String? {
        guard case let .registered(r) = address, r.scheme == scheme else { return nil }
        return r.value(as: String.self)
    }

    /// The address scheme (for `AddressSchemes`).
    public static let addressScheme = AddressScheme(
        name: scheme, form: "hidraw:/dev/hidrawN",
        summary: "a headset's hidraw node: its HID driver stays bound (usb: finds it first)", parse: parse)
}

/// The hidraw ioctl request numbers, made with the kernel's `_IOC` layout (asm-generic/ioctl.h: direction in bits
/// 30-31, size in 16-29, type in 8-15, number in 0-7), as <linux/hidraw.h> defines them.
public enum HIDRawIoctl {
    static let write: UInt = 1
    static let read: UInt = 2

    /// `_IOC(dir, type, nr, size)`.
    public static func ioc(direction: UInt, type: UInt8, number: UInt8, size: Int) -> UInt {
        (direction << 30) | (UInt(size & 0x3FFF) << 16) | (UInt(type) << 8) | UInt(number)
    }

    /// `HIDIOCSFEATURE(len)`: `_IOC(_IOC_WRITE|_IOC_READ, 'H', 0x06, len)`.
    public static func setFeature(length: Int) -> UInt { ioc(direction: write | read, type: 0x48, number: 0x06, size: length) }
    /// `HIDIOCGFEATURE(len)`: `_IOC(_IOC_WRITE|_IOC_READ, 'H', 0x07, len)`.
    public static func getFeature(length: Int) -> UInt { ioc(direction: write | read, type: 0x48, number: 0x07, size: length) }
    /// `HIDIOCGRAWINFO`: `_IOR('H', 0x03, struct hidraw_devinfo)` (8 bytes: u32 bustype, s16 vendor, s16 product).
    public static let rawInfo: UInt = ioc(direction: read, type: 0x48, number: 0x03, size: 8)
    /// The largest length the size field holds (14 bits).
    public static let maximumLength = 0x3FFF
}

/// What one pass over sysfs found: the nodes it could read, and one line per node it skipped.
public struct HIDRawScan: Sendable, Hashable {
    /// The readable nodes, by number (hidraw0, hidraw1, ..., hidraw10).
    public var nodes: [HIDRawNode]
    /// "hidraw3: ..." for each node skipped (an unreadable or malformed uevent).
    public var problems: [String]
    /// Whether the kernel has hidraw at all (`class/hidraw` exists).
    public var hasHIDRaw: Bool
}

/// Finding hidraw nodes in sysfs (`class/hidraw/hidrawN/device/uevent`: HID_ID, HID_NAME, HID_UNIQ; the USB port from
/// the device's sysfs path). The sysfs and device roots are parameters, so tests run on a fake tree. Every function
/// here reads small files synchronously: call them off the cooperative pool (`HIDRawDevices.scanOffPool`).
public enum HIDRawDevices {
    /// The HID bus type of USB devices.
    public static let usbBus: UInt16 = 0x03

    /// One pass over `sysfsRoot/class/hidraw`. Never traps: a node whose uevent is missing or malformed is skipped
    /// with a line in `problems`.
    public static func scan(sysfsRoot: String = "/sys", devRoot: String = "/dev") -> HIDRawScan {
        let classDir = sysfsRoot + "/class/hidraw"
        guard let names = directoryEntries(classDir) else { return HIDRawScan(nodes: [], problems: [], hasHIDRaw: false) }
        var nodes: [HIDRawNode] = []
        var problems: [String] = []
        for name in names where name.hasPrefix("hidraw") {
            switch node(name: name, classDir: classDir, sysfsRoot: sysfsRoot, devRoot: devRoot) {
            case .success(let node): nodes.append(node)
            case .failure(let error): problems.append("\(name): \(error.message)")
            }
        }
        nodes.sort { a, b in
            let (x, y) = (Int(a.name.dropFirst(6)) ?? Int.max, Int(b.name.dropFirst(6)) ?? Int.max)
            return x != y ? x < y : a.name < b.name
        }
        return HIDRawScan(nodes: nodes, problems: problems, hasHIDRaw: true)
    }

    /// `scan` on the blocking executor.
    public static func scanOffPool(sysfsRoot: String = "/sys", devRoot: String = "/dev") async throws -> HIDRawScan {
        try await Blocking.perform("tuneup-hidraw-scan") { scan(sysfsRoot: sysfsRoot, devRoot: devRoot) }
    }

    /// The node `hidrawN`'s description, read from `classDir/hidrawN`.
    static func node(name: String, classDir: String, sysfsRoot: String, devRoot: String) -> Result<HIDRawNode, TransportError> {
        let deviceLink = classDir + "/" + name + "/device"
        guard let text = readSmallFile(deviceLink + "/uevent") else {
            return .failure(TransportError(.io, "no readable device/uevent"))
        }
        let fields: UEvent
        do { fields = try parseUEvent(text) } catch { return .failure(error) }
        var node = HIDRawNode(name: name, path: devRoot + "/" + name, busType: fields.bus, vendorID: fields.vendorID,
                              productID: fields.productID, serial: fields.uniq, hidName: fields.name)
        let resolved = resolvedPath(deviceLink)
        if let driver = resolvedPath(deviceLink + "/driver") {
            node.driver = driver.split(separator: "/").last.map(String.init)
        }
        if fields.bus == usbBus, let resolved, let usb = usbPosition(inDevicePath: resolved) {
            node.location = USBDeviceLocation(bus: usb.bus, ports: usb.ports, vendorID: fields.vendorID, productID: fields.productID)
            node.interface = usb.interface
            if node.serial == nil {
                node.serial = readSmallFile(usb.deviceDirectory + "/serial").map { String($0.trimmingBlanks()) }.flatMap { $0.isEmpty ? nil : $0 }
            }
        }
        return .success(node)
    }

    /// The fields of a HID device's uevent that discovery uses.
    public struct UEvent: Sendable, Hashable {
        public var bus: UInt16
        public var vendorID: UInt16
        public var productID: UInt16
        public var name: String?
        /// HID_UNIQ, nil when absent or empty.
        public var uniq: String?
    }

    /// Parses a HID device's uevent text (`KEY=value` lines). HID_ID (`BBBB:VVVVVVVV:PPPPPPPP`, hex, ids that fit
    /// 16 bits) is required.
    ///
    /// - Throws: `TransportError(.io)` naming what is missing or malformed.
    public static func parseUEvent(_ text: String) throws(TransportError) -> UEvent {
        var values: [String: String] = [:]
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            if values[key] == nil { values[key] = String(line[line.index(after: equals)...]) }
        }
        guard let id = values["HID_ID"] else { throw TransportError(.io, "uevent has no HID_ID line") }
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let bus = hex32(parts[0]), let vid = hex32(parts[1]), let pid = hex32(parts[2]),
              bus <= 0xFFFF, vid <= 0xFFFF, pid <= 0xFFFF else {
            throw TransportError(.io, "malformed HID_ID '\(id.prefix(64))' (expected BBBB:VVVVVVVV:PPPPPPPP in hex)")
        }
        let uniq = values["HID_UNIQ"].map { String($0.trimmingBlanks()) }.flatMap { $0.isEmpty ? nil : $0 }
        let name = values["HID_NAME"].flatMap { $0.isEmpty ? nil : $0 }
        return UEvent(bus: UInt16(bus), vendorID: UInt16(vid), productID: UInt16(pid), name: name, uniq: uniq)
    }

    /// The USB bus, port chain and interface of the last USB interface directory (`1-1.2:1.0`) in a resolved sysfs
    /// path, and the path of its USB device directory (`.../1-1.2`); nil when the path has none.
    public static func usbPosition(inDevicePath path: String) -> (bus: UInt8, ports: [UInt8], interface: Int, deviceDirectory: String)? {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        for index in components.indices.reversed() {
            let component = components[index]
            guard let colon = component.firstIndex(of: ":") else { continue }
            let device = component[..<colon]
            let configuration = component[component.index(after: colon)...].split(separator: ".", omittingEmptySubsequences: false)
            guard configuration.count == 2, configuration.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
                  let interface = Int(configuration[1]), let position = usbDevicePosition(device) else { continue }
            // The interface directory sits in its device's directory (`.../1-1.2/1-1.2:1.0`).
            return (position.bus, position.ports, interface, components[..<index].joined(separator: "/"))
        }
        return nil
    }

    /// `1-1.2` → bus 1, ports [1, 2]; nil for anything else.
    static func usbDevicePosition(_ text: Substring) -> (bus: UInt8, ports: [UInt8])? {
        let halves = text.split(separator: "-", omittingEmptySubsequences: false)
        guard halves.count == 2, let bus = UInt8(halves[0]), bus > 0 else { return nil }
        let ports = halves[1].split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
        guard !ports.isEmpty, ports.count <= 7, ports.allSatisfy({ $0 != nil }) else { return nil }
        return (bus, ports.compactMap { $0 })
    }

    private static func hex32(_ text: Substring) -> UInt32? {
        guard (1...8).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
        return UInt32(text, radix: 16)
    }

    // MARK: Choosing a node for a usb: address

    /// The hidraw nodes that carry the headset a `usb:` address names (the node of USB interface 0, where LightX
    /// lives), matched by `filter` (ids with the known partner ids, or the port), then by serial.
    public static func matches(_ filter: USBDeviceFilter, in scan: HIDRawScan) -> [HIDRawNode] {
        scan.nodes.filter { node in
            guard let location = node.location, node.interface == 0, filter.matches(location) else { return false }
            if let wanted = filter.serial { return node.serial == wanted }
            return true
        }
    }

    /// Whether a USB device `filter` matches is attached (in `sysfsRoot/bus/usb/devices`) with a HID interface 0 that
    /// has no hidraw node yet and no driver but usbhid: usbhid is about to bind it or make its node (the device has
    /// just enumerated). Reads sysfs only.
    public static func hidInterfaceAwaitingNode(_ filter: USBDeviceFilter, sysfsRoot: String = "/sys") -> Bool {
        let directory = sysfsRoot + "/bus/usb/devices"
        guard let names = directoryEntries(directory) else { return false }
        for name in names where !name.contains(":") {
            guard let position = usbDevicePosition(Substring(name)) else { continue }
            let device = directory + "/" + name
            guard let vid = readSmallFile(device + "/idVendor").flatMap({ parseUSBHex16($0.trimmingBlanks()) }),
                  let pid = readSmallFile(device + "/idProduct").flatMap({ parseUSBHex16($0.trimmingBlanks()) }) else { continue }
            let location = USBDeviceLocation(bus: position.bus, ports: position.ports, vendorID: vid, productID: pid)
            guard filter.matches(location) else { continue }
            if let wanted = filter.serial, readSmallFile(device + "/serial").map({ String($0.trimmingBlanks()) }) != wanted { continue }
            // Any configuration's interface 0 of class HID (03), with no driver yet or usbhid (another driver, such as
            // usbfs for a program holding it through libusb, makes no node).
            let interfaces = (directoryEntries(device) ?? []).filter { $0.hasPrefix(name + ":") && $0.hasSuffix(".0") }
            for interface in interfaces where readSmallFile(device + "/" + interface + "/bInterfaceClass")?.trimmingBlanks() == "03" {
                let driver = resolvedPath(device + "/" + interface + "/driver")?.split(separator: "/").last
                if driver == nil || driver == "usbhid" { return true }
            }
        }
        return false
    }

    // MARK: Files

    /// The names in a directory (without . and ..), nil when it cannot be opened.
    static func directoryEntries(_ path: String) -> [String]? { POSIX.directoryEntries(path) }

    /// The canonical path (symbolic links resolved), nil when it does not exist.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// A small file's text (at most `limit` bytes: 16 KiB), nil when it cannot be read. The sysfs reader of the
    /// hidraw and USB scans (USBStrings.sysfsAttribute).
    static func readSmallFile(_ path: String, limit: Int = 16384) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: limit)
        var total = 0
        while total < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + total, $0.count - total) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            total += n
        }
        return String(decoding: bytes[..<total], as: UTF8.self)
    }
}
