import Foundation
import PostgresNIO

// The PostgreSQL store reads the same rows as the SQLite store (Rows.swift), by Codable: postgres-nio decodes a row
// into a tuple of its column types (`PostgresRow.decode(_:)`), not into a `Decodable` type, so `RowDecoder` decodes a
// row's properties from the columns of their snake-case names, each by postgres-nio's own decoding of its type.

extension PostgresRow {
    /// The row as `type`: each property from the column of its name (`hardwareID` from `hardware_id`). A column the
    /// query did not select reads as nil (an error for a property that is not optional), a column the type has no
    /// property for is ignored. Times are to the millisecond, as the SQLite store keeps them; an enumeration is its
    /// raw value (an unknown one is a `.storage` error); a `[String: String]` is JSON text.
    func record<R: RowColumns>(_ type: R.Type) throws -> R {
        try R(from: RowDecoder(self))
    }
}

private struct RowDecoder: Decoder {
    /// The row's cells by the property they are read into.
    let cells: [String: PostgresCell]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ row: PostgresRow) {
        cells = Dictionary(row.map { (ColumnKey.property($0.columnName), $0) }, uniquingKeysWith: { first, _ in first })
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Columns<Key>(cells: cells))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Self.notARow }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw Self.notARow }

    static let notARow = DecodingError.typeMismatch(
        [String: Any].self, .init(codingPath: [], debugDescription: "a PostgreSQL row decodes into a type of named properties"))
}

private struct Columns<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let cells: [String: PostgresCell]
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { cells.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { cells[key.stringValue] != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try cell(key).bytes == nil }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let cell = try cell(key)
        if T.self == Date.self {
            return try cell.decode(Date.self).toMilliseconds as! T
        }
        if let enumeration = T.self as? any StoredEnumeration.Type {
            return try enumeration.stored(cell.decode(String.self)) as! T
        }
        if T.self == [String: String].self {
            return try JSONDecoder().decode(T.self, from: Data(cell.decode(String.self).utf8))
        }
        guard let decodable = T.self as? any PostgresDecodable.Type else {
            throw DecodingError.typeMismatch(
                T.self, .init(codingPath: [key], debugDescription: "column \(cell.columnName) cannot be read as \(T.self)"))
        }
        func value<V: PostgresDecodable>(_: V.Type) throws -> V { try cell.decode(V.self) }
        return try value(decodable) as! T
    }

    private func cell(_ key: Key) throws -> PostgresCell {
        guard let cell = cells[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "the row has no column for \(key.stringValue)"))
        }
        return cell
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type, key) }

    /// The generic decoding, for the overloads above.
    private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T { try decode(type, forKey: key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw RowDecoder.notARow
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw RowDecoder.notARow }
    func superDecoder() throws -> any Decoder { throw RowDecoder.notARow }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw RowDecoder.notARow }
}
