import Glibc
import Support
import Transport

/// What `tuneup devices` lists: the USB devices libusb sees, each with the hidraw node of its interface 0 (the path
/// `usb:` addresses take by default), and the hidraw nodes no listed USB device accounts for.
public struct USBHeadsetListing: Sendable {
    /// The USB devices (`USBDeviceList.scan`), with `hidraw` and `hidrawAccess` filled in.
    public var devices: [USBDeviceInfo]
    /// hidraw nodes of known headsets (every node with `all`) that no listed device accounts for (libusb could not
    /// list them, or they are not on USB), with whether this process may open them.
    public var otherNodes: [(node: HIDRawNode, access: USBDeviceInfo.Access)]
    /// "hidrawN: ..." for each node sysfs describes badly (skipped).
    public var problems: [String]
    /// Whether this machine has a USB subsystem at all (`/sys/bus/usb`): without one, an empty listing does not mean
    /// "nothing attached" (hidraw nodes that are listed count as found whatever this says).
    public var hasSubsystem: Bool

    /// Scans libusb (a dedicated thread) and sysfs (the blocking executor). A libusb that cannot start leaves the
    /// device list empty (the hidraw nodes are still listed).
    ///
    /// - Throws: `TransportError(.io)` when libusb's list fails, `CancellationError`.
    public static func scan(all: Bool, known: USBKnownDevices, sysfsRoot: String = "/sys", devRoot: String = "/dev") async throws -> USBHeadsetListing {
        var devices: [USBDeviceInfo]
        do {
            devices = try await USBDeviceList.scan(all: all, known: known)
        } catch let error as TransportError where error.code == .unsupported {
            devices = []
        }
        let scan = try await HIDRawDevices.scanOffPool(sysfsRoot: sysfsRoot, devRoot: devRoot)
        let accesses = try await Blocking.perform("tuneup-hidraw-access") { scan.nodes.map { nodeAccess($0.path) } }
        var claimed = Set<String>()
        for index in devices.indices {
            let location = devices[index].location
            if let i = scan.nodes.indices.first(where: { scan.nodes[$0].interface == 0 && scan.nodes[$0].location?.bus == location.bus
                                                         && scan.nodes[$0].location?.ports == location.ports }) {
                devices[index].hidraw = scan.nodes[i]
                devices[index].hidrawAccess = accesses[i]
                claimed.insert(scan.nodes[i].path)
            }
        }
        var others: [(node: HIDRawNode, access: USBDeviceInfo.Access)] = []
        for (node, access) in zip(scan.nodes, accesses) where !claimed.contains(node.path) {
            guard all || known.contains(vendorID: node.vendorID, productID: node.productID) else { continue }
            // A known headset's other HID interfaces (buttons) are not a way to it.
            if !all, let location = node.location, node.interface != 0,
               devices.contains(where: { $0.location.bus == location.bus && $0.location.ports == location.ports }) { continue }
            others.append((node, access))
        }
        return USBHeadsetListing(devices: devices, otherNodes: others, problems: scan.problems,
                                 hasSubsystem: USBDeviceList.hasUSBSubsystem)
    }

    /// Whether the node opens for reading and writing (access(2): no open, no device I/O).
    static func nodeAccess(_ path: String) -> USBDeviceInfo.Access {
        if access(path, R_OK | W_OK) == 0 { return .granted }
        let code = errno
        if code == EACCES || code == EPERM || code == EROFS { return .permissionDenied }
        return .failed(errorText(code))
    }
}

extension HIDRawNode {
    /// The rows `tuneup devices` shows under a node no listed USB device accounts for.
    public func listingRows(access: USBDeviceInfo.Access) -> [(String, String)] {
        var rows: [(String, String)] = []
        if let hidName { rows.append(("Name", hidName)) }
        if let serial { rows.append(("Serial", serial)) }
        if let driver { rows.append(("Driver", "\(driver) (stays bound)")) }
        switch access {
        case .granted: break
        case .permissionDenied: rows.append(("Access", "permission denied on \(path): install the udev rule from tools/udev/"))
        case .failed(let why): rows.append(("Access", "cannot open \(path): \(why)"))
        }
        rows.append(("Open with", "--device \(address)"))
        return rows
    }

    /// `hidraw:/dev/hidraw3  046d:c52b`, the title line of `listingRows`.
    public var listingTitle: String { "\(address)  \(usbHex4(vendorID)):\(usbHex4(productID))" }
}

/// A hidraw node in `tuneup devices --format json` (stable field names).
public struct HIDRawNodeReport: Encodable, Sendable {
    public var address: String
    public var node: String
    public var vendorID: String
    public var productID: String
    public var name: String?
    public var serial: String?
    public var driver: String?
    public var port: String?
    public var interface: Int?
    /// "ok", "permission-denied" or "error".
    public var access: String

    public init(_ node: HIDRawNode, access: USBDeviceInfo.Access) {
        address = node.address.description
        self.node = node.path
        vendorID = usbHex4(node.vendorID)
        productID = usbHex4(node.productID)
        name = node.hidName
        serial = node.serial
        driver = node.driver
        port = node.location?.portAddress?.description
        interface = node.interface
        switch access {
        case .granted: self.access = "ok"
        case .permissionDenied: self.access = "permission-denied"
        case .failed: self.access = "error"
        }
    }
}
