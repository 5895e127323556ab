import Foundation
import LightX
import Synchronization
import TestSupport
import Transport

/// A capture built by a test (docs/capture.md's format): interfaces with their link type, name and description, and
/// packets with their interface and direction. `pcapng` writes it; the project's decoding reads the same packets.
struct CaptureFixture: Sendable {
    struct Interface: Sendable {
        var linkType: UInt16
        var name: String
        var description: String
    }

    enum Direction: UInt32, Sendable {
        case inbound = 1, outbound = 2
    }

    struct Packet: Sendable {
        /// 1-based, as Wireshark's frame.number.
        var number: Int
        var interface: Int
        var direction: Direction?
        var data: [UInt8]
    }

    private(set) var interfaces: [Interface] = []
    private(set) var packets: [Packet] = []

    mutating func addInterface(linkType: UInt16, name: String, description: String) -> Int {
        interfaces.append(Interface(linkType: linkType, name: name, description: description))
        return interfaces.count - 1
    }

    mutating func add(_ interface: Int, _ direction: Direction?, _ data: [UInt8]) {
        packets.append(Packet(number: packets.count + 1, interface: interface, direction: direction, data: data))
    }

    /// The whole file: Section Header, Interface Descriptions, Enhanced Packets (epb_flags = direction; 1 µs apart).
    var pcapng: [UInt8] {
        var out: [UInt8] = []
        var shb: [UInt8] = []
        le32(0x1A2B_3C4D, &shb); le16(1, &shb); le16(0, &shb); shb += [UInt8](repeating: 0xFF, count: 8)
        option(4, Array("tuneup WiresharkTests".utf8), &shb)
        option(0, [], &shb)
        block(0x0A0D_0D0A, shb, &out)
        for interface in interfaces {
            var idb: [UInt8] = []
            le16(interface.linkType, &idb); le16(0, &idb); le32(0, &idb)
            option(2, Array(interface.name.utf8), &idb)
            option(3, Array(interface.description.utf8), &idb)
            option(9, [9], &idb)
            option(0, [], &idb)
            block(1, idb, &out)
        }
        let start: UInt64 = 1_796_601_600_000_000_000  // 2026-12-07T00:00:00Z
        for packet in packets {
            var epb: [UInt8] = []
            let time = start + UInt64(packet.number) * 1000
            le32(UInt32(packet.interface), &epb); le32(UInt32(time >> 32), &epb); le32(UInt32(time & 0xFFFF_FFFF), &epb)
            le32(UInt32(packet.data.count), &epb); le32(UInt32(packet.data.count), &epb)
            epb += packet.data
            epb += [UInt8](repeating: 0, count: (4 - packet.data.count % 4) % 4)
            if let direction = packet.direction {
                var flags: [UInt8] = []
                le32(direction.rawValue, &flags)
                option(2, flags, &epb)
            }
            option(0, [], &epb)
            block(6, epb, &out)
        }
        return out
    }

    /// Writes the file (off the cooperative pool).
    func write(to path: String) async throws {
        let bytes = pcapng
        try await offThePool { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
    }
}

private func le16(_ v: UInt16, _ out: inout [UInt8]) { out += [UInt8(v & 0xFF), UInt8(v >> 8)] }
private func le32(_ v: UInt32, _ out: inout [UInt8]) { for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
private func option(_ code: UInt16, _ value: [UInt8], _ out: inout [UInt8]) {
    le16(code, &out); le16(UInt16(value.count), &out)
    out += value + [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
}
private func block(_ type: UInt32, _ body: [UInt8], _ out: inout [UInt8]) {
    let length = UInt32(12 + body.count)
    le32(type, &out); le32(length, &out); out += body; le32(length, &out)
}

/// What a recording transport saw: per link, every chunk sent (outbound) or received (inbound), in order.
final class Recording: Sendable {
    struct Chunk: Sendable {
        var link: Int
        var direction: CaptureFixture.Direction
        var bytes: [UInt8]
    }

    private let state = Mutex<(links: Int, chunks: [Chunk])>((0, []))

    func newLink() -> Int { state.withLock { $0.links += 1; return $0.links - 1 } }
    func record(_ link: Int, _ direction: CaptureFixture.Direction, _ bytes: [UInt8]) {
        state.withLock { $0.chunks.append(Chunk(link: link, direction: direction, bytes: bytes)) }
    }
    var chunks: [Chunk] { state.withLock { $0.chunks } }
    var links: Int { state.withLock { $0.links } }
}

/// A transport that records what it carries, as `--capture` does on the host's side: sends when handed over
/// (outbound), receives as they return (inbound).
final class RecordingTransport: Transport {
    let base: any Transport
    let recording: Recording
    let link: Int

    init(_ base: any Transport, _ recording: Recording) {
        self.base = base
        self.recording = recording
        self.link = recording.newLink()
    }

    var peerDescription: String { base.peerDescription }
    var framing: LinkFraming { base.framing }

    nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws {
        recording.record(link, .outbound, bytes)
        try await base.send(bytes)
    }

    nonisolated(nonsending) func receive() async throws -> [UInt8] {
        let bytes = try await base.receive()
        recording.record(link, .inbound, bytes)
        return bytes
    }

    nonisolated(nonsending) func close() async { await base.close() }
}

// Other views of the same LightX traffic --------------------------------------------------------------------------

/// LightX packets of a recorded SPP session, in the order they travelled, with who sent them.
func lightXPackets(_ recording: Recording) -> [(link: Int, fromHost: Bool, packet: LightX.Packet)] {
    var decoders: [String: SPPStreamDecoder] = [:]
    var out: [(link: Int, fromHost: Bool, packet: LightX.Packet)] = []
    for chunk in recording.chunks {
        let key = "\(chunk.link)/\(chunk.direction)"
        var decoder = decoders[key] ?? SPPStreamDecoder()
        decoder.append(chunk.bytes)
        while let packet = decoder.next() { out.append((chunk.link, chunk.direction == .outbound, packet)) }
        decoders[key] = decoder
    }
    return out
}

/// The HID feature reports of one LightX packet in the order they travel (docs/protocol.md §2.3): the host sends
/// 0xF1 (when a buffer is announced) then 0xF0; the device answers 0xF0 then 0xF1.
func hidReports(_ raw: [UInt8], fromHost: Bool) throws -> [[UInt8]] {
    let header = try Header(decoding: raw)
    let announced = HIDReports.announcedBuffer(header) > 0
    let buffer = raw.dropFirst(Header.size)
    if fromHost {
        let head = HIDReports.headerReport(raw.prefix(Header.size), flag: HIDReports.noPacketFlag)
        return announced ? [HIDReports.bufferReport(buffer), head] : [head]
    }
    let head = HIDReports.headerReport(raw.prefix(Header.size), flag: HIDReports.packetFlag)
    return announced ? [head, HIDReports.bufferReport(buffer)] : [head]
}

/// One usbmon record (LINKTYPE_USB_LINUX_MMAPPED): the 64-byte header, then the data.
func usbmonRecord(id: UInt64, submit: Bool, endpointIn: Bool, device: UInt8, setup: [UInt8]?, data: [UInt8],
                  length: Int? = nil) -> [UInt8] {
    var out: [UInt8] = []
    for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: id >> (8 * UInt64(k)))) }
    out.append(submit ? 0x53 : 0x43)  // 'S' / 'C'
    out.append(2)  // control transfer
    out.append(endpointIn ? 0x80 : 0x00)
    out.append(device)
    out += [1, 0]  // bus 1
    out.append(setup == nil ? 0x2D : 0)  // flag_setup: 0 = setup present, '-' none
    out.append(data.isEmpty ? (endpointIn ? 0x3C : 0x3E) : 0)  // flag_data: 0 = data present
    out += [UInt8](repeating: 0, count: 8 + 4 + 4)  // ts_sec, ts_usec, status
    let len = UInt32(length ?? data.count)
    for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: len >> (8 * UInt32(k)))) }
    let cap = UInt32(data.count)
    for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: cap >> (8 * UInt32(k)))) }
    out += setup ?? [UInt8](repeating: 0, count: 8)
    out += [UInt8](repeating: 0, count: 16)  // interval, start_frame, xfer_flags, ndesc
    return out + data
}

/// A HID class request's setup packet for feature report `id`.
func hidSetup(set: Bool, report id: UInt8, length: Int) -> [UInt8] {
    let value = HIDReports.featureReportValue(id)
    return [set ? HIDReports.Request.classInterfaceOut : HIDReports.Request.classInterfaceIn,
            set ? HIDReports.Request.setReport : HIDReports.Request.getReport,
            UInt8(value & 0xFF), UInt8(value >> 8), 0, 0, UInt8(length & 0xFF), UInt8(length >> 8)]
}

/// An Ethernet + IPv4 + TCP segment on the loopback (checksums 0: Wireshark does not check them by default).
func tcpSegment(fromPort: UInt16, toPort: UInt16, seq: UInt32, ack: UInt32, payload: [UInt8]) -> [UInt8] {
    func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    let tcp = be16(fromPort) + be16(toPort) + be32(seq) + be32(ack) + [0x50, 0x18] + be16(65535) + [0, 0, 0, 0]
    let ip = [0x45, 0] + be16(UInt16(20 + tcp.count + payload.count)) + [0, 0, 0x40, 0, 64, 6, 0, 0] + [127, 0, 0, 1, 127, 0, 0, 1]
    let ethernet: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x08, 0x00]
    return ethernet + ip + tcp + payload
}
