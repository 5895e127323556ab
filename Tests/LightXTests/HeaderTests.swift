import Testing
@testable import LightX

@Suite struct HeaderTests {
    @Test func fieldsLandInTheRightBits() {
        var h = Header(source: .usb, destination: .application, opcode: .write, hasBuffer: true, isHighPriority: true,
                       status: .notReady, type: .blocking, command: .bootWriteImage, address: 0x01_2300, param1: 256)
        #expect(h.encoded == bytes("08 40 c2 86 00 23 01 27 00 01 00 00"))
        #expect(h.opcode == .write && h.hasBuffer && h.isHighPriority)
        #expect(h.status == .notReady && h.type == .blocking)
        h.status = .fail
        h.type = .nonblocking
        h.command = .bootReadImage
        h.address = 0x1FF_FFFF
        #expect(h.statusByte == 0x41)
        #expect(h.param0 == 0x28FF_FFFF)
        h.hasBuffer = false
        #expect(h.opcodeByte == 0x42)
    }

    @Test func unknownValuesAreKeptAndReported() throws {
        let raw = bytes("43 99 bf 3e 00 00 00 c3 00 00 00 00")
        let h = try Header(decoding: raw)
        #expect(!h.source.isKnown && !h.destination.isKnown)
        #expect(h.opcode.rawValue == 0x3F)
        #expect(h.status.rawValue == 0x3E && !h.status.isKnown)
        #expect(h.type == PacketType(rawValue: 0x00))
        #expect(h.command.rawValue == 0xC3 && !h.command.isKnown && h.command.isPush)
        #expect(h.encoded == raw)
        #expect(h.status.description == "unknown 0x3E")
        #expect(Command.appANCEnable.description == "AppANCEnable (0x85)")
    }

    @Test func truncatedHeaderThrows() {
        #expect(throws: LightXError(.truncated, "")) { try Header(decoding: [UInt8](repeating: 0, count: 11)) }
    }

    @Test func requestValidation() {
        #expect(throws: LightXError(.addressOutOfRange, "")) { try Packet.request(.read, .bootReadImage, address: 0x100_0000) }
        #expect(throws: LightXError(.bufferTooLarge, "")) { try Packet.request(.write, .bootWriteImage, argument: [UInt8](repeating: 1, count: 257)) }
    }

    @Test func commandGroups() {
        #expect(Command.configSerialNumber.group == .config)
        #expect(Command.bootVerifyCRC.group == .boot)
        #expect(Command(rawValue: 0x50).group == .diagnostic)
        #expect(Command.appShutdown.group == .app)
        #expect(Command.appVoicePromptEnable.group == .app)
        #expect(Command.appPushANCEnable.group == .push)
        #expect(Command.named("appancenable") == .appANCEnable)
        #expect(AwarenessPreset.named("Medium") == .medium)
        #expect(AwarenessPreset.named("7") == AwarenessPreset(rawValue: 7))
    }

    @Test func replyMatchesRequestParam0AndOpcode() throws {
        let request = try BootRequests.writeBlock(.resource, offset: 0x400, data: [1, 2, 3])
        let reply = try Packet.reply(to: request, status: .exceededLimits)
        #expect(reply.header.param0 == request.header.param0)
        #expect(reply.opcode == .write)
        #expect(reply.header.source == .application && reply.header.destination == .bluetooth)
        #expect(!reply.header.hasBuffer && reply.buffer.isEmpty)
        let echoed = try Packet.reply(to: try BootRequests.writeBlock(.resource, offset: 0, data: [1], .usb), buffer: [9], swapModules: false)
        #expect(echoed.header.source == .usb && echoed.header.destination == .application && echoed.header.param1 == 1)
    }

    @Test func rawPacketCodec() throws {
        let p = try BootRequests.readBlock(.application, offset: 0x100, count: 16, .usb)
        let raw = RawPacketCodec.encode(p)
        #expect(raw.count == 28)
        #expect(Array(raw.prefix(4)) == [0x08, 0x40, 0x81, 0x40])
        #expect(try RawPacketCodec.decode(raw) == p)
        // Shorter than param1: keep what is there.
        let short = try RawPacketCodec.decode(raw.prefix(20))
        #expect(short.buffer.count == 8 && short.header.param1 == 16)
        // No buffer flag: trailing bytes are ignored.
        var noBuffer = p.header
        noBuffer.hasBuffer = false
        #expect(try RawPacketCodec.decode(noBuffer.encoded + [1, 2, 3]).buffer.isEmpty)
        #expect(throws: LightXError(.truncated, "")) { try RawPacketCodec.decode([UInt8](repeating: 0, count: 5)) }
    }
}
