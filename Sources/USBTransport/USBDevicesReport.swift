import Support
import Transport

/// What `tuneup devices` reports of a `USBHeadsetListing`: its JSON (stable field names) and its text for people, so
/// a program listing headsets shows what the tool shows without writing it again.
public struct USBDevicesReport: Encodable, Sendable {
    public var devices: [Entry]
    /// The known-headset table in use, as `vvvv:pppp/bbbb`.
    public var knownIDs: [String]
    /// hidraw nodes no listed device accounts for.
    public var hidrawNodes: [HIDRawNodeReport]
    /// "hidrawN: why" for nodes skipped.
    public var hidrawProblems: [String]

    /// The listing's text: the devices (or why none is shown), the other hidraw nodes, the skipped ones.
    public let text: String

    private enum CodingKeys: String, CodingKey { case devices, knownIDs, hidrawNodes, hidrawProblems }

    /// The report of `listing`, scanned with `known` (`all`: every USB device was asked for).
    public init(_ listing: USBHeadsetListing, known: USBKnownDevices, all: Bool) {
        devices = listing.devices.map(Entry.init)
        knownIDs = known.entries.map(\.description)
        hidrawNodes = listing.otherNodes.map { HIDRawNodeReport($0.node, access: $0.access) }
        hidrawProblems = listing.problems
        text = ([Self.text(listing.devices, known: known, all: all, others: !listing.otherNodes.isEmpty)]
            + listing.otherNodes.map { Self.text($0.node, $0.access) }
            + listing.problems.map { "skipped \($0)" }).joined(separator: "\n")
    }

    /// Scans (`USBHeadsetListing.scan`) and reports. A machine without a USB subsystem and without a hidraw node to
    /// show is `TransportError(.unsupported)` (an empty list would say "nothing attached", which is not known).
    public static func scan(all: Bool, known: USBKnownDevices) async throws -> USBDevicesReport {
        let listing = try await USBHeadsetListing.scan(all: all, known: known)
        if listing.devices.isEmpty, listing.otherNodes.isEmpty, !listing.hasSubsystem {
            throw TransportError(.unsupported, "USB is not available on this system: there is no USB subsystem (/sys/bus/usb is missing: no USB controller, or a kernel without USB support)")
        }
        return USBDevicesReport(listing, known: known, all: all)
    }

    /// A hidraw node no listed USB device accounts for.
    static func text(_ node: HIDRawNode, _ access: USBDeviceInfo.Access) -> String {
        node.listingTitle + "\n" + indented(TextTable.aligned(node.listingRows(access: access)))
    }

    static func indented(_ table: String) -> String {
        table.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
    }

    static func text(_ devices: [USBDeviceInfo], known: USBKnownDevices, all: Bool, others: Bool = false) -> String {
        guard !devices.isEmpty else {
            if others { return "hidraw nodes:" }
            return all ? "No USB devices found."
                : "No USB headsets found (looking for \(known.summary); add others with TUNEUP_USB_IDS=VVVV:PPPP[/BBBB], or list every device with --all)."
        }
        return devices.map { device in
            var title = "\(device.location.portAddress?.description ?? "bus \(device.location.bus) root hub")  \(device.location.ids)"
            if let role = device.role {
                var kind = role.rawValue
                if let partner = device.partnerProductID {
                    let other = role == .application ? "bootloader" : "application"
                    kind += "; \(other) \(usbIDs(device.location.vendorID, partner))"
                }
                title += " (\(kind))"
            }
            var rows: [(String, String)] = []
            if let value = device.manufacturer { rows.append(("Manufacturer", value)) }
            if let value = device.product { rows.append(("Product", value)) }
            if let value = device.serial { rows.append(("Serial", value)) }
            if let problem = device.stringsProblem { rows.append(("Strings", problem)) }
            switch device.access {
            case .granted: break
            case .permissionDenied:
                rows.append(("Access", "permission denied on \(device.nodePath): install the udev rule from tools/udev/"))
            case .failed(let why):
                rows.append(("Access", "cannot open \(device.nodePath): \(why)"))
            }
            if device.role != nil || device.location.portAddress != nil {
                rows.append(("Open with", "--device \(device.address)"))
                rows.append(("Reach by", device.reachableBy))
            }
            return rows.isEmpty ? title : title + "\n" + indented(TextTable.aligned(rows))
        }.joined(separator: "\n")
    }

    /// One USB device in the JSON (stable field names).
    public struct Entry: Encodable, Sendable {
        /// The address to pass to --device (serial form when the device has a serial, else the port form).
        public var address: String
        /// `usb:BUS-PORT[.PORT]`, absent for root hubs.
        public var port: String?
        public var bus: Int
        public var vendorID: String
        public var productID: String
        /// "application", "bootloader", or absent for a device the known-id table does not list.
        public var role: String?
        public var partnerProductID: String?
        public var manufacturer: String?
        public var product: String?
        public var serial: String?
        /// Why strings are missing, when they are.
        public var stringsProblem: String?
        /// "ok", "permission-denied" or "error".
        public var access: String
        public var accessError: String?
        public var node: String
        /// The hidraw node of interface 0, which usb: addresses take by default; absent: libusb only.
        public var hidraw: String?
        /// The hidraw node's driver (bound while tuneup talks to it).
        public var hidrawDriver: String?

        public init(_ d: USBDeviceInfo) {
            address = d.address
            port = d.location.portAddress?.description
            bus = Int(d.location.bus)
            let ids = usbIDs(d.location.vendorID, d.location.productID).split(separator: ":").map(String.init)
            vendorID = ids.first ?? ""
            productID = ids.last ?? ""
            role = d.role?.rawValue
            partnerProductID = d.partnerProductID.map { usbIDs(d.location.vendorID, $0).split(separator: ":").last.map(String.init) ?? "" }
            manufacturer = d.manufacturer
            product = d.product
            serial = d.serial
            stringsProblem = d.stringsProblem
            node = d.nodePath
            hidraw = d.hidraw?.path
            hidrawDriver = d.hidraw?.driver
            switch d.access {
            case .granted: access = "ok"
            case .permissionDenied: access = "permission-denied"
            case .failed(let why):
                access = "error"
                accessError = why
            }
        }
    }
}

/// `vvvv:pppp`.
private func usbIDs(_ vendor: UInt16, _ product: UInt16) -> String {
    let text = DeviceAddress.usb(vendorID: vendor, productID: product, serial: nil).description
    return text.hasPrefix("usb:") ? String(text.dropFirst(4)) : text
}
