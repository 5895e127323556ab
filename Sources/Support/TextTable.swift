import Glibc

/// Aligned "Label   value" lines for people: each label padded to the longest one, two spaces before its value.
public enum TextTable {
    public static func aligned(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0 + String(repeating: " ", count: width + 2 - $0.0.count) + $0.1 }.joined(separator: "\n")
    }
}

/// Numbers for people, as every report writes them.
public enum TextFormat {
    /// "+3", "0", "-2".
    public static func signed(_ value: Int) -> String { value > 0 ? "+\(value)" : "\(value)" }

    /// `value` with `decimals` digits after the point, as printf's %.Nf writes it ("0.50", "12.3").
    public static func fixed(_ value: Double, decimals: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.\(max(0, min(decimals, 17)))f", $0) }
        return String(cString: buffer)
    }

    /// "31 Hz", "1 kHz", "16 kHz", "1.5 kHz".
    public static func frequency(_ hz: Int) -> String {
        guard hz >= 1000 else { return "\(hz) Hz" }
        if hz % 1000 == 0 { return "\(hz / 1000) kHz" }
        // One decimal as printf's %.1f writes it.
        var buffer = [CChar](repeating: 0, count: 32)
        _ = withVaList([Double(hz) / 1000]) { vsnprintf(&buffer, buffer.count, "%.1f", $0) }
        return String(cString: buffer) + " kHz"
    }
}
