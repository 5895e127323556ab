import CBluetooth
import Glibc
import Testing
import TestSupport
import Transport
@testable import BluetoothTransport

/// The byte-level conversions between Tuneup's values and the kernel's Bluetooth structures.
@Suite struct KernelABITests {
    let headset = BluetoothAddress("00:AA:01:00:00:00")!
    let host = BluetoothAddress("00:AA:01:01:00:01")!

    @Test func bdaddrIsStoredLeastSignificantByteFirst() throws {
        let a = host.kernelAddress
        #expect([a.b.0, a.b.1, a.b.2, a.b.3, a.b.4, a.b.5] == [0x01, 0x00, 0x01, 0x01, 0xAA, 0x00])
        let b = try #require(BluetoothAddress("12:34:56:78:9A:BC")).kernelAddress
        #expect([b.b.0, b.b.1, b.b.2, b.b.3, b.b.4, b.b.5] == [0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12])
        let back = try #require(BluetoothAddress(kernelAddress: bdaddr_t(b: (0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12))))
        #expect(back.description == "12:34:56:78:9A:BC")
    }

    @Test func bdaddrRoundTrips() throws {
        var rng = TestRandom(seed: 0xB7)
        for _ in 0..<500 {
            let bytes = (0..<6).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let address = try #require(BluetoothAddress(BluetoothAddress.format(written: bytes)))
            #expect(address.bytes == bytes)
            #expect(BluetoothAddress(kernelAddress: address.kernelAddress) == address)
        }
    }

    @Test func specialAddresses() {
        let any = BluetoothAddress.anyKernelAddress
        let local = BluetoothAddress.localKernelAddress
        #expect([any.b.0, any.b.1, any.b.2, any.b.3, any.b.4, any.b.5] == [0, 0, 0, 0, 0, 0])
        // BDADDR_LOCAL is {0, 0, 0, 0xff, 0xff, 0xff}: written FF:FF:FF:00:00:00.
        #expect([local.b.0, local.b.1, local.b.2, local.b.3, local.b.4, local.b.5] == [0, 0, 0, 0xFF, 0xFF, 0xFF])
        #expect(BluetoothAddress(kernelAddress: local)?.description == "FF:FF:FF:00:00:00")
    }

    @Test func sockaddrRCLayout() {
        // struct sockaddr_rc { sa_family_t rc_family; bdaddr_t rc_bdaddr; uint8_t rc_channel; } = 10 bytes in C.
        #expect(RFCOMMSocketAddress.length == 10)
        #expect(MemoryLayout<sockaddr_rc>.offset(of: \sockaddr_rc.rc_bdaddr) == 2)
        #expect(MemoryLayout<sockaddr_rc>.offset(of: \sockaddr_rc.rc_channel) == 8)
        let encoded = RFCOMMSocketAddress(address: host.kernelAddress, channel: 5).bytes
        #expect(encoded == [UInt8(AF_BLUETOOTH), 0, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 5, 0])
        RFCOMMSocketAddress(address: host.kernelAddress, channel: 5).withSockaddr { pointer, length in
            #expect(length == 10)
            #expect(Int32(pointer.pointee.sa_family) == AF_BLUETOOTH)
        }
    }

    @Test func sockaddrRCDecodes() throws {
        let original = RFCOMMSocketAddress(address: headset.kernelAddress, channel: 30)
        let decoded = try #require(original.bytes.withUnsafeBytes { RFCOMMSocketAddress($0) })
        #expect(decoded == original)
        #expect(decoded.channel == 30)
        #expect(BluetoothAddress(kernelAddress: decoded.address) == headset)
        // Another family, or too short: not an RFCOMM address.
        var other = original.bytes
        other[0] = UInt8(AF_INET)
        #expect(other.withUnsafeBytes { RFCOMMSocketAddress($0) } == nil)
        #expect(Array(original.bytes.prefix(5)).withUnsafeBytes { RFCOMMSocketAddress($0) } == nil)
    }

    @Test func ioctlNumbersMatchTheIORFormula() {
        // _IOR(type, nr, int) = (2 << 30) | (sizeof(int) << 16) | (type << 8) | nr
        func ior(_ type: Character, _ nr: UInt) -> UInt { (2 << 30) | (4 << 16) | (UInt(type.asciiValue!) << 8) | nr }
        #expect(TUNEUP_HCIGETDEVLIST == ior("H", 210))
        #expect(TUNEUP_HCIGETDEVINFO == ior("H", 211))
        #expect(TUNEUP_HCIGETDEVINFO == 0x8004_48D3)
    }

    /// A `struct hci_dev_info` exactly as HCIGETDEVINFO fills it in for btvirt's second controller.
    func deviceInfoBytes(id: UInt16, name: String, address: [UInt8], flags: UInt32) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 92)  // sizeof(struct hci_dev_info)
        raw[0] = UInt8(id & 0xFF)
        raw[1] = UInt8(id >> 8)
        for (i, c) in name.utf8.prefix(8).enumerated() { raw[2 + i] = c }  // char name[8]
        for i in 0..<6 { raw[10 + i] = address[5 - i] }                    // bdaddr_t, little-endian
        for i in 0..<4 { raw[16 + i] = UInt8((flags >> (8 * UInt32(i))) & 0xFF) }  // uint32_t flags
        raw[20] = 0x01                                                     // type: primary
        return raw
    }

    @Test func hciDevInfoLayout() {
        #expect(MemoryLayout<hci_dev_info>.offset(of: \hci_dev_info.name) == 2)
        #expect(MemoryLayout<hci_dev_info>.offset(of: \hci_dev_info.bdaddr) == 10)
        #expect(MemoryLayout<hci_dev_info>.offset(of: \hci_dev_info.flags) == 16)
        #expect(MemoryLayout<hci_dev_info>.stride == 92)
    }

    @Test func decodesDeviceInfo() throws {
        let up = UInt32(1 << TUNEUP_HCI_UP), pscan = UInt32(1 << TUNEUP_HCI_PSCAN), iscan = UInt32(1 << TUNEUP_HCI_ISCAN)
        let raw = deviceInfoBytes(id: 1, name: "hci1", address: host.bytes, flags: up | pscan)
        let adapter = try #require(raw.withUnsafeBytes { BluetoothAdapter(deviceInfo: $0) })
        #expect(adapter.id == 1)
        #expect(adapter.name == "hci1")
        #expect(adapter.address == host)
        #expect(adapter.isUp && adapter.isConnectable && !adapter.isDiscoverable)
        #expect(adapter.description == "hci1 00:AA:01:01:00:01 up, connectable")

        let down = deviceInfoBytes(id: 12, name: "hci12", address: headset.bytes, flags: iscan)
        let other = try #require(down.withUnsafeBytes { BluetoothAdapter(deviceInfo: $0) })
        #expect(other.name == "hci12" && other.address == headset)
        #expect(!other.isUp && !other.isConnectable && other.isDiscoverable)
        #expect(other.description == "hci12 00:AA:01:00:00:00 down, discoverable")

        // A full 8-byte name has no terminator; a missing name falls back to hciN.
        let noName = deviceInfoBytes(id: 3, name: "", address: host.bytes, flags: 0)
        #expect(noName.withUnsafeBytes { BluetoothAdapter(deviceInfo: $0) }?.name == "hci3")
        let longName = deviceInfoBytes(id: 4, name: "hci12345", address: host.bytes, flags: 0)
        #expect(longName.withUnsafeBytes { BluetoothAdapter(deviceInfo: $0) }?.name == "hci12345")
        #expect(Array(raw.prefix(40)).withUnsafeBytes { BluetoothAdapter(deviceInfo: $0) } == nil)
    }

    @Test func decodesTheDeviceList() {
        // struct hci_dev_list_req { uint16_t dev_num; struct hci_dev_req { uint16_t dev_id; uint32_t dev_opt; } dev_req[]; }
        #expect(MemoryLayout<hci_dev_req>.stride == 8)
        #expect(MemoryLayout<hci_dev_req>.offset(of: \hci_dev_req.dev_opt) == 4)
        #expect(BluetoothAdapters.deviceListBytes == 4 + 16 * 8)
        var raw = [UInt8](repeating: 0, count: BluetoothAdapters.deviceListBytes)
        raw[0] = 3
        raw[4] = 0; raw[8] = 0x05            // hci0, flags UP|RUNNING
        raw[12] = 1                          // hci1
        raw[20] = 0x2C; raw[21] = 0x01       // hci300
        #expect(raw.withUnsafeBytes { BluetoothAdapters.parseDeviceList($0) } == [0, 1, 300])
        raw[0] = 0
        #expect(raw.withUnsafeBytes { BluetoothAdapters.parseDeviceList($0) } == [])
        raw[0] = 17  // more entries than the buffer holds
        #expect(raw.withUnsafeBytes { BluetoothAdapters.parseDeviceList($0) } == nil)
        #expect([UInt8]([1]).withUnsafeBytes { BluetoothAdapters.parseDeviceList($0) } == nil)
    }

    @Test(arguments: [
        ("hci0", AdapterSelector.id(0)),
        ("hci1", .id(1)),
        ("hci65535", .id(65535)),
        ("hci007", .id(7)),
        ("00:AA:01:01:00:01", .address(BluetoothAddress("00:AA:01:01:00:01")!)),
        ("00:aa:01:01:00:01", .address(BluetoothAddress("00:AA:01:01:00:01")!)),
    ])
    func parsesAdapterNames(text: String, expected: AdapterSelector) throws {
        #expect(try AdapterSelector(parsing: text) == expected)
    }

    @Test(arguments: ["", "hci", "hci-1", "hci65536", "hci1x", " hci0", "hci0 ", "HCI0", "usb0", "0", "00:AA:01:01:00", "hci+1", "hci١"])
    func rejectsBadAdapterNames(text: String) async {
        let error = await expectTransportError(.invalidAddress) { _ = try AdapterSelector(parsing: text) }
        #expect(error?.message == "bad Bluetooth adapter '\(text)': expected hciN (e.g. hci0) or the adapter's address AA:BB:CC:DD:EE:FF")
    }

    @Test func adapterSelectorDescriptions() {
        #expect(AdapterSelector.id(2).description == "hci2")
        #expect(AdapterSelector.address(host).description == "00:AA:01:01:00:01")
    }
}
