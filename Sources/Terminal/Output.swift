import Foundation
import Support

/// Writes results as text or as JSON with stable, sorted keys: what every tool prints goes through here (and `Console`).
public enum Output {
    public static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// One JSON object on one line (JSON Lines).
    public static func jsonLine<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Prints `value` as JSON, or `text()` otherwise.
    public static func emit<T: Encodable>(_ value: T, json: Bool, text: () -> String) throws {
        line(json ? try Output.json(value) : text())
    }

    /// Prints `value` as one JSON line (a stream of events: JSON Lines), or `text()` otherwise.
    public static func emitLine<T: Encodable>(_ value: T, json: Bool, text: () -> String) throws {
        line(json ? try Output.jsonLine(value) : text())
    }

    /// Writes one line to stdout at once (unbuffered, so pipes see it immediately; a failure is kept for the
    /// exit code: `Console`).
    public static func line(_ text: String) {
        Console.out(text + "\n")
    }

    /// Aligned "Label   value" lines.
    public static func table(_ rows: [(String, String)]) -> String { TextTable.aligned(rows) }

    public static func onOff(_ value: Bool) -> String { value ? "on" : "off" }

    /// "+3", "0", "-2".
    public static func signed(_ value: Int) -> String { TextFormat.signed(value) }

    /// "31 Hz", "1 kHz", "16 kHz", "1.5 kHz".
    public static func frequency(_ hz: Int) -> String { TextFormat.frequency(hz) }
}

/// Parses on/off style words.
public enum Switch {
    public static func parse(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "on", "true", "yes", "1", "enable", "enabled": return true
        case "off", "false", "no", "0", "disable", "disabled": return false
        default: return nil
        }
    }
}
