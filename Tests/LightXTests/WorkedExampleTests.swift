import Testing
@testable import LightX

/// The sheet's worked examples (§1.2) and the captured AV35xx frames (§7.2), byte for byte.
@Suite struct WorkedExampleTests {
    @Test func sdhmANCOnEncodesByteExact() throws {
        let packet = try AppSettings.ancEnabled.writeRequest(true)
        #expect(SPPFraming.encode(packet) == bytes("ff 5a 00 00 00 17 0f 40 82 00 00 00 00 85 04 00 00 00 01 00 00 00 35"))
    }

    @Test func sdhmReadBatteryIs275Bytes() {
        let frame = SPPFraming.encode(AppSettings.batteryLevel.readRequest())
        #expect(frame.count == 275)
        #expect(Array(frame.prefix(18)) == bytes("ff 5a 00 00 01 13 0f 40 81 00 00 00 00 b0 00 01 00 00"))
        #expect(frame[18..<274].allSatisfy { $0 == 0 })
        #expect(frame[274] == 0x12)
    }

    static let av35xxFrames: [(name: String, hex: String, checksum: UInt8)] = [
        ("ANC on", "FF 5A 00 00 00 17 | 0F 43 82 00 | 00 00 F0 0C | 04 00 00 00 | 01 00 00 00 | BB", 0xBB),
        ("ANC off", "FF 5A 00 00 00 17 | 0F 43 82 00 | 00 00 F0 0C | 04 00 00 00 | 00 00 00 00 | BC", 0xBC),
        ("Read ANC", "FF 5A 00 00 00 23 | 0F 43 81 00 | 00 00 F0 0C | 10 00 00 00 | " + String(repeating: "00 ", count: 16) + "| A5", 0xA5),
    ]

    @Test(arguments: av35xxFrames.indices)
    func av35xxFrameDecodesAndReencodes(index: Int) throws {
        let (name, hex, checksum) = Self.av35xxFrames[index]
        let frame = bytes(hex)
        let packet = try SPPFraming.decodeFrame(frame)
        #expect(packet.header.source == .bluetooth, "\(name)")
        #expect(packet.header.destination == .av35xxApplication)
        #expect(!packet.header.destination.isKnown, "0x43 is outside the SDHM enumeration and must be kept, not rejected")
        #expect(packet.header.command.rawValue == 0x0C)
        #expect(packet.header.address == 0xF0_0000)
        #expect(packet.header.hasBuffer)
        #expect(packet.buffer.count == Int(packet.header.param1))
        #expect(frame.last == checksum)
        #expect(SPPFraming.encode(packet) == frame)
    }

    @Test func av35xxANCOnRebuiltFromFields() throws {
        let packet = try Packet.request(.write, Command(rawValue: 0x0C), argument: [1, 0, 0, 0], address: 0xF0_0000,
                                        destination: .av35xxApplication)
        #expect(SPPFraming.encode(packet) == bytes(Self.av35xxFrames[0].hex))
    }

    @Test func crcCheckValue() {
        #expect(CRC32JAMCRC.checksum(Array("123456789".utf8)) == 0x340B_C6D9)
        #expect(CRC32JAMCRC.checksum([UInt8]()) == 0xFFFF_FFFF)
    }

    @Test func crcIsComplementOfZlibCRCAndIncremental() {
        // zlib CRC-32 of "The quick brown fox jumps over the lazy dog" is 0x414FA339.
        let text = Array("The quick brown fox jumps over the lazy dog".utf8)
        #expect(CRC32JAMCRC.checksum(text) == ~UInt32(0x414F_A339))
        var rng = TestRandom(seed: 3)
        let data = (0..<10_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var crc = CRC32JAMCRC()
        var i = 0
        while i < data.count {
            let n = Int.random(in: 0...37, using: &rng)
            crc.update(data[i..<min(data.count, i + n)])
            i += n
        }
        #expect(crc.value == CRC32JAMCRC.checksum(data))
        #expect(crc.value == referenceNibbleCRC(data))
    }

    /// The reference algorithm of §6.6: 16-entry nibble table, low nibble then high nibble.
    func referenceNibbleCRC(_ data: [UInt8]) -> UInt32 {
        var table = [UInt32](repeating: 0, count: 16)
        for n in 0..<16 {
            var c = UInt32(n)
            for _ in 0..<4 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            table[n] = c
        }
        var crc: UInt32 = 0xFFFF_FFFF
        for b in data {
            crc = table[Int((crc ^ UInt32(b)) & 0x0F)] ^ (crc >> 4)
            crc = table[Int((crc ^ UInt32(b >> 4)) & 0x0F)] ^ (crc >> 4)
        }
        return crc
    }

    @Test func authenticationResponseMatchesSheet() throws {
        let challenge = bytes("A7 F1 D9 2A 82 C8 D8 FE 43 4D 98 55 8C E2 B3 47")
        #expect(try Authentication.response(to: challenge) == bytes("fa ac 84 77 df 95 85 a3 1e 10 c5 08 d1 bf ee 1a"))
        #expect(throws: LightXError(.truncated, "")) { try Authentication.response(to: Array(challenge.prefix(15))) }
    }

    /// The capabilities replies shown in docs/protocol.md §6.3, as the code encodes them: the page's frames are
    /// these, and a change to the encoding fails here, printing the frame to copy to the page.
    static let capabilityExamples: [(name: String, capabilities: BootCapabilities, hex: String)] = [
        ("addressed erase, queue of 32", BootCapabilities(addressedErase: true, queueDepth: 32),
         "ff 5a 00 00 00 1b 40 0f 81 00 00 00 00 3b 08 00 00 00 01 00 00 00 20 00 00 00 58"),
        ("secure boot: development key, floor 1.5.0", BootCapabilities(
            addressedErase: true, queueDepth: 32,
            secureBoot: SecureBootPolicy(keyHash: bytes("b5490897895557c123561b22dbbd6dddb25e0071a058b8d4fb5a56871166a88e"),
                                         rollbackFloor: 0x0105_0000_0000_0000)),
         "ff 5a 00 00 00 43 40 0f 81 00 00 00 00 3b 30 00 00 00 03 00 00 00 20 00 00 00 "
            + "b5 49 08 97 89 55 57 c1 23 56 1b 22 db bd 6d dd b2 5e 00 71 a0 58 b8 d4 fb 5a 56 87 11 66 a8 8e "
            + "01 05 00 00 00 00 00 00 f1"),
    ]

    static func capabilityFrame(_ capabilities: BootCapabilities) throws -> [UInt8] {
        SPPFraming.encode(try Packet.reply(to: BootRequests.capabilities(), status: .ok, buffer: capabilities.encoded, swapModules: true))
    }

    @Test(arguments: capabilityExamples.indices)
    func capabilitiesReplyAsDocumented(index: Int) throws {
        let (name, capabilities, hex) = Self.capabilityExamples[index]
        let frame = try Self.capabilityFrame(capabilities)
        #expect(frame == bytes(hex), "\(name): \(frame.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " "))")
        let decoded = try BootCapabilities(decoding: try SPPFraming.decodeFrame(frame).buffer)
        #expect(decoded == capabilities, "\(name)")
    }

    /// An older bootloader's 8-byte reply says nothing about secure boot, whatever flags it may grow later.
    @Test func olderCapabilitiesReplyHasNoSecureBoot() throws {
        let caps = try BootCapabilities(decoding: bytes("01 00 00 00 20 00 00 00")[...])
        #expect(caps == BootCapabilities(addressedErase: true, queueDepth: 32))
        #expect(caps.secureBoot == nil)
        #expect(throws: LightXError.self) { try BootCapabilities(decoding: bytes("03 00 00 00 20 00 00 00")[...]) }
    }
}
