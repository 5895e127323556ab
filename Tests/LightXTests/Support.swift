import LightX
@_exported import TestSupport

/// Parses "ff 5a 00 ..." (spaces and '|' ignored).
func bytes(_ hex: String) -> [UInt8] {
    let digits = hex.filter { $0.isHexDigit }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

/// A random packet with random (possibly unknown) header values.
func randomPacket(_ rng: inout TestRandom) -> Packet {
    let count = Int.random(in: 0...256, using: &rng)
    let buffer = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    let header = Header(
        source: ModuleID(rawValue: .random(in: 0...255, using: &rng)),
        destination: ModuleID(rawValue: .random(in: 0...255, using: &rng)),
        opcodeByte: .random(in: 0...255, using: &rng), statusByte: .random(in: 0...255, using: &rng),
        param0: .random(in: 0...UInt32.max, using: &rng), param1: UInt32(count))
    return try! Packet(header: header, buffer: buffer)
}

/// A mixed stream of realistic packets: plain reads, writes, flash blocks, short replies.
func realisticPackets(count: Int, seed: UInt64) -> [Packet] {
    var rng = TestRandom(seed: seed)
    return (0..<count).map { _ in
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return AppSettings.batteryLevel.readRequest()
        case 1: return try! AppSettings.ancEnabled.writeRequest(.random(using: &rng))
        case 2:
            let data = (0..<256).map { _ in UInt8.random(in: 0...255, using: &rng) }
            return try! BootRequests.writeBlock(.application, offset: UInt32.random(in: 0..<2048, using: &rng) * 256, data: data)
        default: return randomPacket(&rng)
        }
    }
}
