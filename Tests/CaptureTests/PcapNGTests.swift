import Capture
import Testing

@Suite struct PcapNGTests {
    @Test func blocksRoundTrip() throws {
        var file = PcapNG.sectionHeader(application: "tuneup 1.2.3")
        file += PcapNG.interfaceDescription(linkType: CaptureLinkType.lightXStream.rawValue, name: "tcp:127.0.0.1:4100", description: "LightX over SPP; host side")
        file += PcapNG.interfaceDescription(linkType: CaptureLinkType.lightXHID.rawValue, name: "usb:1209:0001", description: "LightX over USB HID feature reports; device side")
        file += PcapNG.enhancedPacket(interface: 0, timestamp: 1_796_601_600_123_456_789, direction: .outbound, data: [1, 2, 3])
        file += PcapNG.enhancedPacket(interface: 1, timestamp: 42, direction: .inbound, data: [UInt8](repeating: 7, count: 257))
        file += PcapNG.enhancedPacket(interface: 0, timestamp: 43, direction: .inbound, data: [])
        let contents = try PcapNG.parse(file)
        #expect(contents.application == "tuneup 1.2.3")
        #expect(contents.interfaces.map(\.name) == ["tcp:127.0.0.1:4100", "usb:1209:0001"])
        #expect(contents.interfaces.map(\.knownLinkType) == [.lightXStream, .lightXHID])
        #expect(contents.interfaces.map(\.role) == [.host, .device])
        #expect(contents.interfaces.allSatisfy { $0.timestampResolution == 9 })
        #expect(contents.packets == [
            CapturePacket(number: 1, interface: 0, timestamp: 1_796_601_600_123_456_789, direction: .outbound, data: [1, 2, 3]),
            CapturePacket(number: 2, interface: 1, timestamp: 42, direction: .inbound, data: [UInt8](repeating: 7, count: 257)),
            CapturePacket(number: 3, interface: 0, timestamp: 43, direction: .inbound, data: []),
        ])
    }

    /// The example of docs/capture.md §5, byte for byte.
    @Test func documentedExample() {
        let frame: [UInt8] = [0xff, 0x5a, 0x00, 0x00, 0x00, 0x13, 0x40, 0x0f, 0x02, 0x00, 0x00, 0x01, 0x00, 0x27, 0x00, 0x00, 0x00, 0x00, 0x1b]
        let block = PcapNG.enhancedPacket(interface: 0, timestamp: 1_796_601_600_123_456_789, direction: .inbound, data: frame)
        let expected: [UInt8] = [
            0x06, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa2, 0xcf, 0xee, 0x18,
            0x15, 0xcd, 0x41, 0xf2, 0x13, 0x00, 0x00, 0x00, 0x13, 0x00, 0x00, 0x00, 0xff, 0x5a, 0x00, 0x00,
            0x00, 0x13, 0x40, 0x0f, 0x02, 0x00, 0x00, 0x01, 0x00, 0x27, 0x00, 0x00, 0x00, 0x00, 0x1b, 0x00,
            0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
        ]
        #expect(block == expected)
    }

    @Test func cutFileIsRefusedNamingTheBlock() throws {
        var file = PcapNG.sectionHeader(application: "tuneup")
        file += PcapNG.interfaceDescription(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        let third = file.count
        file += PcapNG.enhancedPacket(interface: 0, timestamp: 1, direction: .outbound, data: [1, 2, 3, 4, 5])
        for cut in [third + 5, third + 20, file.count - 1] {
            let error = #expect(throws: CaptureError.self) { try PcapNG.parse(Array(file.prefix(cut))) }
            #expect(error?.code == .truncated)
            #expect(error?.message.contains("block 3 at offset \(third)") == true, "\(error?.message ?? "")")
        }
        // Every whole block before the cut is what a killed writer leaves: it reads.
        #expect(try PcapNG.parse(Array(file.prefix(third))).interfaces.count == 1)
    }

    /// A block's length is a multiple of 4 (pcapng pads every block): a file whose block says otherwise is refused
    /// as malformed, not read past its fields (issue 31 §5: without the check a plant survived the suite).
    @Test func aBlockLengthThatIsNoMultipleOfFourIsRefused() throws {
        var file = PcapNG.sectionHeader(application: "tuneup")
        file += PcapNG.interfaceDescription(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        let third = file.count
        file += PcapNG.enhancedPacket(interface: 0, timestamp: 1, direction: .outbound, data: [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try PcapNG.parse(file).packets.count == 1)
        // The enhanced packet 2 bytes shorter (its options' end cut), its leading and trailing lengths saying so: a
        // consistent block but for its alignment.
        let epb = Array(file[third...])
        let shorter = epb.count - 2
        let length = [UInt8(shorter & 0xFF), UInt8(shorter >> 8 & 0xFF), UInt8(shorter >> 16 & 0xFF), UInt8(shorter >> 24 & 0xFF)]
        var block = Array(epb.prefix(shorter - 4))
        block.replaceSubrange(4..<8, with: length)
        let bad = Array(file.prefix(third)) + block + length
        let error = #expect(throws: CaptureError.self) { try PcapNG.parse(bad) }
        #expect(error?.code == .malformed, "\(String(describing: error))")
    }

    /// A packet that says it captured more bytes than its block holds is refused as malformed, never read past the
    /// block (issue 31 §5: the bound loosened to the whole body survived the suite).
    @Test func aPacketLongerThanItsBlockIsRefused() throws {
        var file = PcapNG.sectionHeader(application: "tuneup")
        file += PcapNG.interfaceDescription(linkType: 147, name: "sim", description: "LightX over SPP; host side")
        let third = file.count
        file += PcapNG.enhancedPacket(interface: 0, timestamp: 1, direction: .outbound, data: [1, 2, 3, 4, 5, 6, 7, 8])
        // The captured length (after the type, the length, the interface and the two timestamp words) made 24: more
        // than the 8 bytes of data and the options after them.
        var bad = file
        bad[(third + 20)..<(third + 24)] = [24, 0, 0, 0]
        let error = #expect(throws: CaptureError.self) { try PcapNG.parse(bad) }
        #expect(error?.code == .malformed, "\(String(describing: error))")
    }

    @Test func garbageAndWrongMagicAreRefused() {
        #expect(throws: CaptureError(.notPcapNG)) { try PcapNG.parse(Array("hello, this is not a capture".utf8)) }
        #expect(throws: CaptureError(.notPcapNG)) { try PcapNG.parse([]) }
        // A classic pcap file (a1 b2 c3 d4) is not pcapng.
        #expect(throws: CaptureError(.notPcapNG)) { try PcapNG.parse([0xd4, 0xc3, 0xb2, 0xa1] + [UInt8](repeating: 0, count: 20)) }
        var wrongMagic = PcapNG.sectionHeader(application: "x")
        wrongMagic[8] = 0x99
        #expect(throws: CaptureError(.notPcapNG)) { try PcapNG.parse(wrongMagic) }
    }
}
