/// Text made safe inside XML and HTML, in element content and in quoted attribute values alike: the one escaper of
/// the project (JUnit XML exports, the plot's SVG, the hub's page).
public enum Markup {
    /// `&`, `<`, `>`, both quotes, and line breaks and tabs as character references (kept in attribute values);
    /// characters XML 1.0 cannot carry (other controls, U+FFFE, U+FFFF) become U+FFFD.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\n", "\t", "\r": out += "&#\(scalar.value);"
            default:
                out.unicodeScalars.append(scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value) ? "\u{FFFD}" : scalar)
            }
        }
        return out
    }
}
