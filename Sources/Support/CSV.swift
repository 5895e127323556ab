/// Comma-separated values as RFC 4180 has them: the one CSV writer of the project (records exports, wearable
/// recordings). A field holding a comma, a quote or a line break is quoted, its quotes doubled; rows end in CRLF.
public enum CSV {
    /// What ends every row.
    public static let lineEnding = "\r\n"

    /// One field, quoted when it must be.
    public static func field(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else { return text }
        var quoted = "\""
        for scalar in text.unicodeScalars {
            if scalar == "\"" { quoted += "\"" }
            quoted.unicodeScalars.append(scalar)
        }
        return quoted + "\""
    }

    /// One row, without its line ending.
    public static func row(_ fields: [String]) -> String { fields.map(field).joined(separator: ",") }

    /// Rows, each ended by `lineEnding`.
    public static func document(_ rows: [[String]]) -> String { rows.map { row($0) + lineEnding }.joined() }
}
