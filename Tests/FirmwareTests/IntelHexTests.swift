import Testing
@testable import Firmware

@Suite struct IntelHexTests {
    @Test func decodesRecordsWithGapsAndAddressing() throws {
        // Extended linear address 0x0804, data at 0x08040000, a gap, data at 0x08040010, start address, EOF.
        let text = """
            :020000040804EE
            :0400000001020304F2
            :02001000AABB89
            :0400000508040000EB
            :00000001FF

            """
        let (base, data) = try IntelHex.decode(text)
        #expect(base == 0x0804_0000)
        #expect(data == [1, 2, 3, 4] + [UInt8](repeating: 0xFF, count: 12) + [0xAA, 0xBB])
    }

    @Test func extendedSegmentAddressAndCRLF() throws {
        // Segment 0x1000 → base 0x10000; lower-case digits; CRLF line ends; a start-segment record.
        let text = ":0200000210 00EC\r\n:0300000011223397\r\n:0400000300000000F9\r\n:00000001ff\r\n".replacingOccurrences(of: " ", with: "")
        let (base, data) = try IntelHex.decode(text)
        #expect(base == 0x10000)
        #expect(data == [0x11, 0x22, 0x33])
    }

    @Test func roundTrip() throws {
        var rng = SystemRandomNumberGenerator()
        for (count, base) in [(1, UInt32(0)), (16, 0), (17, 0x100), (300, 0x0800_0000), (70_000, 0x0004_0000), (40, 0x0000_FFF0), (5, 0xFFFF_FFFB)] {
            let data = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = IntelHex.encode(data, base: base)
            let decoded = try IntelHex.decode(text)
            #expect(decoded.base == base)
            #expect(decoded.bytes == data)
            #expect(text.hasSuffix(":00000001FF\n"))
        }
        // Records never cross a 64 KiB boundary; an 04 record announces each new segment.
        let text = IntelHex.encode([UInt8](repeating: 0x5A, count: 32), base: 0x0001_FFF8)
        #expect(text.contains(":020000040001F9") && text.contains(":020000040002F8"))
        #expect(text.split(separator: "\n").first { $0.hasPrefix(":10FFF8") } == nil)
    }

    @Test(arguments: [
        ("01000000AA55\n:00000001FF", "line 1: does not start with ':'"),
        (":0100000AA55\n:00000001FF", "line 1: odd number of hex digits"),
        (":01000000AA56\n:00000001FF", "line 1: checksum is 0x56, expected 0x55"),
        (":02000000AA55\n:00000001FF", "line 1: byte count says 2 data bytes, the line has 1"),
        (":0100000GAA55\n:00000001FF", "line 1: '0G' is not a hex byte"),
        (":010000\n", "too short"),
        ("\n\n:01000006AA4F\n:00000001FF", "line 3: unsupported record type 0x6"),
        (":01000000AA55\n", "no end-of-file record"),
        (":00000001FF\n:01000000AA55\n", "line 2: data after the end-of-file record"),
        (":00000001FF\n", "no data records"),
        (":01000000AA55\n:01000000BB44\n:00000001FF", "line 2: address 0x0 is written twice"),
        (":0100000100FE\n", "line 1: end-of-file record with 1 data bytes"),
        (":0100000400FB\n:00000001FF", "line 1: extended linear address record needs 2 data bytes"),
        (":01000000AA55\n:02000004FFFFFC\n:01000000AA55\n:00000001FF", "spans"),
    ])
    func rejectsWithLineNumbers(_ text: String, _ fragment: String) {
        let e = imageError { _ = try IntelHex.decode(text) }
        #expect(e?.code == .badHex)
        #expect(e?.message.contains(fragment) == true, "\(e?.message ?? "decoded")")
    }

    @Test func detection() {
        #expect(IntelHex.looksLikeHex(Array("  \n:00000001FF".utf8)))
        #expect(IntelHex.looksLikeHex([0xEF, 0xBB, 0xBF] + Array(":00".utf8)))
        #expect(!IntelHex.looksLikeHex(Array("TUFW".utf8)))
        #expect(!IntelHex.looksLikeHex([]))
    }
}
