
/// A JSON value whose objects keep their keys in the order given, rendered compactly: the one JSON writer of the
/// project's hand-ordered documents (the hub's answers and notifications in the order Snapcast and the HKWHub API
/// publish them, CFX messages in the order the standard's examples show, `$type` first). Built from these values, every
/// document is valid JSON whatever its strings hold, and the same value is always the same bytes.
public indirect enum OrderedJSON: Sendable, Hashable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])

    public static func == (lhs: OrderedJSON, rhs: OrderedJSON) -> Bool { lhs.rendered == rhs.rendered }
    public func hash(into hasher: inout Hasher) { hasher.combine(rendered) }

    /// The compact text (no spaces, no line breaks).
    public var rendered: String { rendered(wholeNumbersAsDecimals: false) }

    /// The compact text; `wholeNumbersAsDecimals` writes a whole `double` as `87.0` rather than `87` (CFX's numeric
    /// values, which its SDK reads as decimals). A double JSON cannot hold (NaN, an infinity) is written as null.
    public func rendered(wholeNumbersAsDecimals: Bool) -> String {
        var out = ""
        write(to: &out, decimals: wholeNumbersAsDecimals)
        return out
    }

    func write(to out: inout String, decimals: Bool) {
        switch self {
        case let .string(s): Self.quote(s, to: &out)
        case let .int(i): out += String(i)
        case let .double(d):
            if !d.isFinite {
                out += "null"
            } else if d == d.rounded(), abs(d) < 1e15 {
                out += String(Int64(d)) + (decimals ? ".0" : "")
            } else {
                out += String(d)
            }
        case let .bool(b): out += b ? "true" : "false"
        case .null: out += "null"
        case let .array(items):
            out += "["
            for (k, item) in items.enumerated() {
                if k > 0 { out += "," }
                item.write(to: &out, decimals: decimals)
            }
            out += "]"
        case let .object(fields):
            out += "{"
            for (k, field) in fields.enumerated() {
                if k > 0 { out += "," }
                Self.quote(field.0, to: &out)
                out += ":"
                field.1.write(to: &out, decimals: decimals)
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
