import Foundation
import GRDB
import Support

/// The records in one SQLite file, through GRDB.
///
/// The file is in WAL mode (a `DatabasePool`): readers never block the writer, and several stations (processes or
/// store instances) may share one file on a local disk; a writer waits up to `busyTimeout` for another's
/// transaction and then fails with `RecordsError.busy`. Every change is all or nothing (a savepoint of an IMMEDIATE
/// transaction that changes waiting together share, committed before any of them returns: `GroupCommit`), so a
/// killed process leaves no half-written record. Rows are read and written as GRDB records (Rows.swift), which it
/// converts to and from the model values. Database work runs on GRDB's own dispatch queues, opening and migrating
/// on the blocking executor (`Blocking`): nothing blocks Swift's cooperative pool.
public final class SQLiteRecordStore: RecordStore {
    /// The database file.
    public let path: String
    private let pool: any DatabaseWriter
    private let busyTimeout: Duration
    /// Every change goes through it: changes waiting together share one transaction and one commit.
    private let commits: GroupCommit

    private init(path: String, pool: any DatabaseWriter, busyTimeout: Duration) {
        self.path = path
        self.pool = pool
        self.busyTimeout = busyTimeout
        self.commits = GroupCommit(pool)
    }

    /// Opens the records in the SQLite file at `path`, creating it and migrating its schema as needed.
    /// - Parameter busyTimeout: how long a change waits for another station's transaction before `busy`.
    public static func open(path: String, busyTimeout: Duration = .seconds(10)) async throws -> SQLiteRecordStore {
        try await Blocking.perform("records open") { try openNow(path: path, busyTimeout: busyTimeout) }
    }

    /// Opens the records at `path` for reading only: nothing is created, migrated or written, so a file the user may
    /// only read (and its directory) is enough. Changes throw `RecordsError.storage`.
    ///
    /// Throws `cannotOpen` (no such file, or no permission to read it), `notADatabase`, `newerSchema`, and `storage`
    /// for a file whose schema is older than this version's (a writing command, such as `station run`, upgrades it)
    /// or an empty file (no table: nothing was written to it; a writing command makes it a new database).
    public static func openForReading(path: String, busyTimeout: Duration = .seconds(10)) async throws -> SQLiteRecordStore {
        try await Blocking.perform("records open") {
            do {
                return try openReadOnly(path: path, busyTimeout: busyTimeout)
            } catch let error as RecordsError {
                throw error
            } catch {
                throw mapped(error, path: path, busyTimeout: busyTimeout)
            }
        }
    }

    private static func openReadOnly(path: String, busyTimeout: Duration) throws -> SQLiteRecordStore {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw RecordsError(.cannotOpen, "cannot read records database \(path): " + (FileManager.default.fileExists(atPath: path) ? "permission denied" : "no such file"))
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(busyTimeout.seconds)
        configuration.label = "records"
        // A WAL-mode file is read through its shared-memory index, which a reader who may not write the directory
        // can neither create nor use when it is missing: then the file is read as it is on disk (immutable), which is
        // what it holds once its last writer has closed it.
        func opened(_ location: String) throws -> DatabaseQueue {
            let queue = try DatabaseQueue(path: location, configuration: configuration)
            _ = try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        }
        let queue: DatabaseQueue
        do {
            queue = try opened(path)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN || error.resultCode == .SQLITE_READONLY {
            queue = try opened("file:" + (path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path) + "?immutable=1")
        }
        let migrator = Schema.migrator
        if try queue.read({ try migrator.hasBeenSuperseded($0) }) {
            throw RecordsError(
                .newerSchema, "records database \(path) was written by a newer Tuneup (its schema has migrations this version does not know)")
        }
        guard try queue.read({ try migrator.hasCompletedMigrations($0) }) else {
            // An empty file (or an SQLite file without a table) is no older schema: nothing was ever written to it.
            if try queue.read({ try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_master") ?? 0 }) == 0 {
                throw RecordsError(.storage, "records database \(path) is empty: no station has written to it (a station run on it creates its tables)")
            }
            throw RecordsError(.storage, "records database \(path) was written by an older Tuneup: a station run on it upgrades it")
        }
        return SQLiteRecordStore(path: path, pool: queue, busyTimeout: busyTimeout)
    }

    /// Opens, checks and migrates. Two stations creating one new file at the same moment may get BUSY at once
    /// (SQLite does not wait for the busy timeout while the other sets up WAL mode), or fail on the tables the other's
    /// migration made: until the busy timeout has passed, such a failure is retried (on the blocking executor, not
    /// the cooperative pool), and it is no failure once the other station's migration is complete.
    private static func openNow(path: String, busyTimeout: Duration) throws -> SQLiteRecordStore {
        let deadline = ContinuousClock.now + busyTimeout
        while true {
            do {
                return try openOnce(path: path, busyTimeout: busyTimeout)
            } catch let error as DatabaseError where [.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode) {
                guard ContinuousClock.now < deadline else { throw mapped(error, path: path, busyTimeout: busyTimeout) }
                usleep(5_000)
            } catch let error as MigrationRace {
                // Another station's migration is between two of its steps: wait for it to finish them.
                guard ContinuousClock.now < deadline else { throw mapped(error.underlying, path: path, busyTimeout: busyTimeout) }
                usleep(5_000)
            } catch {
                throw mapped(error, path: path, busyTimeout: busyTimeout)
            }
        }
    }

    /// A migration failed while the file's migrations are not all done: another opener's may be under way.
    private struct MigrationRace: Error { let underlying: any Error }

    private static func openOnce(path: String, busyTimeout: Duration) throws -> SQLiteRecordStore {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout.seconds)
        configuration.foreignKeysEnabled = true
        configuration.label = "records"
        let pool = try DatabasePool(path: path, configuration: configuration)
        let migrator = Schema.migrator
        if try pool.read({ try migrator.hasBeenSuperseded($0) }) {
            throw RecordsError(
                .newerSchema, "records database \(path) was written by a newer Tuneup (its schema has migrations this version does not know)")
        }
        do {
            try migrator.migrate(pool)
        } catch {
            guard try pool.read({ try migrator.hasCompletedMigrations($0) }) else { throw MigrationRace(underlying: error) }
        }
        return SQLiteRecordStore(path: path, pool: pool, busyTimeout: busyTimeout)
    }

    // MARK: - Identities

    public func reserveIdentity(
        _ kind: IdentityKind, for hardwareID: String, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Identity {
        try Self.check(hardwareID: hardwareID)
        let now = Date()
        return try await write { db in
            try Self.ensureUnit(db, hardwareID, now)
            return try Self.reserve(db, kind, for: hardwareID, station: station, at: now, candidates)
        }
    }

    /// Both in one write: at 64 units at once each write is a wait in the writer's line and for the pool.
    public func reserveIdentityPair(
        _ kind: IdentityKind, _ pairedKind: IdentityKind, for hardwareID: String, station: String,
        candidates: @escaping IdentityCandidates, paired: @escaping @Sendable (Identity) throws -> String
    ) async throws -> (Identity, Identity) {
        try Self.check(hardwareID: hardwareID)
        let now = Date()
        return try await write { db in
            try Self.ensureUnit(db, hardwareID, now)
            let first = try Self.reserve(db, kind, for: hardwareID, station: station, at: now, candidates)
            let value = try paired(first)
            let second = try Self.reserve(db, pairedKind, for: hardwareID, station: station, at: now) { $0 == 0 ? value : nil }
            return (first, second)
        }
    }

    /// The unit's identity of `kind` (in any state but voided), or a reservation of the first free candidate.
    private static func reserve(
        _ db: Database, _ kind: IdentityKind, for hardwareID: String, station: String, at now: Date, _ candidates: IdentityCandidates
    ) throws -> Identity {
        if let held = try activeIdentity(db, kind, hardwareID) { return held }
        let (ids, tried) = try insertFree(
            db, kind, count: 1, state: .reserved, hardwareID: hardwareID, station: station, lease: nil, at: now, candidates)
        guard let id = ids.first else {
            throw RecordsError(
                .poolExhausted, "no free \(kind.rawValue) for unit \(hardwareID): all \(tried) candidates are issued or voided")
        }
        return try identity(db, id)!
    }

    public func reserveIdentity(_ kind: IdentityKind, for hardwareID: String, fromLease lease: LeaseID) async throws -> Identity {
        try Self.check(hardwareID: hardwareID)
        let now = Date()
        return try await write { db in
            guard let leased = try LeaseRow.fetchOne(db, sql: "SELECT \(LeaseRow.columns) FROM leases WHERE id = ?", arguments: [lease.rawValue]) else {
                throw RecordsError(.notFound, "lease \(lease) does not exist")
            }
            guard leased.kind == kind else {
                throw RecordsError(.invalidArgument, "lease \(lease) holds \(leased.kind.rawValue) identities, not \(kind.rawValue)")
            }
            try Self.ensureUnit(db, hardwareID, now)
            if let held = try Self.activeIdentity(db, kind, hardwareID) { return held }
            guard let next = try Int64.fetchOne(
                db, sql: "SELECT id FROM identities WHERE lease_id = ? AND state = 'leased' ORDER BY id LIMIT 1",
                arguments: [lease.rawValue])
            else {
                throw RecordsError(.poolExhausted, "lease \(lease) of station \(leased.station) has no free \(kind.rawValue) left")
            }
            try db.execute(
                sql: "UPDATE identities SET state = 'reserved', hardware_id = ?, updated_at = ? WHERE id = ? AND state = 'leased'",
                arguments: [hardwareID, now, next])
            return try Self.identity(db, next)!
        }
    }

    public func leaseBlock(
        _ kind: IdentityKind, count: Int, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Lease {
        guard count > 0 else { throw RecordsError(.invalidArgument, "a lease needs at least one identity, not \(count)") }
        let now = Date()
        return try await write { db in
            let lease = LeaseID(try LeaseRow(station: station, kind: kind, createdAt: now).insertedID(db))
            let (ids, tried) = try Self.insertFree(
                db, kind, count: count, state: .leased, hardwareID: nil, station: station, lease: lease, at: now, candidates)
            guard !ids.isEmpty else {
                throw RecordsError(.poolExhausted, "no free \(kind.rawValue) to lease to \(station): all \(tried) candidates are issued or voided")
            }
            return Lease(
                id: lease, station: station, kind: kind, createdAt: now,
                identities: try Self.identities(db, where: "lease_id = ?", [lease.rawValue]))
        }
    }

    public func voidUnused(lease: LeaseID) async throws -> [Identity] {
        let now = Date()
        return try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM leases WHERE id = ?", arguments: [lease.rawValue]) != nil else {
                throw RecordsError(.notFound, "lease \(lease) does not exist")
            }
            let unused = try Self.identities(db, where: "lease_id = ? AND state = 'leased'", [lease.rawValue])
            try db.execute(
                sql: "UPDATE identities SET state = 'voided', updated_at = ? WHERE lease_id = ? AND state = 'leased'",
                arguments: [now, lease.rawValue])
            return unused.map { var voided = $0; voided.state = .voided; voided.updatedAt = now; return voided }
        }
    }

    public func identities(of hardwareID: String) async throws -> [Identity] {
        try await read { db in try Self.identities(db, where: "hardware_id = ?", [hardwareID]) }
    }

    /// Moves an identity to `target` (`Identity.changes(to:)` has the rule); in `target` already, nothing changes.
    public func transition(_ id: IdentityID, to target: IdentityState) async throws -> Identity {
        let now = Date()
        return try await write { db in
            guard let current = try Self.identity(db, id.rawValue) else {
                throw RecordsError(.notFound, "identity \(id) does not exist")
            }
            guard try current.changes(to: target) else { return current }
            try db.execute(
                sql: "UPDATE identities SET state = ?, updated_at = ? WHERE id = ?", arguments: [target.rawValue, now, id.rawValue])
            return try Self.identity(db, id.rawValue)!
        }
    }

    // MARK: - Runs

    public func startRun(_ start: RunStart) async throws -> RunID {
        try Self.check(hardwareID: start.hardwareID)
        try Traceability.check(start)
        return try await write { db in
            try Self.ensureUnit(db, start.hardwareID, start.startedAt)
            try db.execute(
                sql: "UPDATE runs SET outcome = 'aborted', ended_at = ? WHERE hardware_id = ? AND outcome IS NULL",
                arguments: [start.startedAt, start.hardwareID])
            let rework = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM runs WHERE hardware_id = ? AND outcome IN ('fail', 'error')",
                arguments: [start.hardwareID]) ?? 0
            return RunID(try RunRow(start, reworkCount: rework).insertedID(db))
        }
    }

    public func recordStep(_ step: StepRecord, in run: RunID) async throws -> StepID {
        guard step.retries >= 0 else { throw RecordsError(.invalidArgument, "step \(step.name): retries cannot be negative") }
        return try await write { db in
            try Self.checkOpen(db, run)
            let id = StepID(try StepRow(step, run: run).insertedID(db))
            for measurement in step.measurements { try MeasurementRow(measurement, step: id).insert(db) }
            return id
        }
    }

    public func recordMeasurement(_ measurement: RecordModel.Measurement, in step: StepID) async throws {
        try await write { db in
            guard let run = try Int64.fetchOne(db, sql: "SELECT run_id FROM steps WHERE id = ?", arguments: [step.rawValue]) else {
                throw RecordsError(.notFound, "step \(step) does not exist")
            }
            try Self.checkOpen(db, RunID(run))
            try MeasurementRow(measurement, step: step).insert(db)
        }
    }

    public func finishRun(_ run: RunID, outcome: RunOutcome, at date: Date) async throws {
        try await write { db in
            try Self.checkOpen(db, run)
            try db.execute(
                sql: "UPDATE runs SET outcome = ?, ended_at = ? WHERE id = ? AND outcome IS NULL",
                arguments: [outcome.rawValue, date, run.rawValue])
        }
    }

    public func abortOpenRuns(station: String, at date: Date) async throws -> [RunID] {
        try await write { db in
            let open = try Int64.fetchAll(
                db, sql: "SELECT id FROM runs WHERE station = ? AND outcome IS NULL ORDER BY id", arguments: [station])
            try db.execute(
                sql: "UPDATE runs SET outcome = 'aborted', ended_at = ? WHERE station = ? AND outcome IS NULL",
                arguments: [date, station])
            return open.map(RunID.init)
        }
    }

    // MARK: - Traceability and rework

    public func recordAttachment(_ attachment: Attachment, in run: RunID) async throws {
        try Traceability.check(attachment)
        try await write { db in
            try Self.checkOpen(db, run)
            try Self.insert(db, attachment, run)
        }
    }

    public func attachment(run: RunID, name: String) async throws -> Attachment? {
        try await read { db in
            try AttachmentRow.fetchOne(db, sql: "SELECT \(AttachmentRow.columns) FROM attachments WHERE run_id = ? AND name = ?", arguments: [run.rawValue, name])?
                .attachment
        }
    }

    public func release(_ hardwareID: String, by releasedBy: String, reason: String, at date: Date) async throws -> Release {
        try Self.check(hardwareID: hardwareID)
        for (what, value) in [("the releaser's name", releasedBy), ("the reason", reason)] {
            if let problem = Traceability.problem(value: value, what: what) { throw RecordsError(.invalidArgument, problem) }
        }
        return try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM units WHERE hardware_id = ?", arguments: [hardwareID]) != nil else {
                throw RecordsError(.notFound, "unit \(hardwareID) has never been seen")
            }
            let runs = try Self.runs(db, of: hardwareID)
            let failures = Rework.failuresSinceRelease(runs: runs, releases: try Self.releases(db, hardwareID))
            guard failures > 0 else {
                throw RecordsError(.invalidTransition, "unit \(hardwareID) has no failed run since its last release: nothing to release")
            }
            let release = Release(hardwareID: hardwareID, releasedAt: date.toMilliseconds, releasedBy: releasedBy, reason: reason, failures: failures)
            try ReleaseRow(release).insert(db)
            return release
        }
    }

    public func releases(of hardwareID: String) async throws -> [Release] {
        try await read { db in try Self.releases(db, hardwareID) }
    }

    static func releases(_ db: Database, _ hardwareID: String) throws -> [Release] {
        try ReleaseRow.fetchAll(db, sql: "SELECT \(ReleaseRow.columns) FROM releases WHERE hardware_id = ? ORDER BY id", arguments: [hardwareID]).map(\.release)
    }

    static func insert(_ db: Database, _ a: Attachment, _ run: RunID) throws {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM attachments WHERE run_id = ? AND name = ?", arguments: [run.rawValue, a.name]) == nil else {
            throw RecordsError(.invalidArgument, "run \(run) has an attachment named \(a.name) already")
        }
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM attachments WHERE run_id = ?", arguments: [run.rawValue]) ?? 0
        guard count < Traceability.maxAttachments else {
            throw RecordsError(.invalidArgument, "run \(run) has \(count) attachments; at most \(Traceability.maxAttachments)")
        }
        try AttachmentRow(a, run: run).insert(db)
    }

    /// A run's attachments without content (or with it, for an upload), in the order they were recorded.
    static func attachments(_ db: Database, _ run: Int64, content: Bool) throws -> [Attachment] {
        let columns = "run_id, name, step, media_type, size, sha256, created_at" + (content ? ", content" : "")
        return try AttachmentRow.fetchAll(db, sql: "SELECT \(columns) FROM attachments WHERE run_id = ? ORDER BY id", arguments: [run])
            .map(\.attachment)
    }

    // MARK: - Operator answers

    public func recordAnswer(_ answer: OperatorAnswer, in run: RunID) async throws {
        try answer.check()
        try await write { db in
            try Self.checkOpen(db, run)
            try AnswerRow(answer, run: run).insert(db)
        }
    }

    public func bindings(ofCode code: String) async throws -> [ScanBinding] {
        try await read { db in
            try BindingRow.fetchAll(db, sql: """
                SELECT a.value, r.hardware_id, a.run_id, a.answered_at FROM answers a JOIN runs r ON r.id = a.run_id
                WHERE a.kind = 'scan' AND a.value = ? ORDER BY a.id
                """, arguments: [code]).map(\.binding)
        }
    }

    /// A run's operator answers, in the order they were given.
    static func answers(_ db: Database, _ run: Int64) throws -> [OperatorAnswer] {
        try AnswerRow.fetchAll(db, sql: "SELECT \(AnswerRow.columns) FROM answers WHERE run_id = ? ORDER BY id", arguments: [run]).map(\.answer)
    }

    // MARK: - Reading

    public func units() async throws -> [UnitRecord] {
        try await read { db in
            try UnitRow.fetchAll(db, sql: "SELECT \(UnitRow.columns) FROM units ORDER BY first_seen, hardware_id")
                .map { try Self.unit(db, $0) }
        }
    }

    public func unit(_ hardwareID: String) async throws -> UnitRecord? {
        try await read { db in
            try UnitRow.fetchOne(db, sql: "SELECT \(UnitRow.columns) FROM units WHERE hardware_id = ?", arguments: [hardwareID])
                .map { try Self.unit(db, $0) }
        }
    }

    public func runs(hardwareID: String?, station: String?) async throws -> [RunRecord] {
        try await read { db in
            try RunRow.fetchAll(
                db,
                sql: "SELECT \(RunRow.columns) FROM runs WHERE (?1 IS NULL OR hardware_id = ?1) AND (?2 IS NULL OR station = ?2) ORDER BY id",
                arguments: [hardwareID, station]
            ).map(\.run)
        }
    }

    public func latestFinishedRuns(station: String, recipeHash: String, limit: Int) async throws -> [RunRecord] {
        try await read { db in
            try RunRow.fetchAll(
                db,
                sql: """
                    SELECT \(RunRow.columns) FROM runs WHERE station = ? AND recipe_hash = ? AND outcome IN ('pass', 'fail', 'error')
                    ORDER BY started_at DESC, id DESC LIMIT ?
                    """,
                arguments: [station, recipeHash, max(0, limit)]
            ).map(\.run).reversed()
        }
    }

    public func run(_ id: RunID) async throws -> RunRecord? {
        try await read { db in
            guard var run = try RunRow.fetchOne(db, sql: "SELECT \(RunRow.columns) FROM runs WHERE id = ?", arguments: [id.rawValue])?.run else {
                return nil
            }
            let steps = try StepRow.fetchAll(db, sql: "SELECT \(StepRow.columns) FROM steps WHERE run_id = ? ORDER BY id", arguments: [id.rawValue])
            run.steps = try steps.map { step in
                step.record(try MeasurementRow.fetchAll(
                    db, sql: "SELECT \(MeasurementRow.columns) FROM measurements WHERE step_id = ? ORDER BY id", arguments: [step.id]).map(\.measurement))
            }
            run.attachments = try Self.attachments(db, id.rawValue, content: false)
            run.answers = try Self.answers(db, id.rawValue)
            return run
        }
    }

    // MARK: - Transactions and errors

    /// At most this many candidates are tried for one reservation (a generator that never ends is a bug, not a hang).
    static let candidateLimit = 1_000_000

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await commits.perform(body)
        } catch {
            throw Self.mapped(error, path: path, busyTimeout: busyTimeout)
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.mapped(error, path: path, busyTimeout: busyTimeout)
        }
    }

    /// GRDB's errors as `RecordsError`s (cancellation and our own errors pass through). A row that does not decode
    /// (a value this version does not know) is a `storage` error.
    static func mapped(_ error: any Error, path: String, busyTimeout: Duration) -> any Error {
        if error is RowDecodingError || error is DecodingError {
            return RecordsError(.storage, "records database \(path) holds a row this version cannot read (\(String(describing: error).prefix { $0 != "\n" }))")
        }
        guard let error = error as? DatabaseError else { return error }
        let detail = error.message ?? "\(error.resultCode)"
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return RecordsError(
                .busy, "records database \(path) is busy: another station held it longer than \(busyTimeout.seconds) s")
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return RecordsError(.notADatabase, "\(path) is not a usable records database (\(detail))")
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH:
            return RecordsError(.cannotOpen, "cannot open records database \(path) (\(detail))")
        default:
            return RecordsError(.storage, "records database \(path): \(detail)")
        }
    }

    // MARK: - Rows

    private static func check(hardwareID: String) throws {
        guard !hardwareID.isEmpty else { throw RecordsError(.invalidArgument, "a unit needs a hardware id") }
    }

    private static func check(value: String, _ kind: IdentityKind) throws {
        guard !value.isEmpty else { throw RecordsError(.invalidArgument, "an empty \(kind.rawValue) cannot be issued") }
    }

    /// Inserts the candidates no one holds (the UNIQUE constraint decides), in order, until `count` are in or the
    /// candidates run out. Returns the new rows and how many candidates were tried. (`INSERT OR IGNORE` ignores any
    /// constraint, not only UNIQUE (kind, value): the others cannot fail here, as the value is checked and the callers
    /// look for the unit's live identity first, in the same transaction.)
    private static func insertFree(
        _ db: Database, _ kind: IdentityKind, count: Int, state: IdentityState, hardwareID: String?, station: String,
        lease: LeaseID?, at now: Date, _ candidates: IdentityCandidates
    ) throws -> (ids: [Int64], tried: Int) {
        var ids: [Int64] = []
        var tried = 0
        while ids.count < count, tried < candidateLimit, let value = candidates(tried) {
            tried += 1
            try check(value: value, kind)
            var row = IdentityRow(
                kind: kind, value: value, state: state, hardwareID: hardwareID, station: station, leaseID: lease?.rawValue, updatedAt: now)
            try row.insert(db, onConflict: .ignore)
            if db.changesCount == 1, let id = row.id { ids.append(id) }
        }
        return (ids, tried)
    }

    static func ensureUnit(_ db: Database, _ hardwareID: String, _ now: Date) throws {
        try UnitRow(hardwareID: hardwareID, firstSeen: now).insert(db, onConflict: .ignore)
    }

    static func activeIdentity(_ db: Database, _ kind: IdentityKind, _ hardwareID: String) throws -> Identity? {
        try identities(db, where: "hardware_id = ? AND kind = ? AND state <> 'voided'", [hardwareID, kind.rawValue]).first
    }

    static func identity(_ db: Database, _ id: Int64) throws -> Identity? {
        try identities(db, where: "id = ?", [id]).first
    }

    static func identities(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Identity] {
        try IdentityRow.fetchAll(db, sql: "SELECT \(IdentityRow.columns) FROM identities WHERE \(condition) ORDER BY id", arguments: arguments).map(\.identity)
    }

    private static func checkOpen(_ db: Database, _ run: RunID) throws {
        guard let row = try Row.fetchOne(db, sql: "SELECT outcome FROM runs WHERE id = ?", arguments: [run.rawValue]) else {
            throw RecordsError(.notFound, "run \(run) does not exist")
        }
        if let outcome = row["outcome"] as String? {
            throw RecordsError(.invalidTransition, "run \(run) has ended (\(outcome)); it takes no more records")
        }
    }

    private static func unit(_ db: Database, _ row: UnitRow) throws -> UnitRecord {
        UnitRecord(
            hardwareID: row.hardwareID, firstSeen: row.firstSeen, identities: try identities(db, where: "hardware_id = ?", [row.hardwareID]),
            runs: try runs(db, of: row.hardwareID), releases: try releases(db, row.hardwareID))
    }

    /// The unit's runs, oldest first, without steps.
    private static func runs(_ db: Database, of hardwareID: String) throws -> [RunRecord] {
        try RunRow.fetchAll(db, sql: "SELECT \(RunRow.columns) FROM runs WHERE hardware_id = ? ORDER BY id", arguments: [hardwareID]).map(\.run)
    }
}

extension Duration {
    /// The duration in seconds.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
