import ArgumentParser
import Foundation
import Terminal
import Transport
import TuneupKit
import USBTransport

/// `tuneup devices`: the USB headsets attached to this machine, with their identity strings.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List attached USB headsets (or every USB device) with their identity strings and hidraw nodes.",
        discussion: """
            Known headsets are the simulated headset (1209:0001, bootloader 1209:0002) and the ids in \
            $TUNEUP_USB_IDS ("VVVV:PPPP[/BBBB],...", BBBB = the bootloader's product id). Each entry shows the \
            address to pass to --device. Strings come from the kernel's copy (sysfs), else from the device; \
            "permission denied" means the udev rule from tools/udev/ is not installed. "Reach by" says whether \
            usb: addresses take the headset's hidraw node (its HID driver stays bound) or libusb.

            Exit codes: 0 (also when nothing is attached), 64 bad $TUNEUP_USB_IDS, 69 no USB subsystem here.
            """)

    @Flag(help: "List every USB device, not only known headsets.")
    var all = false

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let known: USBKnownDevices
        let listing: USBHeadsetListing
        do {
            known = try USBBridge.knownDevices()
            listing = try await USBHeadsetListing.scan(all: all, known: known)
            if listing.devices.isEmpty, listing.otherNodes.isEmpty, !listing.hasSubsystem {
                throw TransportError(.unsupported, "USB is not available on this system: there is no USB subsystem (/sys/bus/usb is missing: no USB controller, or a kernel without USB support)")
            }
        } catch {
            throw failureExit(error)
        }
        let devices = listing.devices
        let report = DevicesReport(devices: devices.map(DeviceEntry.init), knownIDs: known.entries.map(\.description),
                                   hidrawNodes: listing.otherNodes.map { HIDRawNodeReport($0.node, access: $0.access) }, hidrawProblems: listing.problems)
        try Output.emit(report, json: output.json) {
            ([Self.text(devices, known: known, all: all, others: !listing.otherNodes.isEmpty)] + listing.otherNodes.map(Self.text)
                + listing.problems.map { "skipped \($0)" }).joined(separator: "\n")
        }
    }

    /// A hidraw node no listed USB device accounts for.
    static func text(_ node: HIDRawNode, _ access: USBDeviceInfo.Access) -> String {
        node.listingTitle + "\n" + Output.table(node.listingRows(access: access)).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
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
            let table = Output.table(rows).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
            return rows.isEmpty ? title : title + "\n" + table
        }.joined(separator: "\n")
    }
}

/// `vvvv:pppp`.
private func usbIDs(_ vendor: UInt16, _ product: UInt16) -> String {
    DeviceAddress.usb(vendorID: vendor, productID: product, serial: nil).description.replacingOccurrences(of: "usb:", with: "")
}

/// The JSON form of `tuneup devices` (stable field names).
struct DevicesReport: Encodable {
    var devices: [DeviceEntry]
    /// The known-headset table in use, as `vvvv:pppp/bbbb`.
    var knownIDs: [String]
    /// hidraw nodes no listed device accounts for.
    var hidrawNodes: [HIDRawNodeReport]
    /// "hidrawN: why" for nodes skipped.
    var hidrawProblems: [String]
}

struct DeviceEntry: Encodable {
    /// The address to pass to --device (serial form when the device has a serial, else the port form).
    var address: String
    /// `usb:BUS-PORT[.PORT]`, absent for root hubs.
    var port: String?
    var bus: Int
    var vendorID: String
    var productID: String
    /// "application", "bootloader", or absent for a device the known-id table does not list.
    var role: String?
    var partnerProductID: String?
    var manufacturer: String?
    var product: String?
    var serial: String?
    /// Why strings are missing, when they are.
    var stringsProblem: String?
    /// "ok", "permission-denied" or "error".
    var access: String
    var accessError: String?
    var node: String
    /// The hidraw node of interface 0, which usb: addresses take by default; absent: libusb only.
    var hidraw: String?
    /// The hidraw node's driver (bound while tuneup talks to it).
    var hidrawDriver: String?

    init(_ d: USBDeviceInfo) {
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
