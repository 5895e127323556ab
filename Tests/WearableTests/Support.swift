import Wearable
@_exported import TestSupport

/// Parses "01 00 12 ..." (spaces and '|' ignored).
func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.filter { $0.isHexDigit })
    return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// "01 00 12 ...", lower case.
func hex(_ b: [UInt8]) -> String {
    b.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}
