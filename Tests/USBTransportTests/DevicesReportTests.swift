import Foundation
import Testing
@testable import USBTransport

/// What `tuneup devices` prints and its JSON are the library's `USBDevicesReport` (issue 31 §1).
@Suite struct DevicesReportTests {
    func headset(serial: String?, access: USBDeviceInfo.Access = .granted) -> USBDeviceInfo {
        USBDeviceInfo(location: USBDeviceLocation(bus: 1, ports: [2], vendorID: 0x1209, productID: 0x0001), nodePath: "/dev/bus/usb/001/004",
                      role: .application, partnerProductID: 0x0002, manufacturer: "Tuneup", product: "TS1", serial: serial,
                      stringsProblem: nil, access: access, hidraw: nil, hidrawAccess: nil)
    }

    @Test func aHeadsetIsListedWithItsAddressAndPartner() throws {
        let listing = USBHeadsetListing(devices: [headset(serial: "TS1-1")], otherNodes: [], problems: ["hidraw9: no HID_ID"], hasSubsystem: true)
        let report = USBDevicesReport(listing, known: .standard, all: false)
        #expect(report.text == """
            usb:1-2  1209:0001 (application; bootloader 1209:0002)
              Manufacturer  Tuneup
              Product       TS1
              Serial        TS1-1
              Open with     --device usb:1209:0001:TS1-1
              Reach by      libusb (no hidraw node)
            skipped hidraw9: no HID_ID
            """)
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(json.contains("\"partnerProductID\":\"0002\""))
        #expect(json.contains("\"knownIDs\":[\"1209:0001\\/0002\"]"))
        #expect(!json.contains("\"text\""))
    }

    @Test func nothingAttachedSaysWhatWasLookedFor() {
        let none = USBHeadsetListing(devices: [], otherNodes: [], problems: [], hasSubsystem: true)
        #expect(USBDevicesReport(none, known: .standard, all: false).text.hasPrefix("No USB headsets found (looking for "))
        #expect(USBDevicesReport(none, known: .standard, all: true).text == "No USB devices found.")
    }

    @Test func aRefusedDeviceSaysToInstallTheRule() {
        let listing = USBHeadsetListing(devices: [headset(serial: nil, access: .permissionDenied)], otherNodes: [], problems: [], hasSubsystem: true)
        #expect(USBDevicesReport(listing, known: .standard, all: false).text
            .contains("Access        permission denied on /dev/bus/usb/001/004: install the udev rule from tools/udev/"))
    }
}
