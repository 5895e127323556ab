import Testing
import Transport
@testable import USBTransport

@Suite struct KnownDevicesTests {
    @Test func standardTableIsTheSimulatorWithItsBootloader() {
        let known = USBKnownDevices.standard
        #expect(known.entries == [.init(vendorID: 0x1209, applicationProductID: 0x0001, bootloaderProductID: 0x0002)])
        #expect(known.role(vendorID: 0x1209, productID: 0x0001) == .application)
        #expect(known.role(vendorID: 0x1209, productID: 0x0002) == .bootloader)
        #expect(known.role(vendorID: 0x1209, productID: 0x0003) == nil)
        #expect(known.role(vendorID: 0x120A, productID: 0x0001) == nil)
        #expect(known.summary == "1209:0001/0002")
    }

    @Test func parsesEntriesWithAndWithoutBootloaderIDs() throws {
        let entries = try USBKnownDevices.parse(" 0a12:4f1/4F2 ,1d6b:0104,FFFF:0 ")
        #expect(entries == [
            .init(vendorID: 0x0A12, applicationProductID: 0x04F1, bootloaderProductID: 0x04F2),
            .init(vendorID: 0x1D6B, applicationProductID: 0x0104, bootloaderProductID: nil),
            .init(vendorID: 0xFFFF, applicationProductID: 0x0000, bootloaderProductID: nil),
        ])
        #expect(entries.map(\.description) == ["0a12:04f1/04f2", "1d6b:0104", "ffff:0000"])
        #expect(try USBKnownDevices.parse("") == [])
        #expect(try USBKnownDevices.parse("  ") == [])
    }

    @Test(arguments: [
        ("1209", "bad TUNEUP_USB_IDS entry '1209'"),
        ("12345:0001", "bad TUNEUP_USB_IDS entry '12345:0001'"),
        ("1209:0001/", "bad bootloader id"),
        ("1209:0001/0002/0003", "bad TUNEUP_USB_IDS entry"),
        (":0001", "bad TUNEUP_USB_IDS entry"),
        ("zz:0001", "bad TUNEUP_USB_IDS entry 'zz:0001'"),
        ("1209:+1", "bad TUNEUP_USB_IDS entry"),
        ("1209:0001,,1209:0003", "empty entry"),
        ("1209:0001:ABC", "bad TUNEUP_USB_IDS entry"),
        ("１２０９:0001", "bad TUNEUP_USB_IDS entry"),
    ])
    func rejectsMalformedEntries(text: String, fragment: String) {
        let error = thrown { try USBKnownDevices.parse(text) }
        #expect(error.code == .invalidAddress)
        #expect(error.message.contains(fragment), "\(error.message)")
        #expect(!error.message.contains("\n"))
    }

    @Test func environmentAddsToTheStandardTable() throws {
        let known = try USBKnownDevices.fromEnvironment(["TUNEUP_USB_IDS": "0a12:0100/0200", "OTHER": "x"])
        #expect(known.entries.count == 2)
        #expect(known.entries[0] == USBKnownDevices.standard.entries[0])
        #expect(known.role(vendorID: 0x0A12, productID: 0x0200) == .bootloader)
        #expect(try USBKnownDevices.fromEnvironment([:]) == .standard)
        #expect(throws: TransportError(.invalidAddress, "")) { try USBKnownDevices.fromEnvironment(["TUNEUP_USB_IDS": "nonsense"]) }
    }

    @Test func partnersGoBothWays() throws {
        let known = USBKnownDevices(USBKnownDevices.standard.entries + (try USBKnownDevices.parse("1209:0010/0011,1209:0001/0020,1209:0030")))
        #expect(known.matchingProductIDs(vendorID: 0x1209, productID: 0x0001) == [0x0001, 0x0002, 0x0020])
        #expect(known.matchingProductIDs(vendorID: 0x1209, productID: 0x0002) == [0x0002, 0x0001])
        #expect(known.matchingProductIDs(vendorID: 0x1209, productID: 0x0011) == [0x0011, 0x0010])
        #expect(known.matchingProductIDs(vendorID: 0x1209, productID: 0x0030) == [0x0030])
        #expect(known.matchingProductIDs(vendorID: 0x1209, productID: 0x0099) == [0x0099])
        #expect(known.matchingProductIDs(vendorID: 0x1D6B, productID: 0x0001) == [0x0001])
        // An entry whose bootloader id equals its application id adds no duplicate.
        let odd = USBKnownDevices([.init(vendorID: 1, applicationProductID: 5, bootloaderProductID: 5)])
        #expect(odd.matchingProductIDs(vendorID: 1, productID: 5) == [5])
    }
}

@Suite struct DeviceFilterTests {
    static let app = USBDeviceLocation(bus: 1, ports: [1], vendorID: 0x1209, productID: 0x0001)
    static let boot = USBDeviceLocation(bus: 1, ports: [1], vendorID: 0x1209, productID: 0x0002)
    static let other = USBDeviceLocation(bus: 2, ports: [3, 1], vendorID: 0x1209, productID: 0x0003)
    static let foreign = USBDeviceLocation(bus: 1, ports: [2], vendorID: 0x120A, productID: 0x0001)
    static let hub = USBDeviceLocation(bus: 1, ports: [], vendorID: 0x1D6B, productID: 0x0002)

    func filter(_ text: String, known: USBKnownDevices = .standard) throws -> USBDeviceFilter {
        try USBDeviceFilter(address: try DeviceAddress(parsing: text), known: known)
    }

    @Test func applicationAddressAlsoFindsTheBootloader() throws {
        let f = try filter("usb:1209:0001")
        #expect(f.matches(Self.app))
        #expect(f.matches(Self.boot))
        #expect(!f.matches(Self.other))
        #expect(!f.matches(Self.foreign))
        #expect(!f.matches(Self.hub))
        #expect(f.serial == nil)
        #expect(f.lookingFor == "1209:0001 or its partner 1209:0002")
    }

    @Test func bootloaderAddressAlsoFindsTheApplication() throws {
        let f = try filter("usb:1209:0002:TS1-000001")
        #expect(f.matches(Self.app) && f.matches(Self.boot))
        #expect(f.serial == "TS1-000001")
        #expect(f.lookingFor == "1209:0002 or its partner 1209:0001 with serial TS1-000001")
    }

    @Test func unknownProductMatchesOnlyItself() throws {
        let f = try filter("usb:1209:0003")
        #expect(f.matches(Self.other))
        #expect(!f.matches(Self.app) && !f.matches(Self.boot))
        #expect(f.lookingFor == "1209:0003")
        let known = try USBKnownDevices.fromEnvironment(["TUNEUP_USB_IDS": "1209:0003/0001"])
        #expect(try filter("usb:1209:0003", known: known).matches(Self.app))
    }

    @Test func portAddressMatchesThatPortWhateverTheIDs() throws {
        let f = try filter("usb:2-3.1")
        #expect(f.matches(Self.other))
        #expect(f.matches(USBDeviceLocation(bus: 2, ports: [3, 1], vendorID: 0xDEAD, productID: 0xBEEF)))
        #expect(!f.matches(USBDeviceLocation(bus: 2, ports: [3], vendorID: 0x1209, productID: 0x0003)))
        #expect(!f.matches(USBDeviceLocation(bus: 2, ports: [3, 1, 1], vendorID: 0x1209, productID: 0x0003)))
        #expect(!f.matches(USBDeviceLocation(bus: 1, ports: [3, 1], vendorID: 0x1209, productID: 0x0003)))
        #expect(f.lookingFor == "the device at usb:2-3.1")
    }

    @Test func nonUSBAddressesAreRefused() throws {
        for text in ["sim", "tcp:127.0.0.1:1", "bt:00:11:22:33:44:55"] {
            #expect(throws: TransportError(.invalidAddress, "")) { try filter(text) }
        }
    }

    @Test func notFoundSaysWhatWasLookedFor() throws {
        let f = try filter("usb:1209:0001:S1")
        let none = f.notFoundError(seen: 0, waited: nil)
        #expect(none.code == .notFound)
        #expect(none.message == "USB device usb:1209:0001:S1 not found: no device is 1209:0001 or its partner 1209:0002 with serial S1; no USB devices are visible at all")
        let some = f.notFoundError(seen: 2, waited: .milliseconds(1500))
        #expect(some.message.contains("(2 other USB devices present; `tuneup devices --all` lists them); waited 1.5 s"))
    }

    @Test func severalMatchesAreListed() throws {
        let error = try filter("usb:1209:0001").ambiguityError([
            (Self.app, "TS1-000001"),
            (USBDeviceLocation(bus: 1, ports: [2], vendorID: 0x1209, productID: 0x0002), nil),
        ])
        #expect(error.code == .invalidAddress)
        #expect(error.message == "usb:1209:0001 matches 2 USB devices: usb:1-1 (1209:0001) serial TS1-000001; usb:1-2 (1209:0002) serial unknown; add the serial (usb:VID:PID:SERIAL) or use the port form usb:BUS-PORT")
        let same = try filter("usb:1209:0001:X").ambiguityError([(Self.app, "X"), (Self.boot, "X")])
        #expect(same.message.hasSuffix("use the port form usb:BUS-PORT"))
    }

    @Test func locationsDescribeThemselves() {
        #expect(Self.other.description == "usb:2-3.1 (1209:0003)")
        #expect(Self.hub.description == "bus 1 root hub (1d6b:0002)")
        #expect(Self.hub.portAddress == nil)
        #expect(Self.app.ids == "1209:0001")
    }

    @Test func durationsFormatWithoutTraps() {
        #expect(formatUSBDuration(.seconds(2)) == "2 s")
        #expect(formatUSBDuration(.milliseconds(250)) == "250 ms")
        #expect(formatUSBDuration(.milliseconds(1500)) == "1.5 s")
        #expect(milliseconds(.seconds(-3)) == 0)
        #expect(milliseconds(.seconds(Int64.max)) == Int64.max / 2)
    }
}
