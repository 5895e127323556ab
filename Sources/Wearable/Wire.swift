/// Reads the fields of a Wearable payload (every multi-byte field of the GATT service is big-endian), and of the
/// PDUs that carry them: Tuneup's GATT framing (big-endian) and ATT (little-endian: `u16LE`). Never traps: reading
/// past the end throws `.truncated` naming the field and its offset.
package struct WireReader {
    let bytes: ArraySlice<UInt8>
    /// Bytes read so far.
    private(set) var offset = 0
    /// What the payload is, for error messages ("sensor information"), and which record of it (-1: none).
    private let name: String
    private let record: Int
    private let recordOffset: Int

    /// What the payload is, for error messages: "sensor information", "sensor data: record 2 (offset 20)". Built
    /// only when asked (an error), not for every record decoded.
    var context: String { record < 0 ? name : "\(name): record \(record) (offset \(recordOffset))" }

    package init(_ bytes: ArraySlice<UInt8>, context: String) {
        self.bytes = bytes
        self.name = context
        self.record = -1
        self.recordOffset = 0
    }

    /// A reader of record `record` of a payload `name`, which starts at `offset` of that payload.
    init(_ bytes: ArraySlice<UInt8>, record: Int, at offset: Int, of name: String) {
        self.bytes = bytes
        self.name = name
        self.record = record
        self.recordOffset = offset
    }

    /// Bytes not yet read.
    package var remaining: Int { bytes.count - offset }
    package var isAtEnd: Bool { remaining == 0 }

    private mutating func take(_ n: Int, _ field: @autoclosure () -> String) throws(WearableError) -> ArraySlice<UInt8> {
        guard remaining >= n else {
            throw WearableError(.truncated, "\(context): \(field()) needs \(n) bytes at offset \(offset), \(remaining) left")
        }
        let first = bytes.startIndex + offset
        offset += n
        return bytes[first..<(first + n)]
    }

    package mutating func u8(_ field: @autoclosure () -> String) throws(WearableError) -> UInt8 {
        let s = try take(1, field())
        return s[s.startIndex]
    }

    package mutating func u16(_ field: @autoclosure () -> String) throws(WearableError) -> UInt16 {
        let s = try take(2, field())
        return UInt16(s[s.startIndex]) << 8 | UInt16(s[s.startIndex + 1])
    }

    /// A little-endian u16 (ATT).
    package mutating func u16LE(_ field: @autoclosure () -> String) throws(WearableError) -> UInt16 {
        let s = try take(2, field())
        return UInt16(s[s.startIndex]) | UInt16(s[s.startIndex + 1]) << 8
    }

    mutating func i16(_ field: @autoclosure () -> String) throws(WearableError) -> Int16 {
        Int16(bitPattern: try u16(field()))
    }

    mutating func u32(_ field: @autoclosure () -> String) throws(WearableError) -> UInt32 {
        let s = try take(4, field())
        return s.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// The next `n` bytes as a slice (indices of the original buffer).
    package mutating func slice(_ n: Int, _ field: @autoclosure () -> String) throws(WearableError) -> ArraySlice<UInt8> {
        try take(n, field())
    }

    /// Everything not read yet (the reader is then at its end).
    package mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[(bytes.startIndex + offset)...])
    }

    /// Throws `.malformed` when bytes are left over after a fixed-length payload.
    package func expectEnd() throws(WearableError) {
        guard isAtEnd else {
            throw WearableError(.malformed, "\(context): \(bytes.count) bytes, \(remaining) more than the \(offset) of its layout")
        }
    }
}

/// Builds big-endian Wearable payloads.
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    mutating func i16(_ v: Int16) { u16(UInt16(bitPattern: v)) }
    mutating func u32(_ v: UInt32) {
        bytes += [UInt8(truncatingIfNeeded: v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8),
                  UInt8(truncatingIfNeeded: v)]
    }
}

/// Walks a payload of repeated fixed-size entries: throws `.truncated` when the length is not a whole number of
/// entries (the last one is cut short), otherwise calls `body` with a reader over each entry and its index.
func forEachEntry(
    in bytes: ArraySlice<UInt8>, size: Int, context: String,
    _ body: (inout WireReader, Int) throws(WearableError) -> Void
) throws(WearableError) {
    guard bytes.count % size == 0 else {
        throw WearableError(.truncated, "\(context): \(bytes.count) bytes is not a whole number of \(size)-byte entries "
            + "(the last has \(bytes.count % size))")
    }
    var index = 0
    var start = bytes.startIndex
    while start < bytes.endIndex {
        var reader = WireReader(bytes[start..<(start + size)], context: "\(context): entry \(index) (offset \(start - bytes.startIndex))")
        try body(&reader, index)
        start += size
        index += 1
    }
}

/// Two hex digits.
package func hexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
}

/// Four hex digits.
package func hex16(_ v: UInt16) -> String { hexByte(UInt8(v >> 8)) + hexByte(UInt8(v & 0xFF)) }
