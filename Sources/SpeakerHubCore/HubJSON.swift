/// A JSON value with its object keys in a fixed order (the published answers' order), rendered compactly. The hub's
/// answers are built from these, so every answer is valid JSON whatever the strings hold.
public indirect enum HubJSON: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([HubJSON])
    case object([(String, HubJSON)])

    public static func == (lhs: HubJSON, rhs: HubJSON) -> Bool { lhs.rendered == rhs.rendered }

    /// The compact text.
    public var rendered: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case let .string(s): Self.quote(s, to: &out)
        case let .int(i): out += String(i)
        case let .double(d): out += d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)) : "null"
        case let .bool(b): out += b ? "true" : "false"
        case .null: out += "null"
        case let .array(items):
            out += "["
            for (k, item) in items.enumerated() {
                if k > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case let .object(fields):
            out += "{"
            for (k, field) in fields.enumerated() {
                if k > 0 { out += "," }
                Self.quote(field.0, to: &out)
                out += ":"
                field.1.write(to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped (RFC 8259 §7); `<`, `>` and `&` too, so an
    /// answer can be embedded in a web page as it is.
    static func quote(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<", ">", "&", "\u{2028}", "\u{2029}":
                out += Self.escaped(scalar.value)
            default:
                if scalar.value < 0x20 { out += Self.escaped(scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        out += "\""
    }

    static func escaped(_ value: UInt32) -> String {
        let hex = String(value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
