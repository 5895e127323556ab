import Foundation
import GRDB
import Support

/// The records in one SQLite file, through GRDB.
///
/// The file is in WAL mode (a `DatabasePool`): readers never block the writer, and several stations (processes or
/// store instances) may share one file on a local disk; a writer waits up to `busyTimeout` for another's
/// transaction and then fails with `RecordsError.busy`. Every method is one IMMEDIATE transaction, so a killed
/// process leaves no half-written record. Database work runs on GRDB's own dispatch queues, opening and migrating
/// on the blocking executor (`Blocking`): nothing blocks Swift's cooperative pool.
public final class SQLiteRecordStore: RecordStore, StoredValues {
    /// The database file.
    public let path: String
    private let pool: any DatabaseWriter
    private let busyTimeout: Duration

    private init(path: String, pool: any DatabaseWriter, busyTimeout: Duration) {
        self.path = path
        self.pool = pool
        self.busyTimeout = busyTimeout
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
    /// for a file whose schema is older than this version's (a writing command, such as `station run`, upgrades it).
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
            if let held = try Self.activeIdentity(db, kind, hardwareID) { return held }
            let (ids, tried) = try Self.insertFree(
                db, kind, count: 1, state: .reserved, hardwareID: hardwareID, station: station, lease: nil, at: now, candidates)
            guard let id = ids.first else {
                throw RecordsError(
                    .poolExhausted, "no free \(kind.rawValue) for unit \(hardwareID): all \(tried) candidates are issued or voided")
            }
            return try Self.identity(db, id)!
        }
    }

    public func reserveIdentity(_ kind: IdentityKind, for hardwareID: String, fromLease lease: LeaseID) async throws -> Identity {
        try Self.check(hardwareID: hardwareID)
        let now = Date()
        return try await write { db in
            guard let leased = try Row.fetchOne(db, sql: "SELECT station, kind FROM leases WHERE id = ?", arguments: [lease.rawValue])
            else { throw RecordsError(.notFound, "lease \(lease) does not exist") }
            let leaseKind: String = leased["kind"]
            guard leaseKind == kind.rawValue else {
                throw RecordsError(.invalidArgument, "lease \(lease) holds \(leaseKind) identities, not \(kind.rawValue)")
            }
            try Self.ensureUnit(db, hardwareID, now)
            if let held = try Self.activeIdentity(db, kind, hardwareID) { return held }
            guard let next = try Int64.fetchOne(
                db, sql: "SELECT id FROM identities WHERE lease_id = ? AND state = 'leased' ORDER BY id LIMIT 1",
                arguments: [lease.rawValue])
            else {
                let station: String = leased["station"]
                throw RecordsError(.poolExhausted, "lease \(lease) of station \(station) has no free \(kind.rawValue) left")
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
            try db.execute(
                sql: "INSERT INTO leases (station, kind, created_at) VALUES (?, ?, ?)", arguments: [station, kind.rawValue, now])
            let lease = LeaseID(db.lastInsertedRowID)
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
        let hashes = try Self.encodeHashes(start.imageHashes)
        let metadata = try Self.encodeHashes(start.metadata)
        return try await write { db in
            try Self.ensureUnit(db, start.hardwareID, start.startedAt)
            try db.execute(
                sql: "UPDATE runs SET outcome = 'aborted', ended_at = ? WHERE hardware_id = ? AND outcome IS NULL",
                arguments: [start.startedAt, start.hardwareID])
            let rework = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM runs WHERE hardware_id = ? AND outcome IN ('fail', 'error')",
                arguments: [start.hardwareID]) ?? 0
            try db.execute(
                sql: """
                    INSERT INTO runs (hardware_id, station, slot, operator, recipe_hash, tool_version, image_hashes,
                                      started_at, rework_count, work_order, lot, fixture, metadata)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    start.hardwareID, start.station, start.slot, start.operatorName, start.recipeHash, start.toolVersion,
                    hashes, start.startedAt, rework, start.workOrder, start.lot, start.fixture, metadata,
                ])
            return RunID(db.lastInsertedRowID)
        }
    }

    public func recordStep(_ step: StepRecord, in run: RunID) async throws -> StepID {
        guard step.retries >= 0 else { throw RecordsError(.invalidArgument, "step \(step.name): retries cannot be negative") }
        return try await write { db in
            try Self.checkOpen(db, run)
            try db.execute(
                sql: """
                    INSERT INTO steps (run_id, name, started_at, ended_at, outcome, retries, message)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [run.rawValue, step.name, step.startedAt, step.endedAt, step.outcome.rawValue, step.retries, step.message])
            let id = StepID(db.lastInsertedRowID)
            for measurement in step.measurements { try Self.insert(db, measurement, id) }
            return id
        }
    }

    public func recordMeasurement(_ measurement: Measurement, in step: StepID) async throws {
        try await write { db in
            guard let run = try Int64.fetchOne(db, sql: "SELECT run_id FROM steps WHERE id = ?", arguments: [step.rawValue]) else {
                throw RecordsError(.notFound, "step \(step) does not exist")
            }
            try Self.checkOpen(db, RunID(run))
            try Self.insert(db, measurement, step)
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
            try Row.fetchOne(db, sql: "SELECT * FROM attachments WHERE run_id = ? AND name = ?", arguments: [run.rawValue, name])
                .map { Self.attachment($0, content: true) }
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
            let runs = try Row.fetchAll(db, sql: "SELECT * FROM runs WHERE hardware_id = ? ORDER BY id", arguments: [hardwareID]).map(Self.run)
            let failures = Rework.failuresSinceRelease(runs: runs, releases: try Self.releases(db, hardwareID))
            guard failures > 0 else {
                throw RecordsError(.invalidTransition, "unit \(hardwareID) has no failed run since its last release: nothing to release")
            }
            let release = Release(hardwareID: hardwareID, releasedAt: date.toMilliseconds, releasedBy: releasedBy, reason: reason, failures: failures)
            try db.execute(
                sql: "INSERT INTO releases (hardware_id, released_at, released_by, reason, failures) VALUES (?, ?, ?, ?, ?)",
                arguments: [hardwareID, release.releasedAt, releasedBy, reason, failures])
            return release
        }
    }

    public func releases(of hardwareID: String) async throws -> [Release] {
        try await read { db in try Self.releases(db, hardwareID) }
    }

    static func releases(_ db: Database, _ hardwareID: String) throws -> [Release] {
        try Row.fetchAll(db, sql: "SELECT * FROM releases WHERE hardware_id = ? ORDER BY id", arguments: [hardwareID]).map { row in
            Release(hardwareID: row["hardware_id"], releasedAt: row["released_at"], releasedBy: row["released_by"], reason: row["reason"],
                    failures: row["failures"])
        }
    }

    static func insert(_ db: Database, _ a: Attachment, _ run: RunID) throws {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM attachments WHERE run_id = ? AND name = ?", arguments: [run.rawValue, a.name]) == nil else {
            throw RecordsError(.invalidArgument, "run \(run) has an attachment named \(a.name) already")
        }
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM attachments WHERE run_id = ?", arguments: [run.rawValue]) ?? 0
        guard count < Traceability.maxAttachments else {
            throw RecordsError(.invalidArgument, "run \(run) has \(count) attachments; at most \(Traceability.maxAttachments)")
        }
        try db.execute(
            sql: """
                INSERT INTO attachments (run_id, step, name, media_type, size, sha256, content, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [run.rawValue, a.step, a.name, a.mediaType, a.size, a.sha256, a.content ?? Data(), a.createdAt])
    }

    static func attachment(_ row: Row, content: Bool) -> Attachment {
        Attachment(
            name: row["name"], step: row["step"], mediaType: row["media_type"], size: row["size"], sha256: row["sha256"],
            createdAt: row["created_at"], content: content ? (row["content"] as Data?) ?? Data() : nil)
    }

    /// A run's attachments without content (or with it, for an upload), in the order they were recorded.
    static func attachments(_ db: Database, _ run: Int64, content: Bool) throws -> [Attachment] {
        let columns = "name, step, media_type, size, sha256, created_at" + (content ? ", content" : "")
        return try Row.fetchAll(db, sql: "SELECT \(columns) FROM attachments WHERE run_id = ? ORDER BY id", arguments: [run])
            .map { attachment($0, content: content) }
    }

    // MARK: - Operator answers

    public func recordAnswer(_ answer: OperatorAnswer, in run: RunID) async throws {
        try answer.check()
        try await write { db in
            try Self.checkOpen(db, run)
            try Self.insert(db, answer, run)
        }
    }

    public func bindings(ofCode code: String) async throws -> [ScanBinding] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT a.value, r.hardware_id, r.id, a.answered_at FROM answers a JOIN runs r ON r.id = a.run_id
                WHERE a.kind = 'scan' AND a.value = ? ORDER BY a.id
                """, arguments: [code]).map { ScanBinding(code: $0[0], hardwareID: $0[1], run: RunID($0[2]), answeredAt: $0[3]) }
        }
    }

    static func insert(_ db: Database, _ a: OperatorAnswer, _ run: RunID) throws {
        try db.execute(
            sql: """
                INSERT INTO answers (run_id, step, kind, label, value, answered_by, source, answered_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [run.rawValue, a.step, a.kind.rawValue, a.label, a.value, a.answeredBy, a.source, a.answeredAt])
    }

    /// A run's operator answers, in the order they were given.
    static func answers(_ db: Database, _ run: Int64) throws -> [OperatorAnswer] {
        try Row.fetchAll(db, sql: "SELECT * FROM answers WHERE run_id = ? ORDER BY id", arguments: [run]).map { row in
            OperatorAnswer(
                step: row["step"], kind: try decode(OperatorAnswer.Kind.self, row["kind"]), label: row["label"], value: row["value"],
                answeredBy: row["answered_by"], source: row["source"], answeredAt: row["answered_at"])
        }
    }

    // MARK: - Reading

    public func units() async throws -> [UnitRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT hardware_id, first_seen FROM units ORDER BY first_seen, hardware_id")
                .map { try Self.unit(db, $0) }
        }
    }

    public func unit(_ hardwareID: String) async throws -> UnitRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT hardware_id, first_seen FROM units WHERE hardware_id = ?", arguments: [hardwareID])
                .map { try Self.unit(db, $0) }
        }
    }

    public func runs(hardwareID: String?, station: String?) async throws -> [RunRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM runs WHERE (?1 IS NULL OR hardware_id = ?1) AND (?2 IS NULL OR station = ?2) ORDER BY id",
                arguments: [hardwareID, station]
            ).map(Self.run)
        }
    }

    public func latestFinishedRuns(station: String, recipeHash: String, limit: Int) async throws -> [RunRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM runs WHERE station = ? AND recipe_hash = ? AND outcome IN ('pass', 'fail', 'error')
                    ORDER BY started_at DESC, id DESC LIMIT ?
                    """,
                arguments: [station, recipeHash, max(0, limit)]
            ).map(Self.run).reversed()
        }
    }

    public func run(_ id: RunID) async throws -> RunRecord? {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM runs WHERE id = ?", arguments: [id.rawValue]) else { return nil }
            var run = try Self.run(row)
            let steps = try Row.fetchAll(db, sql: "SELECT * FROM steps WHERE run_id = ? ORDER BY id", arguments: [id.rawValue])
            run.steps = try steps.map { step in
                let measurements = try Row.fetchAll(
                    db, sql: "SELECT * FROM measurements WHERE step_id = ? ORDER BY id", arguments: [step["id"] as Int64])
                return StepRecord(
                    name: step["name"], startedAt: step["started_at"], endedAt: step["ended_at"],
                    outcome: try Self.decode(StepOutcome.self, step["outcome"]), retries: step["retries"],
                    message: step["message"], measurements: try measurements.map(Self.measurement))
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
            return try await pool.write(body)
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

    /// GRDB's errors as `RecordsError`s (cancellation and our own errors pass through).
    static func mapped(_ error: any Error, path: String, busyTimeout: Duration) -> any Error {
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
    /// candidates run out. Returns the new rows and how many candidates were tried.
    private static func insertFree(
        _ db: Database, _ kind: IdentityKind, count: Int, state: IdentityState, hardwareID: String?, station: String,
        lease: LeaseID?, at now: Date, _ candidates: IdentityCandidates
    ) throws -> (ids: [Int64], tried: Int) {
        var ids: [Int64] = []
        var tried = 0
        while ids.count < count, tried < candidateLimit, let value = candidates(tried) {
            tried += 1
            try check(value: value, kind)
            try db.execute(
                sql: """
                    INSERT INTO identities (kind, value, state, hardware_id, station, lease_id, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kind, value) DO NOTHING
                    """,
                arguments: [kind.rawValue, value, state.rawValue, hardwareID, station, lease?.rawValue, now])
            if db.changesCount == 1 { ids.append(db.lastInsertedRowID) }
        }
        return (ids, tried)
    }

    static func ensureUnit(_ db: Database, _ hardwareID: String, _ now: Date) throws {
        try db.execute(
            sql: "INSERT INTO units (hardware_id, first_seen) VALUES (?, ?) ON CONFLICT (hardware_id) DO NOTHING",
            arguments: [hardwareID, now])
    }

    static func activeIdentity(_ db: Database, _ kind: IdentityKind, _ hardwareID: String) throws -> Identity? {
        try identities(db, where: "hardware_id = ? AND kind = ? AND state <> 'voided'", [hardwareID, kind.rawValue]).first
    }

    static func identity(_ db: Database, _ id: Int64) throws -> Identity? {
        try identities(db, where: "id = ?", [id]).first
    }

    static func identities(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Identity] {
        try Row.fetchAll(db, sql: "SELECT * FROM identities WHERE \(condition) ORDER BY id", arguments: arguments).map { row in
            Identity(
                id: IdentityID(row["id"]), kind: try decode(IdentityKind.self, row["kind"]),
                value: row["value"], state: try decode(IdentityState.self, row["state"]), hardwareID: row["hardware_id"],
                station: row["station"], lease: (row["lease_id"] as Int64?).map(LeaseID.init), updatedAt: row["updated_at"])
        }
    }

    private static func checkOpen(_ db: Database, _ run: RunID) throws {
        guard let row = try Row.fetchOne(db, sql: "SELECT outcome FROM runs WHERE id = ?", arguments: [run.rawValue]) else {
            throw RecordsError(.notFound, "run \(run) does not exist")
        }
        if let outcome = row["outcome"] as String? {
            throw RecordsError(.invalidTransition, "run \(run) has ended (\(outcome)); it takes no more records")
        }
    }

    private static func insert(_ db: Database, _ m: Measurement, _ step: StepID) throws {
        try db.execute(
            sql: """
                INSERT INTO measurements (step_id, name, value, unit, low, high, marginal_low, marginal_high, outcome)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [step.rawValue, m.name, m.value, m.unit, m.low, m.high, m.marginalLow, m.marginalHigh, m.outcome.rawValue])
    }

    private static func unit(_ db: Database, _ row: Row) throws -> UnitRecord {
        let hardwareID: String = row["hardware_id"]
        return UnitRecord(
            hardwareID: hardwareID, firstSeen: row["first_seen"],
            identities: try identities(db, where: "hardware_id = ?", [hardwareID]),
            runs: try Row.fetchAll(db, sql: "SELECT * FROM runs WHERE hardware_id = ? ORDER BY id", arguments: [hardwareID])
                .map(run),
            releases: try releases(db, hardwareID))
    }

    private static func run(_ row: Row) throws -> RunRecord {
        let hashes = try JSONDecoder().decode([String: String].self, from: Data((row["image_hashes"] as String).utf8))
        let metadata = try JSONDecoder().decode([String: String].self, from: Data(((row["metadata"] as String?) ?? "{}").utf8))
        return RunRecord(
            id: RunID(row["id"]),
            start: RunStart(
                hardwareID: row["hardware_id"], station: row["station"], slot: row["slot"], operatorName: row["operator"],
                recipeHash: row["recipe_hash"], toolVersion: row["tool_version"], imageHashes: hashes,
                startedAt: row["started_at"], workOrder: row["work_order"], lot: row["lot"], fixture: row["fixture"],
                metadata: metadata),
            endedAt: row["ended_at"], outcome: try (row["outcome"] as String?).map { try decode(RunOutcome.self, $0) },
            reworkCount: row["rework_count"], steps: [])
    }

    private static func measurement(_ row: Row) throws -> Measurement {
        Measurement(
            name: row["name"], value: row["value"], unit: row["unit"], low: row["low"], high: row["high"],
            marginalLow: row["marginal_low"], marginalHigh: row["marginal_high"],
            outcome: try decode(MeasurementOutcome.self, row["outcome"]))
    }
}

extension Duration {
    /// The duration in seconds.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
