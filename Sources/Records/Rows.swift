import Foundation
import GRDB

// The rows of the records tables (Schema.swift), by Codable, for both stores: a property is the column of its name in
// snake case (`hardwareID` is `hardware_id`), an enumeration is its raw value, a run's image hashes and metadata are
// JSON text (sorted keys), a date is a point in time to the millisecond. The SQLite store reads and writes them as GRDB
// records (dates as GRDB's text, `yyyy-MM-dd HH:mm:ss.SSS`, UTC); the PostgreSQL store reads them with
// `PostgresRow.record(_:)` (PostgresRows.swift) and writes them with its own statements. A row leaves out the columns
// it does not use (an insert leaves them to their defaults, a read ignores them), and a column a store's table does
// not have reads as nil (an outbox's `uploaded_state` on the line's server). The rows stay inside the stores, which
// take and return the model values (RecordModel): the public types carry no database types.

/// A row of one of the records tables (a `PersistableRecord` too when it needs no id back from an insert).
protocol TableRow: RowColumns, Encodable, MutablePersistableRecord {
    /// The columns an SQLite SELECT reads it from, by name. Never `*`: when another connection has changed the schema
    /// (a station migrating the file, a newer Tuneup rebuilding a table), SQLite prepares the statement again on its
    /// first step, after GRDB took the row's column positions, and a record would read `*` by stale positions.
    static var columns: String { get }
}

extension TableRow {
    static var databaseColumnEncodingStrategy: DatabaseColumnEncodingStrategy { .convertToSnakeCase }
}

/// Columns read by their names in snake case: a table's row, or what a query selects.
protocol RowColumns: Decodable, FetchableRecord {}

extension RowColumns {
    static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy {
        .custom { column in ColumnKey(stringValue: ColumnKey.property(column)) }
    }
}

struct ColumnKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    /// `hardware_id` → `hardwareID`, `media_type` → `mediaType`: the property a column is read into, for both stores
    /// (the inverse of `convertToSnakeCase` for the schema's names; GRDB's `convertFromSnakeCase` would look for
    /// `hardwareId`).
    static func property(_ column: String) -> String {
        let words = column.split(separator: "_").map(String.init)
        return words.dropFirst().reduce(words.first ?? "") { name, word in
            name + (word == "id" ? "ID" : word.prefix(1).uppercased() + word.dropFirst())
        }
    }
}

/// A row whose `id` SQLite assigns (`INTEGER PRIMARY KEY AUTOINCREMENT`): nil until it is inserted.
protocol NumberedRow: TableRow {
    var id: Int64? { get set }
}

extension NumberedRow {
    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// Inserts the row; returns the id it was given.
    func insertedID(_ db: Database) throws -> Int64 {
        var row = self
        try row.insert(db)
        return row.id!
    }
}

struct UnitRow: TableRow, PersistableRecord {
    static let databaseTableName = "units"
    static let columns = "hardware_id, first_seen"
    var hardwareID: String
    var firstSeen: Date
}

struct LeaseRow: NumberedRow {
    static let databaseTableName = "leases"
    static let columns = "id, station, kind, created_at, server_lease_id"
    var id: Int64?
    var station: String
    var kind: IdentityKind
    var createdAt: Date
    /// The server's id of a lease an outbox mirrors (schema v2); nil for a lease made here.
    var serverLeaseID: Int64?
}

struct IdentityRow: NumberedRow {
    static let databaseTableName = "identities"
    static let columns = "id, kind, value, state, hardware_id, station, lease_id, updated_at, uploaded_state"
    var id: Int64?
    var kind: IdentityKind
    var value: String
    var state: IdentityState
    var hardwareID: String?
    var station: String
    var leaseID: Int64?
    var updatedAt: Date
    /// The state the line's server holds (an outbox's, schema v2): nil until uploaded, `conflict:STATE` when refused.
    var uploadedState: String?

    var identity: Identity {
        Identity(
            id: IdentityID(id!), kind: kind, value: value, state: state, hardwareID: hardwareID, station: station,
            lease: leaseID.map(LeaseID.init), updatedAt: updatedAt)
    }
}

struct RunRow: NumberedRow {
    static let databaseTableName = "runs"
    static let columns = "id, hardware_id, station, slot, operator, recipe_hash, tool_version, image_hashes, started_at, ended_at, outcome, rework_count, work_order, lot, fixture, metadata"
    var id: Int64?
    var hardwareID, station, slot, `operator`, recipeHash, toolVersion: String
    var imageHashes: [String: String]
    var startedAt: Date
    var endedAt: Date?
    var outcome: RunOutcome?
    var reworkCount: Int
    var workOrder, lot, fixture: String?
    var metadata: [String: String]

    init(_ s: RunStart, reworkCount: Int) {
        (hardwareID, station, slot, `operator`, recipeHash, toolVersion, imageHashes, startedAt) =
            (s.hardwareID, s.station, s.slot, s.operatorName, s.recipeHash, s.toolVersion, s.imageHashes, s.startedAt)
        (workOrder, lot, fixture, metadata, self.reworkCount) = (s.workOrder, s.lot, s.fixture, s.metadata, reworkCount)
    }

    /// The run without its steps, attachments and answers.
    var run: RunRecord {
        RunRecord(
            id: RunID(id!),
            start: RunStart(
                hardwareID: hardwareID, station: station, slot: slot, operatorName: `operator`, recipeHash: recipeHash,
                toolVersion: toolVersion, imageHashes: imageHashes, startedAt: startedAt, workOrder: workOrder, lot: lot,
                fixture: fixture, metadata: metadata),
            endedAt: endedAt, outcome: outcome, reworkCount: reworkCount)
    }
}

struct StepRow: NumberedRow {
    static let databaseTableName = "steps"
    static let columns = "id, run_id, name, started_at, ended_at, outcome, retries, message"
    var id: Int64?
    var runID: Int64
    var name: String
    var startedAt, endedAt: Date
    var outcome: StepOutcome
    var retries: Int
    var message: String

    init(_ s: StepRecord, run: RunID) {
        (runID, name, startedAt, endedAt, outcome, retries, message) =
            (run.rawValue, s.name, s.startedAt, s.endedAt, s.outcome, s.retries, s.message)
    }

    func record(_ measurements: [RecordModel.Measurement]) -> StepRecord {
        StepRecord(
            name: name, startedAt: startedAt, endedAt: endedAt, outcome: outcome, retries: retries, message: message,
            measurements: measurements)
    }
}

struct MeasurementRow: TableRow, PersistableRecord {
    static let databaseTableName = "measurements"
    static let columns = "step_id, name, value, unit, low, high, marginal_low, marginal_high, outcome"
    var stepID: Int64
    var name: String
    var value: Double
    var unit: String
    var low, high, marginalLow, marginalHigh: Double?
    var outcome: MeasurementOutcome

    init(_ m: RecordModel.Measurement, step: StepID) {
        (stepID, name, value, unit, low, high, marginalLow, marginalHigh, outcome) =
            (step.rawValue, m.name, m.value, m.unit, m.low, m.high, m.marginalLow, m.marginalHigh, m.outcome)
    }

    var measurement: RecordModel.Measurement {
        RecordModel.Measurement(
            name: name, value: value, unit: unit, low: low, high: high, marginalLow: marginalLow, marginalHigh: marginalHigh,
            outcome: outcome)
    }
}

struct AttachmentRow: TableRow, PersistableRecord {
    static let databaseTableName = "attachments"
    static let columns = "run_id, step, name, media_type, size, sha256, content, created_at"
    var runID: Int64
    var step: String?
    var name, mediaType: String
    var size: Int
    var sha256: String
    /// nil when the query leaves the column out (a run's listing).
    var content: Data?
    var createdAt: Date

    init(_ a: Attachment, run: RunID) {
        (runID, step, name, mediaType, size, sha256, content, createdAt) =
            (run.rawValue, a.step, a.name, a.mediaType, a.size, a.sha256, a.content ?? Data(), a.createdAt)
    }

    var attachment: Attachment {
        Attachment(name: name, step: step, mediaType: mediaType, size: size, sha256: sha256, createdAt: createdAt, content: content)
    }
}

struct ReleaseRow: TableRow, PersistableRecord {
    static let databaseTableName = "releases"
    static let columns = "hardware_id, released_at, released_by, reason, failures"
    var hardwareID: String
    var releasedAt: Date
    var releasedBy, reason: String
    var failures: Int

    init(_ r: Release) {
        (hardwareID, releasedAt, releasedBy, reason, failures) = (r.hardwareID, r.releasedAt, r.releasedBy, r.reason, r.failures)
    }

    var release: Release {
        Release(hardwareID: hardwareID, releasedAt: releasedAt, releasedBy: releasedBy, reason: reason, failures: failures)
    }
}

struct AnswerRow: TableRow, PersistableRecord {
    static let databaseTableName = "answers"
    static let columns = "run_id, step, kind, label, value, answered_by, source, answered_at"
    var runID: Int64
    var step: String
    var kind: OperatorAnswer.Kind
    var label, value, answeredBy, source: String
    var answeredAt: Date

    init(_ a: OperatorAnswer, run: RunID) {
        (runID, step, kind, label, value, answeredBy, source, answeredAt) =
            (run.rawValue, a.step, a.kind, a.label, a.value, a.answeredBy, a.source, a.answeredAt)
    }

    var answer: OperatorAnswer {
        OperatorAnswer(step: step, kind: kind, label: label, value: value, answeredBy: answeredBy, source: source, answeredAt: answeredAt)
    }
}

/// A scanned code and the unit it is bound to: an `answers` row with its run's unit.
struct BindingRow: RowColumns {
    var value, hardwareID: String
    var runID: Int64
    var answeredAt: Date

    var binding: ScanBinding { ScanBinding(code: value, hardwareID: hardwareID, run: RunID(runID), answeredAt: answeredAt) }
}
