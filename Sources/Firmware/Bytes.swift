import Crypto

/// Little-endian field access that never traps: reads outside the buffer return nil.
enum LE {
    static func u16(_ b: [UInt8], _ at: Int) -> UInt16? {
        guard at >= 0, at <= b.count - 2 else { return nil }
        return UInt16(b[at]) | UInt16(b[at + 1]) << 8
    }

    static func u32(_ b: [UInt8], _ at: Int) -> UInt32? {
        guard at >= 0, at <= b.count - 4 else { return nil }
        return UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    static func append(_ v: UInt16, to b: inout [UInt8]) {
        b.append(UInt8(truncatingIfNeeded: v))
        b.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    static func append(_ v: UInt32, to b: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { b.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }
}

/// Small formatting helpers for messages.
public enum Hex {
    /// Lower-case hex of all bytes.
    public static func string<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// "0x" and lower-case hex of a number.
    static func number<T: BinaryInteger>(_ v: T) -> String { "0x" + String(v, radix: 16) }

    /// The first `count` bytes in hex followed by "…" (for long digests in one-line messages).
    public static func short<C: Collection>(_ bytes: C, _ count: Int = 8) -> String where C.Element == UInt8 {
        string(bytes.prefix(count)) + (bytes.count > count ? "…" : "")
    }
}

/// SHA-256 as a byte array.
func sha256<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
    var h = SHA256()
    if let done: Void = bytes.withContiguousStorageIfAvailable({ h.update(bufferPointer: UnsafeRawBufferPointer($0)) }) {
        _ = done
    } else {
        h.update(data: Array(bytes))
    }
    return Array(h.finalize())
}
