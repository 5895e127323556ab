import Foundation
import Glibc
import TestSupport
import Testing
import Transport
@testable import USBTransport

/// A fake sysfs tree (and /dev) for hidraw discovery, laid out as the kernel does it:
/// `devices/.../usb1/1-1/1-1:1.0/0003:1209:0001.0001/hidraw/hidraw0`, linked from `class/hidraw/hidraw0`, whose
/// `device` links to the HID device directory with its `uevent` and `driver`.
struct FakeSysfs {
    let root: String
    var sys: String { root + "/sys" }
    var dev: String { root + "/dev" }

    init() throws {
        root = try TemporaryDirectory.make("hidraw-sysfs")
        for dir in [sys + "/class/hidraw", sys + "/bus/usb/devices", sys + "/bus/hid/drivers/hid-generic", dev] { try mkdir(dir) }
    }

    func mkdir(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func write(_ path: String, _ text: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Array(text.utf8).withUnsafeBufferPointer { Foundation.Data($0) }) else {
            throw TestFailure("cannot write \(path)")
        }
    }

    func link(_ path: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }

    /// A USB device at `port` (e.g. "1-1.2") with `serial`, and its interface `interface` of `class`.
    func usbDevice(port: String, vid: String, pid: String, serial: String?, interface: Int = 0, interfaceClass: String = "03") throws -> String {
        let device = sys + "/devices/pci0000:00/0000:00:01.2/usb1/" + port
        try mkdir(device + "/\(port):1.\(interface)")
        try write(device + "/idVendor", vid + "\n")
        try write(device + "/idProduct", pid + "\n")
        if let serial { try write(device + "/serial", serial + "\n") }
        try write(device + "/\(port):1.\(interface)/bInterfaceClass", interfaceClass + "\n")
        if !FileManager.default.fileExists(atPath: sys + "/bus/usb/devices/" + port) {
            try link(sys + "/bus/usb/devices/" + port, to: device)
        }
        return device
    }

    /// hidraw node `name` for the HID device on `port`'s interface `interface` with this uevent.
    func node(_ name: String, port: String, interface: Int = 0, uevent: String?, driver: String? = "hid-generic") throws {
        let hid = sys + "/devices/pci0000:00/0000:00:01.2/usb1/\(port)/\(port):1.\(interface)/0003:1209:0001.000\(name.last!)"
        try mkdir(hid + "/hidraw/" + name)
        if let uevent { try write(hid + "/uevent", uevent) }
        if let driver { try link(hid + "/driver", to: sys + "/bus/hid/drivers/" + driver) }
        try link(hid + "/hidraw/\(name)/device", to: hid)
        try link(sys + "/class/hidraw/" + name, to: hid + "/hidraw/" + name)
        try write(dev + "/" + name, "")
    }

    /// A hidraw node of a Bluetooth HID device (no USB in its path).
    func bluetoothNode(_ name: String, uevent: String) throws {
        let hid = sys + "/devices/virtual/misc/uhid/0005:046D:B012.0009"
        try mkdir(hid + "/hidraw/" + name)
        try write(hid + "/uevent", uevent)
        try link(hid + "/hidraw/\(name)/device", to: hid)
        try link(sys + "/class/hidraw/" + name, to: hid + "/hidraw/" + name)
    }

    static func uevent(vid: String, pid: String, uniq: String, name: String = "Tuneup Simulated Headset") -> String {
        "DRIVER=hid-generic\nHID_ID=0003:0000\(vid):0000\(pid)\nHID_NAME=\(name)\nHID_PHYS=usb-dummy_hcd.0-1/input0\nHID_UNIQ=\(uniq)\nMODALIAS=hid:b0003g0001v0000\(vid)p0000\(pid)\n"
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

@Suite struct HIDRawDiscoveryTests {
    /// Two headsets (application on 1-1, its interface 3 a second HID node; bootloader id on 1-2.4 with the serial only
    /// in the USB device), a Bluetooth HID node, and two broken nodes.
    static func populatedTree() throws -> FakeSysfs {
        let fake = try FakeSysfs()
        _ = try fake.usbDevice(port: "1-1", vid: "1209", pid: "0001", serial: "S1")
        try fake.node("hidraw0", port: "1-1", uevent: FakeSysfs.uevent(vid: "1209", pid: "0001", uniq: "S1"))
        _ = try fake.usbDevice(port: "1-1", vid: "1209", pid: "0001", serial: "S1", interface: 3)
        try fake.node("hidraw2", port: "1-1", interface: 3, uevent: FakeSysfs.uevent(vid: "1209", pid: "0001", uniq: "S1", name: "buttons"))
        _ = try fake.usbDevice(port: "1-2.4", vid: "1209", pid: "0002", serial: "S2")
        try fake.node("hidraw10", port: "1-2.4", uevent: FakeSysfs.uevent(vid: "1209", pid: "0002", uniq: ""), driver: nil)
        try fake.bluetoothNode("hidraw1", uevent: "HID_ID=0005:0000046D:0000B012\nHID_NAME=Keyboard\nHID_UNIQ=aa:bb\n")
        _ = try fake.usbDevice(port: "1-3", vid: "1209", pid: "0001", serial: "S3")
        try fake.node("hidraw4", port: "1-3", uevent: "garbage\0\u{1}\n=\n")
        _ = try fake.usbDevice(port: "1-5", vid: "1209", pid: "0001", serial: "S5")
        try fake.node("hidraw5", port: "1-5", uevent: nil)
        _ = try fake.usbDevice(port: "1-6", vid: "1209", pid: "0001", serial: "S6")
        try fake.node("hidraw6", port: "1-6", uevent: "HID_ID=0003:0001209Z:00000001\n")
        _ = try fake.usbDevice(port: "1-7", vid: "1209", pid: "0001", serial: "S7")
        try fake.node("hidraw7", port: "1-7", uevent: "HID_ID=0003:00011209:00000001\n")
        return fake
    }

    @Test func findsTheNodesWithIdsSerialPortAndDriverAndSkipsBrokenOnes() throws {
        let fake = try Self.populatedTree()
        defer { fake.remove() }
        let scan = HIDRawDevices.scan(sysfsRoot: fake.sys, devRoot: fake.dev)
        #expect(scan.hasHIDRaw)
        #expect(scan.nodes.map(\.name) == ["hidraw0", "hidraw1", "hidraw2", "hidraw10"])
        let app = try #require(scan.nodes.first)
        #expect(app.path == fake.dev + "/hidraw0")
        #expect(app.busType == 3 && app.vendorID == 0x1209 && app.productID == 0x0001)
        #expect(app.serial == "S1")
        #expect(app.hidName == "Tuneup Simulated Headset")
        #expect(app.driver == "hid-generic")
        #expect(app.location == USBDeviceLocation(bus: 1, ports: [1], vendorID: 0x1209, productID: 0x0001))
        #expect(app.interface == 0)
        #expect(app.address.description == "hidraw:\(fake.dev)/hidraw0")
        let buttons = scan.nodes[2]
        #expect(buttons.interface == 3 && buttons.location?.ports == [1])
        let boot = scan.nodes[3]
        #expect(boot.productID == 0x0002)
        #expect(boot.serial == "S2", "HID_UNIQ empty: the USB device's serial")
        #expect(boot.location?.ports == [2, 4] && boot.location?.bus == 1)
        #expect(boot.driver == nil)
        let bluetooth = scan.nodes[1]
        #expect(bluetooth.busType == 5 && bluetooth.location == nil && bluetooth.serial == "aa:bb")
        #expect(scan.problems.count == 4, "\(scan.problems)")
        #expect(scan.problems.contains { $0.hasPrefix("hidraw4: uevent has no HID_ID line") }, "\(scan.problems)")
        #expect(scan.problems.contains { $0.hasPrefix("hidraw5: no readable device/uevent") }, "\(scan.problems)")
        #expect(scan.problems.contains { $0.hasPrefix("hidraw6: malformed HID_ID") }, "\(scan.problems)")
        #expect(scan.problems.contains { $0.hasPrefix("hidraw7: malformed HID_ID") }, "\(scan.problems)")
    }

    @Test func aMachineWithoutHIDRawHasNoNodes() throws {
        let root = try TemporaryDirectory.make("no-hidraw")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scan = HIDRawDevices.scan(sysfsRoot: root, devRoot: root)
        #expect(!scan.hasHIDRaw && scan.nodes.isEmpty && scan.problems.isEmpty)
    }

    @Test(arguments: [
        ("HID_ID=0003:00001209:00000001\nHID_NAME=X\nHID_UNIQ=S", UInt16(3), UInt16(0x1209), UInt16(1), "S" as String?),
        ("HID_UNIQ=\nHID_ID=0005:0000046D:0000B012", 5, 0x046D, 0xB012, nil),
        ("HID_ID=3:1209:1\r\n", 3, 0x1209, 1, nil),
    ])
    func ueventsParse(text: String, bus: UInt16, vid: UInt16, pid: UInt16, uniq: String?) throws {
        let event = try HIDRawDevices.parseUEvent(text)
        #expect(event.bus == bus && event.vendorID == vid && event.productID == pid && event.uniq == uniq)
    }

    @Test(arguments: ["", "HID_NAME=x", "HID_ID=", "HID_ID=0003:00001209", "HID_ID=0003:00001209:00000001:7", "HID_ID=0003:-1209:0001",
                      "HID_ID=0003:100001209:00000001", "HID_ID=0003:00001209:00010000", "HID_ID=0003:00001209:0000000g"])
    func badUEventsAreOneLineErrors(text: String) {
        let error = thrown { try HIDRawDevices.parseUEvent(text) }
        #expect(error.code == .io)
        #expect(!error.message.isEmpty && !error.message.contains("\n"))
    }

    @Test func usbPositionComesFromTheInterfaceDirectory() {
        let p = HIDRawDevices.usbPosition(inDevicePath: "/sys/devices/platform/dummy_hcd.0/usb1/1-1/1-1.3/1-1.3:1.2/0003:1209:0001.0004")
        #expect(p?.bus == 1 && p?.ports == [1, 3] && p?.interface == 2)
        #expect(p?.deviceDirectory == "/sys/devices/platform/dummy_hcd.0/usb1/1-1/1-1.3")
        #expect(HIDRawDevices.usbPosition(inDevicePath: "/sys/devices/virtual/misc/uhid/0005:046D:B012.0009") == nil)
        #expect(HIDRawDevices.usbPosition(inDevicePath: "/sys/devices/x/0-1:1.0/y") == nil, "bus 0 is no USB bus")
        #expect(HIDRawDevices.usbPosition(inDevicePath: "/sys/devices/x/1-300:1.0/y") == nil)
    }
}

@Suite struct HIDRawListingTests {
    @Test func theListingShowsKnownHeadsetsNodesAndWhatWasSkipped() async throws {
        let fake = try HIDRawDiscoveryTests.populatedTree()
        defer { fake.remove() }
        // This host's libusb sees no simulated headset: every node of a known headset is listed on its own.
        let listing = try await USBHeadsetListing.scan(all: false, known: .standard, sysfsRoot: fake.sys, devRoot: fake.dev)
        #expect(listing.devices.isEmpty)
        #expect(listing.otherNodes.map(\.node.name) == ["hidraw0", "hidraw2", "hidraw10"], "known ids only")
        #expect(listing.problems.count == 4)
        let everything = try await USBHeadsetListing.scan(all: true, known: .standard, sysfsRoot: fake.sys, devRoot: fake.dev)
        #expect(everything.otherNodes.map(\.node.name) == ["hidraw0", "hidraw1", "hidraw2", "hidraw10"])
        let node = listing.otherNodes[0].node
        #expect(node.listingTitle == "hidraw:\(fake.dev)/hidraw0  1209:0001")
        let rows = node.listingRows(access: .permissionDenied)
        #expect(rows.map(\.0) == ["Name", "Serial", "Driver", "Access", "Open with"])
        #expect(rows[3].1 == "permission denied on \(fake.dev)/hidraw0: install the udev rule from tools/udev/")
        #expect(rows[4].1 == "--device hidraw:\(fake.dev)/hidraw0")
        let report = HIDRawNodeReport(node, access: .granted)
        #expect(report.vendorID == "1209" && report.productID == "0001" && report.port == "usb:1-1" && report.interface == 0
            && report.access == "ok" && report.driver == "hid-generic")
    }
}

@Suite struct HIDRawChoiceTests {
    let known = USBKnownDevices.standard

    func filter(_ text: String) throws -> USBDeviceFilter {
        try USBDeviceFilter(address: DeviceAddress(parsing: text), known: known)
    }

    @Test func usbAddressesFindTheNodeOfInterfaceZero() throws {
        let fake = try HIDRawDiscoveryTests.populatedTree()
        defer { fake.remove() }
        let scan = HIDRawDevices.scan(sysfsRoot: fake.sys, devRoot: fake.dev)
        #expect(HIDRawDevices.matches(try filter("usb:1209:0001:S1"), in: scan).map(\.name) == ["hidraw0"])
        #expect(HIDRawDevices.matches(try filter("usb:1209:0002:S2"), in: scan).map(\.name) == ["hidraw10"])
        #expect(HIDRawDevices.matches(try filter("usb:1209:0001:S2"), in: scan).map(\.name) == ["hidraw10"], "the bootloader is the partner")
        #expect(HIDRawDevices.matches(try filter("usb:1-2.4"), in: scan).map(\.name) == ["hidraw10"])
        #expect(HIDRawDevices.matches(try filter("usb:1-1"), in: scan).map(\.name) == ["hidraw0"], "not the buttons' interface 3")
        #expect(HIDRawDevices.matches(try filter("usb:1209:0001:S9"), in: scan).isEmpty)
        #expect(HIDRawDevices.matches(try filter("usb:046d:b012"), in: scan).isEmpty, "a Bluetooth node is not USB")
    }

    @Test func theBackendChoice() throws {
        let fake = try HIDRawDiscoveryTests.populatedTree()
        defer { fake.remove() }
        let scan = HIDRawDevices.scan(sysfsRoot: fake.sys, devRoot: fake.dev)
        let one = try filter("usb:1209:0001:S1")
        let none = try filter("usb:1209:0001:S9")
        #expect(try USBBackendChoice.choose(.auto, filter: one, scan: scan, awaitingNode: false) == .hidraw(scan.nodes[0]))
        #expect(try USBBackendChoice.choose(.hidraw, filter: one, scan: scan, awaitingNode: false) == .hidraw(scan.nodes[0]))
        #expect(try USBBackendChoice.choose(.libusb, filter: one, scan: scan, awaitingNode: false) == .libusb)
        #expect(try USBBackendChoice.choose(.auto, filter: none, scan: scan, awaitingNode: false) == .libusb)
        #expect(try USBBackendChoice.choose(.hidraw, filter: none, scan: scan, awaitingNode: false) == .noNode)
        #expect(try USBBackendChoice.choose(.auto, filter: none, scan: scan, awaitingNode: true) == .waitForNode)
        #expect(try USBBackendChoice.choose(.libusb, filter: none, scan: scan, awaitingNode: true) == .libusb)
        let both = try filter("usb:1209:0001")
        let error = thrown { try USBBackendChoice.choose(.auto, filter: both, scan: scan, awaitingNode: false) }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains("matches 2 USB devices") && error.message.contains("usb:1-1 (1209:0001) serial S1")
            && error.message.contains("usb:1-2.4 (1209:0002) serial S2"), "\(error.message)")
    }

    @Test func anAttachedHIDInterfaceWithoutANodeIsAwaited() throws {
        let fake = try FakeSysfs()
        defer { fake.remove() }
        _ = try fake.usbDevice(port: "1-1", vid: "1209", pid: "0001", serial: "S1")
        _ = try fake.usbDevice(port: "1-2", vid: "1209", pid: "0001", serial: "S2", interfaceClass: "ff")
        #expect(HIDRawDevices.hidInterfaceAwaitingNode(try filter("usb:1209:0001:S1"), sysfsRoot: fake.sys))
        #expect(HIDRawDevices.hidInterfaceAwaitingNode(try filter("usb:1-1"), sysfsRoot: fake.sys))
        #expect(!HIDRawDevices.hidInterfaceAwaitingNode(try filter("usb:1209:0001:S2"), sysfsRoot: fake.sys), "not HID")
        #expect(!HIDRawDevices.hidInterfaceAwaitingNode(try filter("usb:1209:0001:S3"), sysfsRoot: fake.sys), "not attached")
        // Held by another program through libusb (usbfs bound to interface 0): no node is coming.
        let held = try fake.usbDevice(port: "1-4", vid: "1209", pid: "0001", serial: "S4")
        try fake.mkdir(fake.sys + "/bus/usb/drivers/usbfs")
        try fake.link(held + "/1-4:1.0/driver", to: fake.sys + "/bus/usb/drivers/usbfs")
        #expect(!HIDRawDevices.hidInterfaceAwaitingNode(try filter("usb:1209:0001:S4"), sysfsRoot: fake.sys), "usbfs holds it")
        try FileManager.default.removeItem(atPath: held + "/1-4:1.0/driver")
        try fake.mkdir(fake.sys + "/bus/usb/drivers/usbhid")
        try fake.link(held + "/1-4:1.0/driver", to: fake.sys + "/bus/usb/drivers/usbhid")
        #expect(HIDRawDevices.hidInterfaceAwaitingNode(try filter("usb:1209:0001:S4"), sysfsRoot: fake.sys), "usbhid bound, node coming")
    }

    @Test func backendNamesParse() throws {
        #expect(try USBBackend(parsing: "hidraw") == .hidraw)
        #expect(try USBBackend(parsing: "libusb") == .libusb)
        #expect(try USBBackend(parsing: "auto") == .auto)
        let error = thrown { try USBBackend(parsing: "usbfs") }
        #expect(error.message == "unknown USB back end 'usbfs': expected hidraw, libusb or auto")
    }

    /// The opener goes to the node the scan found (here a plain file, which is not hidraw), to libusb when told to, and
    /// says so when `hidraw` finds no node.
    @Test func theOpenerFollowsTheChoice() async throws {
        let fake = try HIDRawDiscoveryTests.populatedTree()
        defer { fake.remove() }
        func opener(_ backend: USBBackend) -> USBHeadsetOpener {
            var opener = USBHeadsetOpener(backend: backend, pollInterval: nil, knownDevices: known, logger: nil)
            opener.sysfsRoot = fake.sys
            opener.devRoot = fake.dev
            opener.nodeSettle = .zero
            return opener
        }
        let address = try DeviceAddress(parsing: "usb:1209:0001:S1")
        for backend in [USBBackend.auto, .hidraw] {
            do {
                _ = try await opener(backend).open(address, previous: nil, wait: .zero)
                Issue.record("opened a plain file as a hidraw node")
            } catch let error as TransportError {
                #expect(error.code == .unsupported, "\(error)")
                #expect(error.message == "usb:1209:0001:S1: \(fake.dev)/hidraw0 is not a hidraw node (HIDIOCGRAWINFO: Inappropriate ioctl for device)")
            }
        }
        do {
            _ = try await opener(.libusb).open(address, previous: nil, wait: .zero)
            Issue.record("libusb found a headset")
        } catch let error as TransportError {
            #expect(error.code == .notFound || error.code == .unsupported, "\(error)")
            #expect(!error.message.contains("hidraw"), "\(error.message)")
        }
        do {
            _ = try await opener(.hidraw).open(try DeviceAddress(parsing: "usb:1209:0001:S9"), previous: nil, wait: .zero)
            Issue.record("found a node")
        } catch let error as TransportError {
            #expect(error.code == .notFound)
            #expect(error.message.hasPrefix("no hidraw node is 1209:0001 or its partner 1209:0002 with serial S9"), "\(error.message)")
        }
    }
}

@Suite struct HIDRawNodeTests {
    /// The request numbers <linux/hidraw.h> gives (written out from _IOC: dir << 30 | size << 16 | 'H' << 8 | nr, and
    /// as the kernel headers' values printed by a C program).
    @Test func ioctlRequestNumbersAreTheKernels() {
        let readWrite: UInt = 3
        #expect(HIDRawIoctl.setFeature(length: 64) == 0xC040_4806)
        #expect(HIDRawIoctl.getFeature(length: 64) == 0xC040_4807)
        #expect(HIDRawIoctl.setFeature(length: 257) == 0xC101_4806)
        #expect(HIDRawIoctl.getFeature(length: 14) == 0xC00E_4807)
        #expect(HIDRawIoctl.rawInfo == 0x8008_4803)
        #expect(HIDRawIoctl.getFeature(length: 257) == readWrite << 30 | 257 << 16 | UInt(UInt8(ascii: "H")) << 8 | 0x07)
    }

    @Test func addressesParse() throws {
        let schemes = AddressSchemes.builtIn.registering(HIDRawAddress.addressScheme)
        let address = try schemes.parse("hidraw:/dev/hidraw3")
        #expect(address.scheme == "hidraw")
        #expect(address.description == "hidraw:/dev/hidraw3")
        #expect(HIDRawAddress.path(of: address) == "/dev/hidraw3")
        #expect(HIDRawAddress.path(of: .usb(vendorID: 0x1209, productID: 1, serial: nil)) == nil)
        for bad in ["hidraw:", "hidraw:dev/hidraw0", "hidraw:/", "hidraw:/dev/hid raw0"] {
            let error = thrown { try schemes.parse(bad) }
            #expect(error.code == .invalidAddress, "\(bad)")
            #expect(error.message.contains("hidraw:/dev/hidrawN"), "\(bad): \(error.message)")
        }
    }

    @Test func ioctlErrorsAreClassified() {
        let peer = "usb:1209:0001"
        let gone = HIDRawReportChannel.error(ENODEV, peer: peer, id: 0xF0, label: "GET_REPORT")
        #expect(gone == TransportError(.closed, "usb:1209:0001: device unplugged", errno: ENODEV))
        #expect(HIDRawReportChannel.error(ESHUTDOWN, peer: peer, id: 0xF0, label: "GET_REPORT").code == .closed)
        #expect(HIDRawReportChannel.error(EPIPE, peer: peer, id: 0xF1, label: "GET_REPORT").message
            == "usb:1209:0001: the device stalled report 0xF1 (GET_REPORT)")
        #expect(HIDRawReportChannel.error(ETIMEDOUT, peer: peer, id: 0xF0, label: "SET_REPORT").code == .timedOut)
        let io = HIDRawReportChannel.error(EIO, peer: peer, id: 0xF0, label: "SET_REPORT")
        #expect(io.code == .io && io.message == "usb:1209:0001: SET_REPORT 0xF0 failed: Input/output error")
        // EIO and EPROTO end a transfer whose device is going away: the channel then looks whether it went.
        #expect(HIDRawReportChannel.mayBeUnplugged(EIO) && HIDRawReportChannel.mayBeUnplugged(EPROTO))
        #expect(!HIDRawReportChannel.mayBeUnplugged(EPIPE) && !HIDRawReportChannel.mayBeUnplugged(EINVAL))
    }

    @Test func openingErrorsAreClassified() async throws {
        let dir = try TemporaryDirectory.make("hidraw-open")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            _ = try await HIDRawTransport.open(path: dir + "/hidraw9")
            Issue.record("opened a missing node")
        } catch let error as TransportError {
            #expect(error.code == .notFound)
            #expect(error.message.hasPrefix("cannot open hidraw:\(dir)/hidraw9: no such hidraw node"), "\(error.message)")
        }
        let denied = HIDRawTransport.openError(EACCES, path: "/dev/hidraw0", peer: "usb:1209:0001")
        #expect(denied.code == .permissionDenied)
        #expect(denied.message.contains("cannot open usb:1209:0001 (/dev/hidraw0): permission denied") && denied.message.contains("tools/udev/"))
        #expect(HIDRawTransport.openError(EIO, path: "/dev/hidraw0", peer: "hidraw:/dev/hidraw0").message
            == "cannot open hidraw:/dev/hidraw0: Input/output error")
    }
}
