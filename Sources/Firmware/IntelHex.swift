/// Intel HEX: decoding into one contiguous block and encoding.
///
/// Contract: `decode` accepts record types 00 (data), 01 (end of file), 02 (extended segment address),
/// 03 and 05 (start addresses, ignored), 04 (extended linear address); checks every checksum; fills gaps between
/// data records with 0xFF; returns the lowest data address as `base`. It throws `.badHex` with the 1-based line
/// number for anything else: a line not starting with ':', bad hex digits, a wrong length or checksum, an unknown
/// record type, overlapping data, data after the end-of-file record, a missing end-of-file record, no data, or data
/// spanning more than `maxSpan` bytes. It never traps.
/// `encode` writes 16-byte data records, 04 records where the upper 16 address bits change, and the EOF record.
public enum IntelHex {
    /// The largest span (highest minus lowest data address) `decode` accepts: 16 MiB.
    public static let maxSpan = 16 * 1024 * 1024

    /// Decodes Intel HEX text to its lowest data address and the bytes from there to the highest, gaps 0xFF.
    public static func decode(_ text: String) throws(ImageError) -> (base: UInt32, bytes: [UInt8]) {
        var chunks: [(address: UInt64, data: [UInt8], line: Int)] = []
        var upper: UInt64 = 0
        var sawEOF = false
        var lineNumber = 0
        for rawLine in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = rawLine
            while let last = line.last, last == 0x0D || last == 0x20 || last == 0x09 { line = line.dropLast() }
            while let first = line.first, first == 0x20 || first == 0x09 || first == 0xEF || first == 0xBB || first == 0xBF {
                line = line.dropFirst()  // whitespace, or a UTF-8 byte-order mark on the first line
            }
            if line.isEmpty { continue }
            func bad(_ why: String) -> ImageError { ImageError(.badHex, "Intel HEX line \(lineNumber): \(why)") }
            guard !sawEOF else { throw bad("data after the end-of-file record") }
            guard line.first == UInt8(ascii: ":") else { throw bad("does not start with ':'") }
            let digits = Array(line.dropFirst())
            guard digits.count % 2 == 0 else { throw bad("odd number of hex digits") }
            guard digits.count >= 10 else { throw bad("too short for a record (\(digits.count / 2) bytes, at least 5)") }
            var record: [UInt8] = []
            record.reserveCapacity(digits.count / 2)
            var i = 0
            while i < digits.count {
                guard let hi = hexValue(digits[i]), let lo = hexValue(digits[i + 1]) else {
                    throw bad("'\(String(decoding: digits[i...(i + 1)], as: UTF8.self))' is not a hex byte")
                }
                record.append(hi << 4 | lo)
                i += 2
            }
            let count = Int(record[0])
            guard record.count == count + 5 else {
                throw bad("byte count says \(count) data bytes, the line has \(record.count - 5)")
            }
            let sum = record.reduce(UInt8(0)) { $0 &+ $1 }
            guard sum == 0 else {
                let expected = (0 &- record.dropLast().reduce(UInt8(0)) { $0 &+ $1 })
                throw bad("checksum is \(Hex.number(record[record.count - 1])), expected \(Hex.number(expected))")
            }
            let offset = UInt64(record[1]) << 8 | UInt64(record[2])
            let data = Array(record[4..<(4 + count)])
            switch record[3] {
            case 0x00:
                if !data.isEmpty { chunks.append((upper + offset, data, lineNumber)) }
            case 0x01:
                guard count == 0 else { throw bad("end-of-file record with \(count) data bytes") }
                sawEOF = true
            case 0x02:
                guard count == 2 else { throw bad("extended segment address record needs 2 data bytes, has \(count)") }
                upper = (UInt64(data[0]) << 8 | UInt64(data[1])) << 4
            case 0x04:
                guard count == 2 else { throw bad("extended linear address record needs 2 data bytes, has \(count)") }
                upper = (UInt64(data[0]) << 8 | UInt64(data[1])) << 16
            case 0x03, 0x05:
                guard count == 4 else { throw bad("start address record needs 4 data bytes, has \(count)") }
            default:
                throw bad("unsupported record type \(Hex.number(record[3]))")
            }
        }
        guard sawEOF else { throw ImageError(.badHex, "Intel HEX: no end-of-file record (:00000001FF); truncated file?") }
        guard let low = chunks.map(\.address).min(),
              let high = chunks.map({ $0.address + UInt64($0.data.count) }).max() else {
            throw ImageError(.badHex, "Intel HEX: no data records")
        }
        guard high <= UInt64(UInt32.max) + 1 else {
            throw ImageError(.badHex, "Intel HEX: data reaches address \(Hex.number(high)), beyond 32 bits")
        }
        guard high - low <= UInt64(maxSpan) else {
            throw ImageError(.badHex, "Intel HEX: data spans \(high - low) bytes (\(Hex.number(low))..<\(Hex.number(high))), more than \(maxSpan)")
        }
        var bytes = [UInt8](repeating: 0xFF, count: Int(high - low))
        var written = [Bool](repeating: false, count: bytes.count)
        for chunk in chunks {
            let start = Int(chunk.address - low)
            for (k, b) in chunk.data.enumerated() {
                guard !written[start + k] else {
                    throw ImageError(.badHex, "Intel HEX line \(chunk.line): address \(Hex.number(chunk.address + UInt64(k))) is written twice")
                }
                written[start + k] = true
                bytes[start + k] = b
            }
        }
        return (UInt32(low), bytes)
    }

    /// Encodes `bytes` at `base`: 16-byte data records, an extended linear address record (04) whenever the upper
    /// 16 address bits change (and first when they are not 0), then the end-of-file record. Lines end in "\n".
    /// Bytes beyond the 32-bit address space are dropped.
    public static func encode(_ bytes: [UInt8], base: UInt32) -> String {
        var lines: [String] = []
        var upper: UInt64 = 0
        var index = 0
        let limit = min(bytes.count, Int(UInt64(UInt32.max) + 1 - UInt64(base)))
        while index < limit {
            let address = UInt64(base) + UInt64(index)
            if address >> 16 != upper {
                upper = address >> 16
                lines.append(record(type: 0x04, offset: 0, data: [UInt8(truncatingIfNeeded: upper >> 8), UInt8(truncatingIfNeeded: upper)]))
            }
            // Stop each record at 16 bytes and at the 64 KiB boundary.
            let toBoundary = Int(0x1_0000 - (address & 0xFFFF))
            let n = min(16, limit - index, toBoundary)
            lines.append(record(type: 0x00, offset: UInt16(address & 0xFFFF), data: Array(bytes[index..<(index + n)])))
            index += n
        }
        lines.append(":00000001FF")
        return lines.joined(separator: "\n") + "\n"
    }

    /// One record line with its checksum.
    static func record(type: UInt8, offset: UInt16, data: [UInt8]) -> String {
        let fields = [UInt8(data.count), UInt8(offset >> 8), UInt8(offset & 0xFF), type] + data
        let checksum = 0 &- fields.reduce(UInt8(0)) { $0 &+ $1 }
        return ":" + Hex.string(fields + [checksum]).uppercased()
    }

    /// The value of one hex digit, nil for anything else.
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    /// Whether `bytes` looks like Intel HEX text: the first character other than whitespace (or a UTF-8 BOM) is ':'.
    public static func looksLikeHex(_ bytes: [UInt8]) -> Bool {
        for b in bytes.prefix(4096) {
            switch b {
            case 0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF: continue
            case UInt8(ascii: ":"): return true
            default: return false
            }
        }
        return false
    }
}
