import Foundation

/// How the PostgreSQL store writes and reads the values it keeps as text: an enumeration's raw value, and a run's
/// image hashes as JSON with sorted keys. (The SQLite store's rows, GRDB records, keep them the same way by Codable:
/// SQLiteRows.swift.)
protocol StoredValues {}

extension StoredValues {
    /// The enumeration value a column holds; a value this version does not know is a `.storage` error.
    static func decode<T: RawRepresentable>(_ type: T.Type, _ raw: String) throws -> T where T.RawValue == String {
        guard let value = T(rawValue: raw) else { throw RecordsError(.storage, "records database holds an unknown \(T.self) \"\(raw)\"") }
        return value
    }

    /// A run's image hashes as the stores keep them (JSON, sorted keys: the same hashes, the same text).
    static func encodeHashes(_ hashes: [String: String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(hashes), as: UTF8.self)
    }
}
