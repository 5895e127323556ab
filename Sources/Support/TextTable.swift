/// Aligned "Label   value" lines for people: each label padded to the longest one, two spaces before its value.
public enum TextTable {
    public static func aligned(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0 + String(repeating: " ", count: width + 2 - $0.0.count) + $0.1 }.joined(separator: "\n")
    }
}
