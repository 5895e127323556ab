/// The one grammar for numbers with units on Tuneup's command line, in link conditions and fault specs:
///
/// - Counts (bytes, bits per second): a decimal number, or `0x` hex; SI suffixes are decimal and binary suffixes
///   binary: `k` = 1 000, `M` = 1 000 000, `G` = 10⁹; `KiB` = 1 024, `MiB` = 1 048 576, `GiB` = 2³⁰. A fraction is
///   allowed when the result is whole (`1.5k` = 1 500). `K` alone is refused: it could mean either.
/// - Durations: a number (digits, an optional fraction) with `ns`, `us` (or `µs`), `ms`, `s`, `min` or `h`: `50ms`,
///   `0.5s`, `250us`, `2min`, `1.5h`. A bare number is refused (except `0`): say which unit — unless the caller counts
///   bare numbers in a unit (`bare: .seconds(1)` for the options counted in seconds, such as `--duration`). `m` is
///   refused: minutes or milliseconds?
package enum Quantities {
    /// Decimal (SI) and binary multipliers by suffix.
    package static let countUnits: [String: Int] = [
        "": 1, "k": 1_000, "M": 1_000_000, "G": 1_000_000_000, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
    ]

    /// A count with an optional unit from `units` (default: `countUnits`); nil when it does not parse, is negative
    /// or overflows.
    package static func parseCount(_ text: String, units: [String: Int] = countUnits) -> Int? {
        let t = Substring(text)
        if t.hasPrefix("0x") || t.hasPrefix("0X") {
            let body = t.dropFirst(2)
            let digitsEnd = body.firstIndex { !$0.isHexDigit } ?? body.endIndex
            guard digitsEnd > body.startIndex, let n = Int(body[..<digitsEnd], radix: 16),
                  let scale = units[String(body[digitsEnd...])] else { return nil }
            let (product, overflow) = n.multipliedReportingOverflow(by: scale)
            return overflow ? nil : product
        }
        let numberEnd = t.firstIndex { !($0.isASCIIDigit || $0 == ".") } ?? t.endIndex
        let number = t[..<numberEnd]
        guard !number.isEmpty, let scale = units[String(t[numberEnd...])] else { return nil }
        if number.allSatisfy(\.isASCIIDigit) {
            guard let n = Int(number) else { return nil }
            let (product, overflow) = n.multipliedReportingOverflow(by: scale)
            return overflow ? nil : product
        }
        guard let value = Double(number), value.isFinite else { return nil }
        let scaled = (value * Double(scale)).rounded()
        guard scaled < 9.0e18, abs(value * Double(scale) - scaled) < 1e-6 else { return nil }
        return Int(scaled)
    }

    /// The duration forms, for error messages: "a number with ms, s, min or h (500ms, 10s, 2min, 1h)".
    package static let durationForms = "a number with ms, s, min or h (500ms, 10s, 2min, 1h)"

    /// `15ms`, `250us`, `250µs`, `100ns`, `1.5s`, `2min`, `1h`, or `0`; a bare number (`10`, `2.5`) is that many
    /// `bare` (nil: refused). Nil when it does not parse, is negative, or is a billion seconds or more.
    package static func parseDuration(_ text: String, bare: Duration? = nil) -> Duration? {
        let t = Substring(text)
        if t == "0" { return .zero }
        func isNumber(_ s: Substring) -> Bool { !s.isEmpty && s.allSatisfy { $0.isASCIIDigit || $0 == "." } }
        func make(_ number: Substring, _ scale: Double) -> Duration? {
            guard isNumber(number), let value = Double(number), value.isFinite, value * scale < 1e9 else { return nil }
            return .nanoseconds(Int64((value * scale * 1e9).rounded()))
        }
        // Longer suffixes first where one ends another ("ms", "ns", "us" end in "s").
        let units: [(String, Double)] = [("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1), ("min", 60), ("h", 3600)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            return make(t.dropLast(suffix.count), scale)
        }
        guard let bare, isNumber(t) else { return nil }
        let (seconds, attoseconds) = bare.components
        return make(t, Double(seconds) + Double(attoseconds) * 1e-18)
    }
}

extension Character {
    /// 0-9 only (not other scripts' digits).
    package var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
