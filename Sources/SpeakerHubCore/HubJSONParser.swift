import OrderedJSON

extension OrderedJSON {
    /// Why a text is not JSON (RFC 8259): a one-line reason with the byte offset.
    public struct ParseError: Error, Sendable, Equatable {
        public var message: String
    }

    /// Reads one JSON value from UTF-8 `bytes` (the whole text: only white space may follow it). Numbers without a
    /// fraction or exponent that fit an `Int` are `.int`, others `.double`; objects keep their keys in order (a
    /// repeated key: the last one counts). At most `maxDepth` nested arrays and objects, so deep input cannot exhaust
    /// the stack.
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(ParseError) -> OrderedJSON {
        var reader = Reader(bytes: Array(bytes), maxDepth: maxDepth)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.at == reader.bytes.count else { throw reader.fail("text after the JSON value") }
        return value
    }

    /// The value of `key` in an object (nil for a missing key or when this is not an object).
    public subscript(key: String) -> OrderedJSON? {
        guard case let .object(fields) = self else { return nil }
        return fields.last { $0.0 == key }?.1
    }

    /// Item `index` of an array (nil out of range or when this is not an array).
    public subscript(index: Int) -> OrderedJSON? {
        guard case let .array(items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    private struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        var at = 0

        init(bytes: [UInt8], maxDepth: Int) { (self.bytes, self.maxDepth) = (bytes, maxDepth) }

        func fail(_ what: String) -> ParseError { ParseError(message: "\(what) at byte \(at)") }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[at]) { at += 1 }
        }

        mutating func literal(_ word: String, _ value: OrderedJSON) throws(ParseError) -> OrderedJSON {
            let w = Array(word.utf8)
            guard bytes.count - at >= w.count, Array(bytes[at..<(at + w.count)]) == w else { throw fail("not a JSON value") }
            at += w.count
            return value
        }

        mutating func value(depth: Int) throws(ParseError) -> OrderedJSON {
            guard at < bytes.count else { throw fail("the text ends where a value should be") }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                guard depth < maxDepth else { throw fail("more than \(maxDepth) nested arrays and objects") }
                at += 1
                var fields: [(String, OrderedJSON)] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("an object key is not a string") }
                    let key = try string()
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("no ':' after an object key") }
                    at += 1
                    skipSpace()
                    let v = try value(depth: depth + 1)
                    fields.removeAll { $0.0 == key }
                    fields.append((key, v))
                    skipSpace()
                    guard at < bytes.count else { throw fail("the text ends inside an object") }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    if bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                    throw fail("no ',' or '}' after an object member")
                }
            case UInt8(ascii: "["):
                guard depth < maxDepth else { throw fail("more than \(maxDepth) nested arrays and objects") }
                at += 1
                var items: [OrderedJSON] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard at < bytes.count else { throw fail("the text ends inside an array") }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                    throw fail("no ',' or ']' after an array item")
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return try number()
            }
        }

        mutating func number() throws(ParseError) -> OrderedJSON {
            let start = at
            func digits() -> Int {
                let from = at
                while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
                return at - from
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            let intStart = at
            guard digits() > 0 else { at = start; throw fail("not a JSON value") }
            guard bytes[intStart] != UInt8(ascii: "0") || at - intStart == 1 else { throw fail("a number with a leading zero") }
            var integral = true
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                integral = false
                guard digits() > 0 else { throw fail("no digits after a decimal point") }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                at += 1
                integral = false
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard digits() > 0 else { throw fail("no digits in an exponent") }
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            if integral, let i = Int(text) { return .int(i) }
            guard let d = Double(text), d.isFinite else { throw fail("a number out of range") }
            return .double(d)
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard bytes.count - at >= 4 else { throw fail("a \\u escape without four hex digits") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[at]
                let d: UInt32
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - UInt8(ascii: "A") + 10)
                default: throw fail("a \\u escape without four hex digits")
                }
                v = v << 4 | d
                at += 1
            }
            return v
        }

        mutating func string() throws(ParseError) -> String {
            at += 1  // the opening quote
            var out: [UInt8] = []
            while true {
                guard at < bytes.count else { throw fail("the text ends inside a string") }
                let b = bytes[at]
                at += 1
                switch b {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else { throw fail("a string that is not UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    guard at < bytes.count else { throw fail("the text ends inside a string") }
                    let e = bytes[at]
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var v = try hex4()
                        if (0xD800...0xDBFF).contains(v) {
                            guard bytes.count - at >= 2, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
                                throw fail("a lone surrogate in a \\u escape")
                            }
                            at += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate in a \\u escape") }
                            v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(v) else { throw fail("a lone surrogate in a \\u escape") }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: throw fail("an unknown escape '\\\(Character(Unicode.Scalar(e)))'")
                    }
                default:
                    guard b >= 0x20 else { throw fail("a control character inside a string") }
                    out.append(b)
                }
            }
        }
    }
}
