import Capture
import LightX
import Testing

/// The decoder on hand-made captures: reassembly, HID reports, errors named.
@Suite struct CaptureDecoderTests {
    func contents(_ linkType: CaptureLinkType, role: String = "host", _ packets: [(CaptureDirection, [UInt8])]) throws -> CaptureContents {
        var file = PcapNG.sectionHeader(application: "t")
        file += PcapNG.interfaceDescription(linkType: linkType.rawValue, name: "x", description: "\(linkType.carries); \(role) side")
        for (i, (direction, data)) in packets.enumerated() {
            file += PcapNG.enhancedPacket(interface: 0, timestamp: UInt64(i), direction: direction, data: data)
        }
        return try PcapNG.parse(file)
    }

    /// Frames split across packets and packets holding several frames: each message belongs to the packet it ends in.
    @Test func sppFramesAreReassembledPerDirection() throws {
        let request = SPPFraming.encode(try Packet.request(.write, .bootWriteImage, argument: [UInt8](repeating: 7, count: 256), address: 0x100))
        let reply = SPPFraming.encode(try Packet.reply(to: try Packet.request(.write, .bootWriteImage, address: 0x100)))
        let c = try contents(.lightXStream, [
            (.outbound, Array(request.prefix(100))), (.inbound, [0x00, 0x01] + reply + reply.prefix(5)),
            (.outbound, Array(request.dropFirst(100))), (.inbound, Array(reply.dropFirst(5))),
        ])
        let messages = CaptureDecoder.decode(c)
        #expect(messages.map(\.packet) == [2, 3, 4])
        #expect(messages.map { $0.field("lightx.kind") } == [.text("reply"), .text("request"), .text("reply")])
        #expect(messages[1].field("lightx.address") == .uint(0x100) && messages[1].field("lightx.buffer_length") == .uint(256))
        #expect(messages[1].field("lightx.command") == .uint(0x27))
        #expect(messages.allSatisfy { $0.error == nil })
    }

    @Test func badChecksumIsNamedAndTheNextFrameFound() throws {
        var bad = SPPFraming.encode(try Packet.request(.read, .configSerialNumber))
        bad[bad.count - 1] &+= 1
        let good = SPPFraming.encode(try Packet.request(.read, .appBatteryLevel))
        let messages = CaptureDecoder.decode(try contents(.lightXStream, [(.outbound, bad + good)]))
        #expect(messages.map(\.error) == ["bad checksum", nil])
        #expect(messages.map { $0.field("lightx.command") } == [.uint(0x04), .uint(0xB0)])
    }

    /// USB: the packet the transport carries is written as the reports that carry it, and decoded back, on both sides.
    @Test func hidReportsBothSides() throws {
        let request = try Packet.request(.write, .bootWriteImage, argument: [1, 2, 3, 4], address: 0x200, source: .usb, type: .nonblocking)
        let reply = try Packet.reply(to: request, buffer: [9, 9], swapModules: false)
        let raw = { (p: Packet) in p.header.encoded + Array(p.buffer) }
        let hostOut = CapturingTransport.reports(packet: raw(request), fromHost: true)
        let deviceOut = CapturingTransport.reports(packet: raw(reply), fromHost: false)
        #expect(hostOut.map { $0[0] } == [0xF1, 0xF0] && hostOut.map(\.count) == [257, 14])
        #expect(deviceOut.map { $0[0] } == [0xF0, 0xF1] && deviceOut[0][1] == 0x01)
        for (role, out, into) in [("host", CaptureDirection.outbound, CaptureDirection.inbound), ("device", .inbound, .outbound)] {
            let packets = hostOut.map { (out, $0) } + deviceOut.map { (into, $0) }
            let messages = CaptureDecoder.decode(try contents(.lightXHID, role: role, packets))
            #expect(messages.map(\.packet) == [2, 4])
            #expect(messages.map { $0.field("lightx.kind") } == [.text("request"), .text("reply")])
            #expect(messages.map { $0.field("lightx.buffer_length") } == [.uint(4), .uint(2)])
            #expect(messages.map { $0.field("lightx.address") } == [.uint(0x200), .uint(0x200)])
        }
    }

    @Test func gattFramingAndATT() throws {
        let stream = try contents(.wearableStream, [(.outbound, [0x57, 0x00, 0x03, 0x0A, 0x00, 0x05]), (.inbound, [0x57, 0x00, 0x05, 0x0B, 0x00, 0x05, 0xAA, 0xBB])])
        let s = CaptureDecoder.decode(stream)
        #expect(s.map { $0.field("wearable.handle") } == [.uint(5), .uint(5)])
        #expect(s.last?.field("wearable.value_length") == .uint(2))
        let att = try contents(.wearableATT, [(.outbound, [0x0A, 0x05, 0x00]), (.inbound, [0x0B, 0xAA, 0xBB]), (.inbound, [0x1B, 0x07, 0x00, 1, 2, 3])])
        let a = CaptureDecoder.decode(att)
        #expect(a.map { $0.field("wearable.handle") } == [.uint(5), nil, .uint(7)])
        #expect(a.map { $0.field("wearable.value_length") } == [nil, .uint(2), .uint(3)])
    }
}
