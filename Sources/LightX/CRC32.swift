/// CRC-32/JAMCRC as the LightX bootloader computes it for BootVerifyCRC (sheet §6.6): reflected polynomial
/// 0xEDB88320, initial value 0xFFFFFFFF, no final XOR — the bitwise complement of the zlib CRC-32.
/// Check value: `CRC32JAMCRC.checksum("123456789".utf8) == 0x340BC6D9`.
///
/// The reference implementation uses a 16-entry nibble table; this one uses slicing-by-8 tables, which gives
/// the same values several times faster.
public struct CRC32JAMCRC: Sendable, Hashable {
    /// The running register; after all bytes it is the checksum.
    public private(set) var value: UInt32 = 0xFFFF_FFFF

    public init() {}

    /// Feeds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = value
        var i = 0
        let n = bytes.count
        CRC32JAMCRC.tables.withUnsafeBufferPointer { t in
            while n - i >= 8 {
                let lo = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ crc
                let hi = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self))
                crc = t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                crc = t[Int((crc ^ UInt32(bytes[i])) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        value = crc
    }

    /// Feeds bytes.
    public mutating func update<C: Sequence>(_ bytes: C) where C.Element == UInt8 {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) {
            return done
        }
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The CRC of `bytes`.
    public static func checksum<C: Sequence>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var crc = CRC32JAMCRC()
        crc.update(bytes)
        return crc.value
    }

    /// Slicing-by-8 tables: table k maps a byte that is k positions further back.
    static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[n] = c
        }
        for n in 0..<256 {
            for k in 1..<8 {
                let prev = t[(k - 1) * 256 + n]
                t[k * 256 + n] = t[Int(prev & 0xFF)] ^ (prev >> 8)
            }
        }
        return t
    }()
}
