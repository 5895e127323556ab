import LightX
import Speaker
import WearableLink

/// A decoded field's value (docs/capture.md §3: integers by value, booleans, strings, bytes).
public enum CaptureFieldValue: Sendable, Hashable, CustomStringConvertible {
    case uint(UInt64)
    case bool(Bool)
    case text(String)
    case bytes([UInt8])

    public var description: String {
        switch self {
        case let .uint(v): "\(v)"
        case let .bool(v): v ? "1" : "0"
        case let .text(v): v
        case let .bytes(v): v.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined()
        }
    }
}

/// One decoded field, named as the Lua dissectors name it (docs/capture.md §3).
public struct CaptureField: Sendable, Hashable {
    public var name: String
    public var value: CaptureFieldValue

    public init(_ name: String, _ value: CaptureFieldValue) {
        self.name = name
        self.value = value
    }
}

/// One whole message of a capture: a reassembled frame of a byte stream, or one PDU or datagram.
public struct DecodedMessage: Sendable, Hashable {
    /// The Enhanced Packet Block the message's last byte arrived in (1-based: Wireshark's frame.number).
    public var packet: Int
    public var interface: CaptureInterface
    /// Nanoseconds since the epoch (that packet's).
    public var timestamp: UInt64
    public var direction: CaptureDirection?
    /// "lightx", "hkwhd" or "wearable".
    public var protocolName: String
    /// One line for people: what it is, by name, with its arguments.
    public var summary: String
    /// The fields of docs/capture.md §3, in order.
    public var fields: [CaptureField]
    /// What is wrong with it, named ("bad checksum"); nil when nothing.
    public var error: String?

    /// The value of the field named `name`, if present.
    public func field(_ name: String) -> CaptureFieldValue? { fields.first { $0.name == name }?.value }
}

/// Decodes a capture's packets with the project's codecs, per link type (docs/capture.md): byte streams reassembled
/// per interface and direction. Pure: what `tuneup capture show` prints and what tests compare with tshark.
public enum CaptureDecoder {
    /// Every message of `contents`, in the order of the packets that complete them.
    public static func decode(_ contents: CaptureContents) -> [DecodedMessage] {
        var streams: [StreamKey: [UInt8]] = [:]
        var pendingHID: [StreamKey: PendingHID] = [:]
        var messages: [DecodedMessage] = []
        for packet in contents.packets {
            let interface = contents.interfaces[packet.interface]
            guard let linkType = interface.knownLinkType else { continue }
            let key = StreamKey(interface: packet.interface, direction: packet.direction?.rawValue ?? 0)
            let fromHost = (packet.direction == .outbound) == (interface.role == .host)
            var emit = Emitter(packet: packet, interface: interface)
            switch linkType {
            case .lightXStream:
                var buffer = streams[key, default: []]
                buffer += packet.data
                decodeSPP(&buffer, fromHost: fromHost, &emit)
                streams[key] = buffer
            case .lightXHID:
                var pending = pendingHID[key, default: PendingHID()]
                decodeReport(packet.data, fromHost: fromHost, &pending, &emit)
                pendingHID[key] = pending
            case .hkwhdControl:
                var buffer = streams[key, default: []]
                buffer += packet.data
                decodeControl(&buffer, &emit)
                streams[key] = buffer
            case .hkwhdAudio:
                decodeAudio(packet.data, &emit)
            case .hkwhdClock:
                decodeClock(packet.data, &emit)
            case .hkwhdDiscovery:
                decodeDiscovery(packet.data, &emit)
            case .wearableStream:
                var buffer = streams[key, default: []]
                buffer += packet.data
                decodeGATTStream(&buffer, &emit)
                streams[key] = buffer
            case .wearableATT:
                decodeATT(packet.data, &emit)
            }
            messages += emit.messages
        }
        return messages
    }

    struct StreamKey: Hashable {
        var interface: Int
        var direction: UInt32
    }

    struct PendingHID {
        var buffer: [UInt8]?
        var header: (Header, UInt8)?
    }

    struct Emitter {
        let packet: CapturePacket
        let interface: CaptureInterface
        var messages: [DecodedMessage] = []

        mutating func add(_ proto: String, _ summary: String, _ fields: [CaptureField], error: String? = nil) {
            messages.append(DecodedMessage(
                packet: packet.number, interface: interface, timestamp: packet.timestamp, direction: packet.direction,
                protocolName: proto, summary: error.map { summary + " [\($0)]" } ?? summary, fields: fields, error: error))
        }
    }

    // MARK: LightX

    /// Takes every whole SPP frame from the front of `buffer` (docs/capture.md §3: bytes that start no frame are
    /// skipped; a bad checksum is decoded, named, and passed over whole).
    static func decodeSPP(_ buffer: inout [UInt8], fromHost: Bool, _ emit: inout Emitter) {
        var start = 0
        defer { buffer.removeFirst(start) }
        while true {
            guard let p = find(SPPFraming.magic, in: buffer, from: start) else {
                start = max(start, buffer.count - 3)
                return
            }
            start = p
            guard buffer.count - start >= 6 else { return }
            let length = Int(buffer[start + 4]) << 8 | Int(buffer[start + 5])
            guard (SPPFraming.minFrameLength...SPPFraming.maxFrameLength).contains(length) else {
                start += 1
                continue
            }
            guard buffer.count - start >= length else { return }
            let frame = Array(buffer[start..<(start + length)])
            start += length
            guard let header = try? Header(decoding: frame[SPPFraming.transportHeaderSize...]) else { continue }
            let checksum = frame[length - 1]
            let good = SPPFraming.checksum(frame.dropLast()) == checksum
            let body = frame[(SPPFraming.transportHeaderSize + Header.size)..<(length - 1)]
            lightX(header, buffer: body, fromHost: fromHost,
                   prefix: [CaptureField("lightx.length", .uint(UInt64(length)))],
                   suffix: [CaptureField("lightx.checksum", .uint(UInt64(checksum)))],
                   error: good ? nil : "bad checksum", &emit)
        }
    }

    /// One HID feature report (docs/capture.md §2, link type 148).
    static func decodeReport(_ report: [UInt8], fromHost: Bool, _ pending: inout PendingHID, _ emit: inout Emitter) {
        guard let id = report.first else { return }
        switch id {
        case HIDReports.bufferReportID:
            let data = Array(report.dropFirst())
            if !fromHost, let waiting = pending.header {
                let (header, flag) = waiting
                pending.header = nil
                let count = min(HIDReports.announcedBuffer(header), data.count)
                usb(header, flag: flag, buffer: data.prefix(count), fromHost: fromHost, &emit)
            } else {
                pending.buffer = data
            }
        case HIDReports.headerReportID:
            guard report.count >= 2 + Header.size, let header = try? Header(decoding: report.dropFirst(2)) else {
                emit.add("lightx", "a header report of \(report.count) bytes", [], error: "short report")
                return
            }
            let flag = report[1]
            let announced = HIDReports.announcedBuffer(header)
            if fromHost {
                let data = pending.buffer ?? []
                pending.buffer = nil
                usb(header, flag: flag, buffer: data.prefix(min(announced, data.count)), fromHost: true, &emit,
                    error: announced > data.count ? "buffer report missing" : nil)
            } else {
                guard flag == HIDReports.packetFlag else { return }  // nothing ready: not a message
                if announced > 0 { pending.header = (header, flag) } else { usb(header, flag: flag, buffer: [], fromHost: false, &emit) }
            }
        default:
            emit.add("lightx", "report 0x\(String(id, radix: 16)) of \(report.count) bytes", [], error: "unknown report id")
        }
    }

    static func usb(_ header: Header, flag: UInt8, buffer: ArraySlice<UInt8>, fromHost: Bool, _ emit: inout Emitter, error: String? = nil) {
        lightX(header, buffer: buffer, fromHost: fromHost, prefix: [], suffix: [CaptureField("lightx.report_flag", .uint(UInt64(flag)))], error: error, &emit)
    }

    /// The fields and summary of one LightX packet.
    static func lightX(_ h: Header, buffer: ArraySlice<UInt8>, fromHost: Bool, prefix: [CaptureField], suffix: [CaptureField],
                       error: String?, _ emit: inout Emitter) {
        let kind = fromHost ? "request" : (h.command.isPush ? "push" : "reply")
        var fields = [CaptureField("lightx.kind", .text(kind))] + prefix
        fields += [
            CaptureField("lightx.source", .uint(UInt64(h.source.rawValue))),
            CaptureField("lightx.destination", .uint(UInt64(h.destination.rawValue))),
            CaptureField("lightx.opcode", .uint(UInt64(h.opcode.rawValue))),
            CaptureField("lightx.high_priority", .bool(h.isHighPriority)),
            CaptureField("lightx.has_buffer", .bool(h.hasBuffer)),
            CaptureField("lightx.status", .uint(UInt64(h.status.rawValue))),
            CaptureField("lightx.type", .uint(UInt64(h.type.rawValue))),
            CaptureField("lightx.address", .uint(UInt64(h.address))),
            CaptureField("lightx.command", .uint(UInt64(h.command.rawValue))),
            CaptureField("lightx.param1", .uint(UInt64(h.param1))),
            CaptureField("lightx.buffer_length", .uint(UInt64(buffer.count))),
        ]
        fields += suffix
        let args = lightXArguments(h, Array(buffer), kind: kind)
        fields += args
        var summary = "\(kind) \(h.opcode.name ?? "op 0x" + String(h.opcode.rawValue, radix: 16)) \(h.command.description)"
        if h.address != 0 { summary += " addr 0x" + String(h.address, radix: 16) }
        if h.status != .ok || kind == "reply" { summary += " \(h.status.description)" }
        if !buffer.isEmpty { summary += " [\(buffer.count) B]" }
        for a in args { summary += " \(a.name.dropFirst("lightx.arg.".count))=\(a.value)" }
        emit.add("lightx", summary, fields, error: error)
    }

    /// The named arguments of docs/capture.md §3's table.
    static func lightXArguments(_ h: Header, _ b: [UInt8], kind: String) -> [CaptureField] {
        func u32(_ i: Int) -> CaptureFieldValue? {
            guard b.count >= i + 4 else { return nil }
            return .uint(UInt64(b[i]) | UInt64(b[i + 1]) << 8 | UInt64(b[i + 2]) << 16 | UInt64(b[i + 3]) << 24)
        }
        func text() -> CaptureFieldValue { .text(String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)) }
        var out: [CaptureField] = []
        func add(_ name: String, _ value: CaptureFieldValue?) { if let value { out.append(CaptureField("lightx.arg." + name, value)) } }
        let c = h.command.rawValue
        if kind == "request" {
            switch c {
            case 0x26, 0x2D, 0x30: add("sector", u32(0))
            case 0x29: add("sectors", u32(0))
            case 0x2C:
                add("sectors", u32(0))
                add("crc", u32(4))
                if b.count >= 12 { add("base", u32(8)) }
            case 0x24: if b.count >= 16 { add("response", .bytes(Array(b.prefix(16)))) }
            default: break
            }
        } else if kind == "reply" {
            if h.status != .ok {
                if !b.isEmpty { add("reason", text()) }
                return out
            }
            switch c {
            case 0x23: if b.count >= 16 { add("challenge", .bytes(Array(b.prefix(16)))) }
            case 0x20: if let v = b.first { add("image_type", .uint(UInt64(v))) }
            case 0x22: if let v = b.first { add("authenticated", .uint(UInt64(v))) }
            case 0x3B:
                add("flags", u32(0))
                add("queue_depth", u32(4))
            case 0x01...0x1F, 0x3A: add("text", text())
            default: break
            }
        }
        return out
    }

    // MARK: HKWirelessHD

    static let requestNames: [UInt8: String] = Dictionary(uniqueKeysWithValues: RequestType.allCases.map { ($0.rawValue, "\($0)") })
    static let eventNames: [UInt8: String] = Dictionary(uniqueKeysWithValues: EventType.allCases.map { ($0.rawValue, "\($0)") })

    /// The name of control message type `type`.
    static func controlTypeName(_ type: UInt8) -> String {
        if type == 0x7E { return "accepted" }
        if type == 0x7F { return "failed" }
        if let name = eventNames[type] { return name }
        if type & 0x80 != 0, let name = requestNames[type & 0x7F] { return name + " reply" }
        return requestNames[type] ?? "type 0x" + String(type, radix: 16)
    }

    static func decodeControl(_ buffer: inout [UInt8], _ emit: inout Emitter) {
        var start = 0
        defer { buffer.removeFirst(start) }
        while true {
            guard let p = find(ControlFrame.magic, in: buffer, from: start) else {
                start = max(start, buffer.count - 1)
                return
            }
            start = p
            guard buffer.count - start >= ControlFrame.headerSize else { return }
            let length = Int(buffer[start + 8]) << 8 | Int(buffer[start + 9])
            guard length <= ControlFrame.maxPayloadSize else {
                start += 1
                continue
            }
            let total = ControlFrame.overhead + length
            guard buffer.count - start >= total else { return }
            let frame = Array(buffer[start..<(start + total)])
            start += total
            var problem: String?
            do { _ = try ControlFrame.decode(frame) } catch { problem = error.code == .badChecksum ? "bad CRC" : error.message }
            let type = frame[3]
            let id = be(frame, 4, 4)
            emit.add("hkwhd", "\(controlTypeName(type)) id \(id) [\(length) B]", [
                CaptureField("hkwhd.version", .uint(UInt64(frame[2]))),
                CaptureField("hkwhd.type", .uint(UInt64(type))),
                CaptureField("hkwhd.request_id", .uint(id)),
                CaptureField("hkwhd.payload_length", .uint(UInt64(length))),
                CaptureField("hkwhd.crc", .uint(be(frame, total - 4, 4))),
            ], error: problem)
        }
    }

    static func decodeAudio(_ d: [UInt8], _ emit: inout Emitter) {
        guard d.count >= AudioPacket.headerSize else {
            emit.add("hkwhd", "audio datagram of \(d.count) bytes", [], error: "truncated")
            return
        }
        var problem: String?
        do { _ = try AudioPacket.decode(d) } catch { problem = error.code == .badChecksum ? "bad CRC" : error.message }
        let fields = [
            CaptureField("hkwhd.audio.flags", .uint(UInt64(d[3]))),
            CaptureField("hkwhd.audio.stream", .uint(be(d, 4, 4))),
            CaptureField("hkwhd.audio.sequence", .uint(be(d, 8, 4))),
            CaptureField("hkwhd.audio.first_frame", .uint(be(d, 12, 8))),
            CaptureField("hkwhd.audio.presentation_time", .uint(be(d, 20, 8))),
            CaptureField("hkwhd.audio.sample_rate", .uint(be(d, 28, 4))),
            CaptureField("hkwhd.audio.channels", .uint(UInt64(d[32]))),
            CaptureField("hkwhd.audio.frame_count", .uint(be(d, 34, 2))),
        ]
        emit.add("hkwhd", "audio stream \(be(d, 4, 4)) seq \(be(d, 8, 4)) frames \(be(d, 34, 2))", fields, error: problem)
    }

    static func decodeClock(_ d: [UInt8], _ emit: inout Emitter) {
        guard d.count >= ClockDatagram.size - 4 else {
            emit.add("hkwhd", "clock datagram of \(d.count) bytes", [], error: "truncated")
            return
        }
        var problem: String?
        do { _ = try ClockDatagram.decode(d) } catch { problem = error.code == .badChecksum ? "bad CRC" : error.message }
        let type = d[3]
        emit.add("hkwhd", "clock \(type == 1 ? "request" : type == 2 ? "reply" : "type \(type)") t1 \(be(d, 4, 8))", [
            CaptureField("hkwhd.clock.type", .uint(UInt64(type))),
            CaptureField("hkwhd.clock.t1", .uint(be(d, 4, 8))),
            CaptureField("hkwhd.clock.t2", .uint(be(d, 12, 8))),
            CaptureField("hkwhd.clock.t3", .uint(be(d, 20, 8))),
        ], error: problem)
    }

    static func decodeDiscovery(_ d: [UInt8], _ emit: inout Emitter) {
        guard d.count >= DiscoveryMessage.headerSize else {
            emit.add("hkwhd", "discovery datagram of \(d.count) bytes", [], error: "truncated")
            return
        }
        var fields = [
            CaptureField("hkwhd.discovery.version", .uint(UInt64(d[2]))),
            CaptureField("hkwhd.discovery.type", .uint(UInt64(d[3]))),
            CaptureField("hkwhd.discovery.query_id", .uint(be(d, 4, 4))),
        ]
        let summary: String
        var problem: String?
        do {
            switch try DiscoveryMessage.decode(d) {
            case let .query(id):
                summary = "discovery query \(id)"
            case let .answer(a):
                summary = "discovery answer to \(a.queryId): '\(a.deviceName)' control \(a.controlPort) audio \(a.audioPort)"
                fields += [
                    CaptureField("hkwhd.discovery.device_id", .uint(a.deviceId)),
                    CaptureField("hkwhd.discovery.control_port", .uint(UInt64(a.controlPort))),
                    CaptureField("hkwhd.discovery.audio_port", .uint(UInt64(a.audioPort))),
                    CaptureField("hkwhd.discovery.device_name", .text("\(a.deviceName)")),
                    CaptureField("hkwhd.discovery.model_name", .text("\(a.modelName)")),
                ]
            }
        } catch {
            problem = error.code == .badChecksum ? "bad CRC" : error.message
            summary = "discovery datagram type \(d[3]) query \(be(d, 4, 4))"
        }
        emit.add("hkwhd", summary, fields, error: problem)
    }

    // MARK: Wearable

    static let attNames: [UInt8: String] = [
        0x01: "error response", 0x02: "exchange MTU request", 0x03: "exchange MTU response", 0x0A: "read request",
        0x0B: "read response", 0x10: "discover request", 0x11: "discover response", 0x12: "write request",
        0x13: "write response", 0x1B: "notification",
    ]

    static func decodeGATTStream(_ buffer: inout [UInt8], _ emit: inout Emitter) {
        var start = 0
        defer { buffer.removeFirst(start) }
        while true {
            guard let p = buffer[start...].firstIndex(of: GATTFraming.magic) else {
                start = buffer.count
                return
            }
            start = p
            guard buffer.count - start >= GATTFraming.headerLength else { return }
            let length = Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
            guard (1...GATTFraming.maxBodyLength).contains(length) else {
                start += 1
                continue
            }
            guard buffer.count - start >= GATTFraming.headerLength + length else { return }
            let body = Array(buffer[(start + 3)..<(start + 3 + length)])
            start += 3 + length
            var problem: String?
            do { _ = try GATTFraming.decodeBody(body[...]) } catch { problem = error.message }
            wearable(body, bigEndian: true, prefix: [CaptureField("wearable.length", .uint(UInt64(length)))], error: problem, &emit)
        }
    }

    static func decodeATT(_ pdu: [UInt8], _ emit: inout Emitter) {
        guard !pdu.isEmpty else { return }
        wearable(pdu, bigEndian: false, prefix: [], error: nil, &emit)
    }

    /// The fields of one GATT operation: Tuneup's framing (big-endian, read responses carry the handle) or real ATT.
    static func wearable(_ b: [UInt8], bigEndian: Bool, prefix: [CaptureField], error: String?, _ emit: inout Emitter) {
        let opcode = b[0]
        func u16(_ i: Int) -> UInt64? {
            guard b.count >= i + 2 else { return nil }
            return bigEndian ? UInt64(b[i]) << 8 | UInt64(b[i + 1]) : UInt64(b[i]) | UInt64(b[i + 1]) << 8
        }
        var fields = prefix + [CaptureField("wearable.opcode", .uint(UInt64(opcode)))]
        var summary = attNames[opcode] ?? "ATT opcode 0x" + String(opcode, radix: 16)
        func handle(_ i: Int) {
            if let h = u16(i) {
                fields.append(CaptureField("wearable.handle", .uint(h)))
                summary += " handle 0x" + String(h, radix: 16)
            }
        }
        func value(from i: Int) {
            let n = max(0, b.count - i)
            fields.append(CaptureField("wearable.value_length", .uint(UInt64(n))))
            summary += " [\(n) B]"
        }
        switch opcode {
        case 0x01:
            if b.count >= 5 {
                fields.append(CaptureField("wearable.request_opcode", .uint(UInt64(b[1]))))
                handle(2)
                fields.append(CaptureField("wearable.error", .uint(UInt64(b[4]))))
                summary += " to \(attNames[b[1]] ?? "0x" + String(b[1], radix: 16)): \(ATTError(rawValue: b[4]).description)"
            }
        case 0x02, 0x03:
            if let m = u16(1) {
                fields.append(CaptureField("wearable.mtu", .uint(m)))
                summary += " \(m)"
            }
        case 0x0A: handle(1)
        case 0x0B:
            if bigEndian {
                handle(1)
                value(from: 3)
            } else {
                value(from: 1)
            }
        case 0x12, 0x1B:
            handle(1)
            value(from: 3)
        case 0x13: if bigEndian { handle(1) }
        default: break
        }
        emit.add("wearable", summary, fields, error: error)
    }

    // MARK: Bytes

    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard haystack.count - from >= needle.count else { return nil }
        var i = from
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] {
                var j = 1
                while j < needle.count && haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }

    static func be(_ b: [UInt8], _ i: Int, _ n: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in 0..<n where i + k < b.count { v = v << 8 | UInt64(b[i + k]) }
        return v
    }
}
