import CZlib

/// Big-endian writing of the protocol's fields. Never fails: values are valid by construction.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(truncatingIfNeeded: v >> 8)); bytes.append(UInt8(truncatingIfNeeded: v)) }
    mutating func u32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }
    mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    mutating func text(_ t: WireText) { bytes.append(UInt8(t.utf8.count)); bytes.append(contentsOf: t.utf8) }
    mutating func raw<C: Collection>(_ c: C) where C.Element == UInt8 { bytes.append(contentsOf: c) }
    /// Appends the CRC-32 of everything written so far.
    mutating func crc() { u32(CRC32.checksum(bytes)) }
}

/// Strict big-endian reading: every read checks the length, and `finish()` rejects leftover bytes.
struct ByteReader {
    let bytes: ArraySlice<UInt8>
    var index: Int
    /// What is being read, for messages ("hello payload", "audio packet").
    let what: String

    init(_ bytes: ArraySlice<UInt8>, what: String) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.what = what
    }

    var remaining: Int { bytes.endIndex - index }

    mutating func take(_ n: Int) throws(SpeakerError) -> ArraySlice<UInt8> {
        guard n >= 0, remaining >= n else {
            throw SpeakerError(.truncated, "\(what) ends after \(index - bytes.startIndex) bytes, \(n) more needed")
        }
        defer { index += n }
        return bytes[index..<(index + n)]
    }

    mutating func u8() throws(SpeakerError) -> UInt8 { try take(1).first! }
    mutating func i8() throws(SpeakerError) -> Int8 { Int8(bitPattern: try u8()) }
    mutating func u16() throws(SpeakerError) -> UInt16 {
        let s = try take(2)
        return UInt16(s[s.startIndex]) << 8 | UInt16(s[s.startIndex + 1])
    }
    mutating func u32() throws(SpeakerError) -> UInt32 {
        var v: UInt32 = 0
        for b in try take(4) { v = v << 8 | UInt32(b) }
        return v
    }
    mutating func u64() throws(SpeakerError) -> UInt64 {
        var v: UInt64 = 0
        for b in try take(8) { v = v << 8 | UInt64(b) }
        return v
    }
    mutating func i32() throws(SpeakerError) -> Int32 { Int32(bitPattern: try u32()) }
    mutating func bool(_ field: String) throws(SpeakerError) -> Bool {
        let b = try u8()
        guard b <= 1 else { throw SpeakerError(.valueOutOfRange, "\(what): \(field) is a boolean (00 or 01), got \(hex(b))") }
        return b == 1
    }
    mutating func text(_ field: String) throws(SpeakerError) -> WireText {
        let n = Int(try u8())
        let raw = try take(n)
        guard let s = String(validating: raw, as: UTF8.self) else {
            throw SpeakerError(.badText, "\(what): \(field) is not valid UTF-8")
        }
        return WireText(unchecked: s)
    }
    func finish() throws(SpeakerError) {
        guard remaining == 0 else {
            throw SpeakerError(.trailingBytes, "\(what) has \(remaining) bytes after its last field")
        }
    }
}

/// Two lowercase hex digits.
func hex(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
}

/// Bytes as lowercase hex pairs separated by spaces ("54 53 01").
public func speakerHex<C: Sequence>(_ bytes: C) -> String where C.Element == UInt8 {
    bytes.map(hex).joined(separator: " ")
}

/// CRC-32/ISO-HDLC (the zlib, Ethernet and PNG CRC): reflected polynomial 0xEDB88320, initial value and final XOR
/// 0xFFFFFFFF. Check value: `CRC32.checksum("123456789".utf8) == 0xCBF43926`.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC of `bytes`.
    public static func checksum<C: Sequence>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) { return crc }
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { t in
            for b in bytes { crc = t[Int((crc ^ UInt32(b)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// The CRC of contiguous bytes: zlib's `crc32` (every audio datagram is checked; zlib takes half the time of
    /// slicing by 8).
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt = crc32(0, nil, 0)
        var rest = bytes
        while !rest.isEmpty {  // zlib counts in a 32-bit uInt
            let n = min(rest.count, Int(UInt32.max))
            crc = crc32(crc, rest.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(n))
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
        }
        return UInt32(truncatingIfNeeded: crc)
    }

    /// Checks the 4-byte big-endian CRC-32 at the end of `bytes` against the bytes before it.
    static func verifyTrailer(_ bytes: ArraySlice<UInt8>, what: String) throws(SpeakerError) {
        guard bytes.count >= 4 else { throw SpeakerError(.truncated, "\(what) has no room for its CRC-32") }
        let end = bytes.endIndex
        var stored: UInt32 = 0
        for b in bytes[(end - 4)..<end] { stored = stored << 8 | UInt32(b) }
        let computed = checksum(bytes[bytes.startIndex..<(end - 4)])
        guard stored == computed else {
            throw SpeakerError(.badChecksum, "\(what) CRC-32 mismatch: computed \(hex32(computed)), got \(hex32(stored))")
        }
    }
}

func hex32(_ v: UInt32) -> String {
    (0..<4).map { hex(UInt8(truncatingIfNeeded: v >> UInt32(24 - 8 * $0))) }.joined()
}
