import Glibc

/// What `tuneup capture show` prints (docs/capture.md §4): the interfaces and every decoded message, as text for
/// people or as JSON for scripts and the dissector comparison.
public struct CaptureReport: Sendable, Encodable {
    public struct Interface: Sendable, Encodable {
        public var id: Int
        public var name: String
        public var description: String
        public var linkType: UInt16
        public var role: String
    }

    public struct Message: Sendable, Encodable {
        public var packet: Int
        public var time: String
        public var interface: Int
        public var direction: String?
        public var `protocol`: String
        public var summary: String
        public var fields: Fields
        public var error: String?

        enum CodingKeys: String, CodingKey { case packet, time, interface, direction, `protocol`, summary, fields, error }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(packet, forKey: .packet)
            try c.encode(time, forKey: .time)
            try c.encode(interface, forKey: .interface)
            try c.encode(direction, forKey: .direction)
            try c.encode(`protocol`, forKey: .protocol)
            try c.encode(summary, forKey: .summary)
            try c.encode(fields, forKey: .fields)
            try c.encode(error, forKey: .error)  // null when none
        }
    }

    /// The fields as one JSON object: integers as numbers, booleans, strings, bytes as hex.
    public struct Fields: Sendable, Encodable {
        public var list: [CaptureField]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            for field in list {
                let key = Key(stringValue: field.name)
                switch field.value {
                case let .uint(v): try c.encode(v, forKey: key)
                case let .bool(v): try c.encode(v, forKey: key)
                case let .text(v): try c.encode(v, forKey: key)
                case .bytes: try c.encode(field.value.description, forKey: key)
                }
            }
        }
    }

    public var application: String?
    public var interfaces: [Interface]
    public var packets: Int
    public var messages: [Message]

    /// The report of `contents`, decoded by `CaptureDecoder`.
    public init(_ contents: CaptureContents) {
        application = contents.application
        interfaces = contents.interfaces.map {
            Interface(id: $0.id, name: $0.name, description: $0.description, linkType: $0.linkType, role: $0.role.rawValue)
        }
        packets = contents.packets.count
        messages = CaptureDecoder.decode(contents).map {
            Message(packet: $0.packet, time: Self.isoTime($0.timestamp), interface: $0.interface.id, direction: $0.direction?.name,
                    protocol: $0.protocolName, summary: $0.summary, fields: Fields(list: $0.fields), error: $0.error)
        }
    }

    /// The report for people: a header, the interfaces, one line per message.
    public var text: String {
        var lines = ["\(application ?? "a capture"): \(interfaces.count) interface\(interfaces.count == 1 ? "" : "s"), \(packets) packet\(packets == 1 ? "" : "s"), \(messages.count) message\(messages.count == 1 ? "" : "s")"]
        for i in interfaces {
            let known = CaptureLinkType(rawValue: i.linkType) != nil ? "" : " (link type \(i.linkType): not Tuneup's, not decoded)"
            lines.append("interface \(i.id): \(i.name) — \(i.description)\(known)")
        }
        for m in messages {
            let arrow = m.direction == "outbound" ? "→" : m.direction == "inbound" ? "←" : "?"
            let clock = m.time.split(separator: "T").last.map { String($0.dropLast()) } ?? m.time
            lines.append("\(pad(String(m.packet), 6)) \(clock) if\(m.interface) \(arrow) \(m.protocol) \(m.summary)")
        }
        return lines.joined(separator: "\n")
    }

    private func pad(_ s: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - s.count)) + s }

    /// `2026-12-07T00:00:00.123456789Z` for nanoseconds since the epoch.
    public static func isoTime(_ ns: UInt64) -> String {
        var seconds = time_t(ns / 1_000_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let fraction = String(ns % 1_000_000_000)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
            + String(repeating: "0", count: 9 - fraction.count) + fraction + "Z"
    }
}
