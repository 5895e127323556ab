/// Reads little-endian argument fields from a buffer (sheet §3.1: every multi-byte argument is little-endian).
public struct ArgumentReader: Sendable {
    public let bytes: ArraySlice<UInt8>
    /// Bytes read so far.
    public private(set) var offset = 0
    /// What the buffer holds, for error messages (e.g. "ANC enable reply").
    public let context: String

    public init(_ bytes: ArraySlice<UInt8>, context: String) {
        self.bytes = bytes
        self.context = context
    }

    /// Bytes not yet read.
    public var remaining: Int { bytes.count - offset }

    private mutating func take(_ n: Int, _ field: String) throws(LightXError) -> ArraySlice<UInt8> {
        guard remaining >= n else {
            throw LightXError(.truncated, "\(context): \(field) needs \(n) bytes at offset \(offset), only \(remaining) left")
        }
        let first = bytes.startIndex + offset
        offset += n
        return bytes[first..<(first + n)]
    }

    public mutating func u8(_ field: String) throws(LightXError) -> UInt8 {
        try take(1, field).first!
    }

    public mutating func u16(_ field: String) throws(LightXError) -> UInt16 {
        let s = try take(2, field)
        return UInt16(s[s.startIndex]) | UInt16(s[s.startIndex + 1]) << 8
    }

    /// `n` raw bytes.
    public mutating func bytes(_ n: Int, _ field: String) throws(LightXError) -> [UInt8] {
        Array(try take(n, field))
    }

    public mutating func u32(_ field: String) throws(LightXError) -> UInt32 {
        let s = try take(4, field)
        var v: UInt32 = 0
        for (k, b) in s.enumerated() { v |= UInt32(b) << (8 * UInt32(k)) }
        return v
    }

    public mutating func i32(_ field: String) throws(LightXError) -> Int32 {
        Int32(bitPattern: try u32(field))
    }

    public mutating func f32(_ field: String) throws(LightXError) -> Float {
        Float(bitPattern: try u32(field))
    }

    /// A NUL-terminated string: the bytes up to the first 0x00, or all remaining bytes if there is none (§4.14).
    /// Invalid UTF-8 sequences are replaced rather than rejected: a device's name must never make a reply unreadable.
    public mutating func cString() -> String {
        let rest = bytes.dropFirst(offset)
        let text = rest.prefix { $0 != 0 }
        offset = bytes.count
        return String(decoding: text, as: UTF8.self)
    }
}

/// Builds little-endian argument buffers.
public struct ArgumentWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
    public mutating func u32(_ v: UInt32) { appendLittleEndian(v, to: &bytes) }
    public mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    public mutating func f32(_ v: Float) { u32(v.bitPattern) }
    public mutating func bytes(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    /// `text` as UTF-8 trimmed so that it and its terminating NUL fit `capacity` bytes (§4.14), never splitting
    /// a character.
    public mutating func cString(_ text: String, capacity: Int) {
        var utf8 = Array(text.utf8)
        if utf8.count > capacity - 1 {
            utf8 = Array(utf8.prefix(max(0, capacity - 1)))
            // Drop a trailing partial multi-byte sequence.
            while let last = utf8.last, last & 0xC0 == 0x80 || last & 0xC0 == 0xC0 {
                let isLead = last & 0xC0 == 0xC0
                utf8.removeLast()
                if isLead { break }
            }
        }
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }
}

/// How one value travels in a LightX buffer: the encoder used for writes (and device replies), the decoder
/// used for replies (and device-side parsing of writes). Both sides share one codec, so they cannot drift apart.
public struct ValueCodec<Value: Sendable>: Sendable {
    private let encoder: @Sendable (Value) -> [UInt8]
    private let decoder: @Sendable (ArraySlice<UInt8>) throws(LightXError) -> Value

    public init(encode: @escaping @Sendable (Value) -> [UInt8], decode: @escaping @Sendable (ArraySlice<UInt8>) throws(LightXError) -> Value) {
        self.encoder = encode
        self.decoder = decode
    }

    /// The buffer for `value`.
    public func encode(_ value: Value) -> [UInt8] { encoder(value) }
    /// The value in `buffer`; throws `LightXError` (`.truncated`, `.malformed`) when it does not fit the layout.
    public func decode(_ buffer: ArraySlice<UInt8>) throws(LightXError) -> Value { try decoder(buffer) }
    /// The value in `buffer`; throws `LightXError` (`.truncated`, `.malformed`) when it does not fit the layout.
    public func decode(_ buffer: [UInt8]) throws(LightXError) -> Value { try decoder(buffer[...]) }
}

extension ValueCodec where Value == UInt32 {
    /// A u32.
    public static func uint32(_ what: String) -> ValueCodec {
        ValueCodec(encode: { var w = ArgumentWriter(); w.u32($0); return w.bytes },
                   decode: { (b: ArraySlice<UInt8>) throws(LightXError) in var r = ArgumentReader(b, context: what); return try r.u32("value") })
    }
}

extension ValueCodec where Value == Int32 {
    /// A two's-complement int32.
    public static func int32(_ what: String) -> ValueCodec {
        ValueCodec(encode: { var w = ArgumentWriter(); w.i32($0); return w.bytes },
                   decode: { (b: ArraySlice<UInt8>) throws(LightXError) in var r = ArgumentReader(b, context: what); return try r.i32("value") })
    }
}

extension ValueCodec where Value == Bool {
    /// A boolean as u32: 1 for true, 0 for false; any non-zero value reads as true (§4.1).
    public static func bool32(_ what: String) -> ValueCodec {
        ValueCodec(encode: { var w = ArgumentWriter(); w.u32($0 ? 1 : 0); return w.bytes },
                   decode: { (b: ArraySlice<UInt8>) throws(LightXError) in var r = ArgumentReader(b, context: what); return try r.u32("value") != 0 })
    }
}

extension ValueCodec where Value == Float {
    /// An IEEE-754 float32.
    public static func float32(_ what: String) -> ValueCodec {
        ValueCodec(encode: { var w = ArgumentWriter(); w.f32($0); return w.bytes },
                   decode: { (b: ArraySlice<UInt8>) throws(LightXError) in var r = ArgumentReader(b, context: what); return try r.f32("value") })
    }
}

extension ValueCodec where Value == String {
    /// A NUL-terminated string of at most `capacity` bytes including the NUL (§4.14).
    public static func cString(_ what: String, capacity: Int = 32) -> ValueCodec {
        ValueCodec(encode: { var w = ArgumentWriter(); w.cString($0, capacity: capacity); return w.bytes },
                   decode: { (b: ArraySlice<UInt8>) throws(LightXError) in var r = ArgumentReader(b, context: what); return r.cString() })
    }
}

extension ValueCodec {
    /// A 32-bit code (preset and similar); unknown values are kept, not rejected.
    public static func code32(_ what: String) -> ValueCodec where Value: LightXCode, Value.RawValue == UInt32 {
        ValueCodec(encode: { var w = ArgumentWriter(); w.u32($0.rawValue); return w.bytes },
                   decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
                       var r = ArgumentReader(b, context: what)
                       return Value(rawValue: try r.u32("value"))
                   })
    }
}
