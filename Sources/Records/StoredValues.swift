import Foundation

/// How the PostgreSQL store writes the values it keeps as text: a run's image hashes and metadata as JSON with sorted
/// keys. (The rows, Rows.swift, read them back by Codable, and the SQLite store writes them the same way.)
protocol StoredValues {}

extension StoredValues {
    /// A run's image hashes as the stores keep them (JSON, sorted keys: the same hashes, the same text).
    static func encodeHashes(_ hashes: [String: String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(hashes), as: UTF8.self)
    }
}

/// An enumeration a column keeps by its raw value.
protocol StoredEnumeration {
    /// The value a column holds; a value this version does not know is a `.storage` error.
    static func stored(_ raw: String) throws -> Self
}

extension StoredEnumeration where Self: RawRepresentable, RawValue == String {
    static func stored(_ raw: String) throws -> Self {
        guard let value = Self(rawValue: raw) else { throw RecordsError(.storage, "records database holds an unknown \(Self.self) \"\(raw)\"") }
        return value
    }
}

extension IdentityKind: StoredEnumeration {}
extension IdentityState: StoredEnumeration {}
extension RunOutcome: StoredEnumeration {}
extension StepOutcome: StoredEnumeration {}
extension MeasurementOutcome: StoredEnumeration {}
extension OperatorAnswer.Kind: StoredEnumeration {}
