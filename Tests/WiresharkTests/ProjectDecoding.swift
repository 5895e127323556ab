import LightX
import Speaker
import Testing
import WearableLink

/// A decoded field's value, as docs/capture.md §3 compares them: integers by value, booleans as 0/1, text, bytes.
enum FieldValue: Sendable, Hashable, CustomStringConvertible {
    case uint(UInt64)
    case bool(Bool)
    case text(String)
    case bytes([UInt8])

    var description: String {
        switch self {
        case let .uint(v): String(v)
        case let .bool(v): v ? "1" : "0"
        case let .text(v): "\"\(v)\""
        case let .bytes(v): v.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Whether tshark's text for the field says this value (tshark prints integers in hex or decimal, bytes with colons).
    func matches(_ printed: String) -> Bool {
        switch self {
        case let .uint(v):
            if printed.hasPrefix("0x") { return UInt64(printed.dropFirst(2), radix: 16) == v }
            if printed.hasPrefix("-") { return Int64(printed).map { UInt64(bitPattern: $0) } == v }
            return UInt64(printed) == v
        case let .bool(v): return printed == (v ? "1" : "0") || printed.lowercased() == (v ? "true" : "false")
        case let .text(v): return printed == v
        case let .bytes(v): return printed.replacingOccurrences(of: ":", with: "").lowercased() == FieldValue.bytes(v).description
        }
    }
}

/// One message of the project's own decoding of a capture, in docs/capture.md's field names.
struct ExpectedMessage: Sendable, CustomStringConvertible {
    var packet: Int
    var protocolName: String
    var fields: [String: [FieldValue]]

    var description: String {
        "packet \(packet) \(protocolName): " + fields.keys.sorted().map { "\($0)=\(fields[$0]!.map(\.description).joined(separator: ","))" }.joined(separator: " ")
    }
}

/// The fields of docs/capture.md §3, per protocol: what the comparison takes from tshark's messages.
let documentedFields: [String: Set<String>] = [
    "lightx": [
        "lightx.kind", "lightx.length", "lightx.source", "lightx.destination", "lightx.opcode", "lightx.high_priority",
        "lightx.has_buffer", "lightx.status", "lightx.type", "lightx.address", "lightx.command", "lightx.param1",
        "lightx.buffer_length", "lightx.checksum", "lightx.report_flag", "lightx.arg.sector", "lightx.arg.sectors",
        "lightx.arg.crc", "lightx.arg.base", "lightx.arg.response", "lightx.arg.challenge", "lightx.arg.image_type",
        "lightx.arg.authenticated", "lightx.arg.flags", "lightx.arg.queue_depth", "lightx.arg.text", "lightx.arg.reason",
    ],
    "hkwhd": [
        "hkwhd.version", "hkwhd.type", "hkwhd.request_id", "hkwhd.payload_length", "hkwhd.crc", "hkwhd.audio.flags",
        "hkwhd.audio.stream", "hkwhd.audio.sequence", "hkwhd.audio.first_frame", "hkwhd.audio.presentation_time",
        "hkwhd.audio.sample_rate", "hkwhd.audio.channels", "hkwhd.audio.frame_count", "hkwhd.clock.type",
        "hkwhd.clock.t1", "hkwhd.clock.t2", "hkwhd.clock.t3",
    ],
    "wearable": [
        "wearable.length", "wearable.opcode", "wearable.handle", "wearable.value_length", "wearable.error",
        "wearable.request_opcode", "wearable.mtu",
    ],
]

/// The project's decoding of a fixture, packet by packet (the codecs of Sources/LightX, Sources/Speaker,
/// Sources/WearableLink), by each interface's link type and role.
func projectDecoding(_ capture: CaptureFixture) throws -> [ExpectedMessage] {
    var out: [ExpectedMessage] = []
    var spp: [String: SPPStreamDecoder] = [:]
    var control: [String: ControlDeframer] = [:]
    var gatt: [String: GATTStreamDecoder] = [:]
    var hidHost: [Int: [UInt8]] = [:]  // per interface: the host's 0xF1 buffer waiting for its 0xF0
    var hidDevice: [Int: Header] = [:]  // per interface: the device's 0xF0 header waiting for its 0xF1
    for packet in capture.packets {
        let interface = capture.interfaces[packet.interface]
        let deviceSide = interface.description.hasSuffix("; device side")
        let fromHost = (packet.direction == .outbound) != deviceSide
        let key = "\(packet.interface)/\(packet.direction.map { String($0.rawValue) } ?? "-")"
        func add(_ name: String, _ fields: [String: [FieldValue]]) {
            out.append(ExpectedMessage(packet: packet.number, protocolName: name, fields: fields))
        }
        switch interface.linkType {
        case 147:
            var decoder = spp[key] ?? SPPStreamDecoder()
            decoder.append(packet.data)
            while let p = decoder.next() {
                add("lightx", lightXFields(p, fromHost: fromHost, frame: SPPFraming.encode(p), reportFlag: nil))
            }
            spp[key] = decoder
        case 148:
            let report = packet.data
            guard let id = report.first else { continue }
            if id == HIDReports.bufferReportID {
                if let header = hidDevice[packet.interface], !fromHost {
                    let raw = header.encoded + report.dropFirst().prefix(HIDReports.announcedBuffer(header))
                    add("lightx", lightXFields(try RawPacketCodec.decode(raw), fromHost: false, frame: nil, reportFlag: HIDReports.packetFlag))
                    hidDevice[packet.interface] = nil
                } else {
                    hidHost[packet.interface] = Array(report.dropFirst())
                }
            } else if id == HIDReports.headerReportID, report.count >= HIDReports.headerReportSize {
                let header = try Header(decoding: report[2..<HIDReports.headerReportSize])
                let announced = HIDReports.announcedBuffer(header)
                if fromHost {
                    let raw = header.encoded + (announced > 0 ? Array((hidHost[packet.interface] ?? []).prefix(announced)) : [])
                    hidHost[packet.interface] = nil
                    add("lightx", lightXFields(try RawPacketCodec.decode(raw), fromHost: true, frame: nil, reportFlag: report[1]))
                } else if report[1] == HIDReports.packetFlag {
                    if announced > 0 { hidDevice[packet.interface] = header }
                    else { add("lightx", lightXFields(try RawPacketCodec.decode(header.encoded), fromHost: false, frame: nil, reportFlag: report[1])) }
                }
            }
        case 149:
            var deframer = control[key] ?? ControlDeframer()
            deframer.append(packet.data)
            while let output = deframer.next() {
                if case let .frame(frame) = output { add("hkwhd", controlFields(frame)) }
            }
            control[key] = deframer
        case 150:
            add("hkwhd", audioFields(try AudioPacket.decode(packet.data), packet.data))
        case 151:
            add("hkwhd", clockFields(try ClockDatagram.decode(packet.data), packet.data))
        case 152:
            var decoder = gatt[key] ?? GATTStreamDecoder()
            decoder.append(packet.data)
            while let item = decoder.next() {
                if case let .pdu(pdu) = item { add("wearable", framedFields(pdu)) }
            }
            gatt[key] = decoder
        case 153:
            add("wearable", attFields(try ATTCodec.decode(packet.data)))
        default:
            continue
        }
    }
    return out
}

/// A LightX packet's fields (docs/capture.md §3). `frame`: the SPP frame (byte streams), nil over USB.
func lightXFields(_ p: LightX.Packet, fromHost: Bool, frame: [UInt8]?, reportFlag: UInt8?) -> [String: [FieldValue]] {
    let h = p.header
    let kind = fromHost ? "request" : (h.command.isPush ? "push" : "reply")
    var f: [String: [FieldValue]] = [
        "lightx.kind": [.text(kind)], "lightx.source": [.uint(UInt64(h.source.rawValue))],
        "lightx.destination": [.uint(UInt64(h.destination.rawValue))], "lightx.opcode": [.uint(UInt64(h.opcode.rawValue))],
        "lightx.high_priority": [.bool(h.isHighPriority)], "lightx.has_buffer": [.bool(h.hasBuffer)],
        "lightx.status": [.uint(UInt64(h.status.rawValue))], "lightx.type": [.uint(UInt64(h.type.rawValue))],
        "lightx.address": [.uint(UInt64(h.address))], "lightx.command": [.uint(UInt64(h.command.rawValue))],
        "lightx.param1": [.uint(UInt64(h.param1))],
    ]
    if let frame {
        f["lightx.length"] = [.uint(UInt64(frame.count))]
        f["lightx.checksum"] = [.uint(UInt64(frame.last!))]
        f["lightx.buffer_length"] = [.uint(UInt64(p.buffer.count))]
    } else {
        f["lightx.buffer_length"] = [.uint(UInt64(HIDReports.announcedBuffer(h)))]
    }
    if let reportFlag { f["lightx.report_flag"] = [.uint(UInt64(reportFlag))] }
    let buffer = p.buffer
    var r = ArgumentReader(buffer, context: "capture comparison")
    func word(_ at: Int) -> UInt64? {
        guard buffer.count >= at + 4 else { return nil }
        var reader = ArgumentReader(buffer.dropFirst(at), context: "capture comparison")
        return (try? reader.u32("word")).map(UInt64.init)
    }
    let c = h.command.rawValue
    if kind == "request" {
        if [0x26, 0x2D, 0x30].contains(c), let v = word(0) { f["lightx.arg.sector"] = [.uint(v)] }
        if c == 0x29 || c == 0x2C, let v = word(0) { f["lightx.arg.sectors"] = [.uint(v)] }
        if c == 0x2C, let v = word(4) { f["lightx.arg.crc"] = [.uint(v)] }
        if c == 0x2C, let v = word(8) { f["lightx.arg.base"] = [.uint(v)] }
        if c == 0x24, buffer.count >= 16 { f["lightx.arg.response"] = [.bytes(Array(buffer.prefix(16)))] }
    } else if kind == "reply" {
        if h.status != .ok {
            if !buffer.isEmpty { f["lightx.arg.reason"] = [.text(r.cString())] }
        } else {
            if c == 0x23, buffer.count >= 16 { f["lightx.arg.challenge"] = [.bytes(Array(buffer.prefix(16)))] }
            if c == 0x20, let b = buffer.first { f["lightx.arg.image_type"] = [.uint(UInt64(b))] }
            if c == 0x22, let b = buffer.first { f["lightx.arg.authenticated"] = [.uint(UInt64(b))] }
            if c == 0x3B, let flags = word(0), let depth = word(4) {
                f["lightx.arg.flags"] = [.uint(flags)]
                f["lightx.arg.queue_depth"] = [.uint(depth)]
            }
            // A config string's reply: its text, empty for a write's acknowledgement (docs/capture.md §3).
            if (0x01...0x1F).contains(c) || c == 0x3A { f["lightx.arg.text"] = [.text(r.cString())] }
        }
    }
    return f
}

func controlFields(_ frame: ControlFrame) -> [String: [FieldValue]] {
    let bytes = frame.encode()
    return [
        "hkwhd.version": [.uint(UInt64(frame.version))], "hkwhd.type": [.uint(UInt64(frame.type))],
        "hkwhd.request_id": [.uint(UInt64(frame.requestId))], "hkwhd.payload_length": [.uint(UInt64(frame.payload.count))],
        "hkwhd.crc": [.uint(UInt64(bigEndian32(bytes.suffix(4))))],
    ]
}

func audioFields(_ p: AudioPacket, _ bytes: [UInt8]) -> [String: [FieldValue]] {
    [
        "hkwhd.audio.flags": [.uint(UInt64((p.endOfStream ? AudioPacket.endOfStreamFlag : 0) | (p.encoding == .flac ? AudioPacket.flacFlag : 0)))],
        "hkwhd.audio.stream": [.uint(UInt64(p.streamId))], "hkwhd.audio.sequence": [.uint(UInt64(p.sequence))],
        "hkwhd.audio.first_frame": [.uint(p.firstFrame)], "hkwhd.audio.presentation_time": [.uint(p.presentationTime)],
        "hkwhd.audio.sample_rate": [.uint(UInt64(p.format.sampleRate))], "hkwhd.audio.channels": [.uint(UInt64(p.format.channels))],
        "hkwhd.audio.frame_count": [.uint(UInt64(p.frameCount))],
    ]
}

func clockFields(_ d: ClockDatagram, _ bytes: [UInt8]) -> [String: [FieldValue]] {
    var f: [String: [FieldValue]] = [:]
    switch d {
    case let .request(t1):
        f["hkwhd.clock.type"] = [.uint(1)]
        f["hkwhd.clock.t1"] = [.uint(t1)]; f["hkwhd.clock.t2"] = [.uint(0)]; f["hkwhd.clock.t3"] = [.uint(0)]
    case let .reply(reply):
        f["hkwhd.clock.type"] = [.uint(2)]
        f["hkwhd.clock.t1"] = [.uint(reply.t1)]; f["hkwhd.clock.t2"] = [.uint(reply.t2)]; f["hkwhd.clock.t3"] = [.uint(reply.t3)]
    }
    return f
}

func framedFields(_ pdu: GATTPDU) -> [String: [FieldValue]] {
    let frame = GATTFraming.encode(pdu)
    var f: [String: [FieldValue]] = [
        "wearable.length": [.uint(UInt64(frame[1]) << 8 | UInt64(frame[2]))], "wearable.opcode": [.uint(UInt64(pdu.opcode))],
    ]
    switch pdu {
    case let .errorResponse(requestOpcode, handle, error, _):
        f["wearable.request_opcode"] = [.uint(UInt64(requestOpcode))]
        f["wearable.handle"] = [.uint(UInt64(handle))]
        f["wearable.error"] = [.uint(UInt64(error.rawValue))]
    case let .exchangeMTURequest(mtu), let .exchangeMTUResponse(mtu):
        f["wearable.mtu"] = [.uint(UInt64(mtu))]
    case let .readRequest(handle), let .writeResponse(handle):
        f["wearable.handle"] = [.uint(UInt64(handle))]
    case let .readResponse(handle, value), let .writeRequest(handle, value), let .notification(handle, value):
        f["wearable.handle"] = [.uint(UInt64(handle))]
        f["wearable.value_length"] = [.uint(UInt64(value.count))]
    case .discoverRequest, .discoverResponse:
        break
    }
    return f
}

func attFields(_ pdu: ATTPDU) -> [String: [FieldValue]] {
    var f: [String: [FieldValue]] = ["wearable.opcode": [.uint(UInt64(ATTCodec.encode(pdu)[0]))]]
    switch pdu {
    case let .errorResponse(requestOpcode, handle, error):
        f["wearable.request_opcode"] = [.uint(UInt64(requestOpcode))]
        f["wearable.handle"] = [.uint(UInt64(handle))]
        f["wearable.error"] = [.uint(UInt64(error.rawValue))]
    case let .exchangeMTURequest(mtu), let .exchangeMTUResponse(mtu):
        f["wearable.mtu"] = [.uint(UInt64(mtu))]
    case let .readRequest(handle), let .readBlobRequest(handle, _):
        f["wearable.handle"] = [.uint(UInt64(handle))]
    case let .readResponse(value):
        f["wearable.value_length"] = [.uint(UInt64(value.count))]
    case let .writeRequest(handle, value), let .notification(handle, value):
        f["wearable.handle"] = [.uint(UInt64(handle))]
        f["wearable.value_length"] = [.uint(UInt64(value.count))]
    case let .writeCommand(handle, _), let .indication(handle, _):
        f["wearable.handle"] = [.uint(UInt64(handle))]
    default:
        break
    }
    return f
}

private func bigEndian32<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
    bytes.reduce(0) { $0 << 8 | UInt32($1) }
}

/// Compares tshark's messages with the project's, packet by packet and in order: the documented fields only.
/// Returns how many messages were compared; records an issue per difference (the first 10).
@discardableResult
func compare(_ dissected: [DissectedMessage], _ expected: [ExpectedMessage], sourceLocation: SourceLocation = #_sourceLocation) -> Int {
    #expect(dissected.count == expected.count, "tshark decoded \(dissected.count) messages, the project \(expected.count)",
            sourceLocation: sourceLocation)
    var differences = 0
    for (d, e) in zip(dissected, expected) {
        let names = documentedFields[e.protocolName] ?? []
        let printed = d.fields.filter { names.contains($0.key) }
        var problems: [String] = []
        if d.packet != e.packet || d.protocolName != e.protocolName {
            problems.append("tshark has it in packet \(d.packet) (\(d.protocolName))")
        }
        for name in Set(printed.keys).union(e.fields.keys).sorted() {
            let mine = e.fields[name] ?? []
            let theirs = printed[name] ?? []
            if mine.count != theirs.count || zip(mine, theirs).contains(where: { !$0.matches($1) }) {
                problems.append("\(name): tshark \(theirs), project \(mine.map(\.description))")
            }
        }
        if !problems.isEmpty {
            differences += 1
            if differences <= 10 {
                Issue.record("packet \(e.packet) (\(e.protocolName)): \(problems.joined(separator: "; "))", sourceLocation: sourceLocation)
            }
        }
    }
    #expect(differences == 0, "\(differences) messages differ", sourceLocation: sourceLocation)
    return min(dissected.count, expected.count)
}
