import Testing
@testable import USBGadget

/// Parses "03 00 00 00 ..." hex dumps as written in notes/vm-findings.md.
func hexBytes(_ text: String) -> [UInt8] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
}

@Suite struct DescriptorTests {
    /// The 70-byte v2 blob, exactly as measured (vm-findings §1).
    @Test func functionFSDescriptorsAreByteExact() {
        let expected = hexBytes("""
            03 00 00 00 46 00 00 00 03 00 00 00 03 00 00 00 03 00 00 00
            09 04 00 00 01 03 00 00 01  09 21 11 01 00 01 22 20 00  07 05 81 03 40 00 0A
            09 04 00 00 01 03 00 00 01  09 21 11 01 00 01 22 20 00  07 05 81 03 40 00 04
            """)
        #expect(expected.count == 70)
        #expect(HIDDescriptors.functionFSDescriptors == expected)
    }

    /// The 29-byte strings blob with "Tuneup HID".
    @Test func functionFSStringsAreByteExact() {
        let expected = hexBytes("02 00 00 00 1D 00 00 00 01 00 00 00 01 00 00 00 09 04 54 75 6E 65 75 70 20 48 49 44 00")
        #expect(expected.count == 29)
        #expect(HIDDescriptors.functionFSStrings() == expected)
        // Another interface name changes the length field and the text.
        let other = HIDDescriptors.functionFSStrings(interfaceName: "X")
        #expect(other.count == 20)
        #expect(Array(other[4..<8]) == [20, 0, 0, 0])
        #expect(Array(other.suffix(2)) == [0x58, 0x00])
    }

    /// The 32-byte report descriptor usbhid reads (and the kernel shows in sysfs).
    @Test func reportDescriptorIsByteExact() {
        let expected = hexBytes("""
            06 00 FF 09 01 A1 01 15 00 26 FF 00 75 08 85 F0 09 02 95 0D B1 02 85 F1 09 03 96 00 01 B1 02 C0
            """)
        #expect(expected.count == 32)
        #expect(HIDDescriptors.reportDescriptor == expected)
    }

    /// The HID descriptor is 9 bytes and names the report descriptor's length.
    @Test func hidDescriptorNamesTheReportDescriptorLength() {
        #expect(HIDDescriptors.hidDescriptor == hexBytes("09 21 11 01 00 01 22 20 00"))
        let n = HIDDescriptors.reportDescriptor.count
        #expect(Int(HIDDescriptors.hidDescriptor[7]) | Int(HIDDescriptors.hidDescriptor[8]) << 8 == n)
    }
}
