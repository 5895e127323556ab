import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Support

/// The records in a PostgreSQL database, for a line of stations (`--db postgres://USER[:PASSWORD]@HOST[:PORT]/DB`).
///
/// The same tables and rules as `SQLiteRecordStore` (docs/records.md), with the uniqueness of identities enforced
/// by the server across every station. Each method is one transaction at READ COMMITTED: an identity is claimed
/// with `INSERT ... ON CONFLICT DO NOTHING` (a second station inserting the same value waits for the first and then
/// finds it taken), state changes lock their row (`FOR UPDATE`), and a transaction that loses a race on the
/// one-identity-per-unit index is run again. Every operation is bounded by `timeout`: a server that is down or
/// unreachable is a `RecordsError.unreachable` naming it, never a hang. Nothing blocks Swift's cooperative pool
/// (postgres-nio runs on its own event loops).
public final class PostgresRecordStore: LineRecordServer, StoredValues {
    /// `host:port/database`, for messages.
    public let name: String
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger
    private let timeout: Duration

    /// The schema versions this store knows, in order: the records schema (Schema.swift) in PostgreSQL's dialect.
    static let migrations = Schema.migrations(.postgres)

    private init(name: String, client: PostgresClient, logger: Logger, timeout: Duration) {
        self.name = name
        self.client = client
        self.logger = logger
        self.timeout = timeout
        runner = Task { await client.run() }
    }

    deinit { runner.cancel() }

    /// Connects to the database `url` names and migrates its schema as needed.
    /// - Parameter timeout: the bound of each operation, connecting included.
    public static func open(url: String, timeout: Duration = .seconds(10)) async throws -> PostgresRecordStore {
        let location = try PostgresLocation(url)
        let logger = {
            var logger = Logger(label: "tuneup.records.postgres")
            logger.logLevel = .critical
            return logger
        }()
        // A first connection of its own migrates the schema and says at once why a server refuses (no such
        // database, authentication): the pool would only retry in the background.
        let configuration = try location.connection(timeout: timeout)
        try await bounded(timeout, name: location.name) {
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 1, logger: logger).get()
            } catch {
                throw mapped(error, name: location.name)
            }
            do {
                try await migrate(connection, name: location.name, logger: logger)
            } catch {
                try? await connection.close().get()
                throw mapped(error, name: location.name)
            }
            try? await connection.close().get()
        }
        let client = PostgresClient(configuration: location.client(timeout: timeout), backgroundLogger: logger)
        return PostgresRecordStore(name: location.name, client: client, logger: logger, timeout: timeout)
    }

    /// Stops the connection pool.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    private static func migrate(_ connection: PostgresConnection, name: String, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { c in
            // One migrating station at a time; the others wait here, then find the work done.
            try await c.query("SELECT pg_advisory_xact_lock(7411983)", logger: logger)
            try await c.query("CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)", logger: logger)
            var applied: Set<String> = []
            for try await version in try await c.query("SELECT version FROM schema_migrations", logger: logger).decode(String.self) {
                applied.insert(version)
            }
            let known = Set(Self.migrations.map(\.version))
            if !applied.subtracting(known).isEmpty {
                throw RecordsError(.newerSchema, "records database \(name) was written by a newer Tuneup (its schema has migrations this version does not know)")
            }
            for (version, sql) in Self.migrations where !applied.contains(version) {
                // One statement per query: the extended protocol takes no more.
                for statement in sql.components(separatedBy: ";\n") where !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                    try await c.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await c.query("INSERT INTO schema_migrations (version, applied_at) VALUES (\(version), \(Date()))", logger: logger)
            }
        }
    }

    // MARK: - Identities

    public func reserveIdentity(
        _ kind: IdentityKind, for hardwareID: String, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Identity {
        try Self.check(hardwareID: hardwareID)
        let now = Date()
        return try await transaction { c in
            try await self.ensureUnit(c, hardwareID, now)
            if let held = try await self.activeIdentity(c, kind, hardwareID) { return held }
            let (ids, tried) = try await self.insertFree(
                c, kind, count: 1, state: .reserved, hardwareID: hardwareID, station: station, lease: nil, at: now, candidates)
            guard let id = ids.first else {
                throw RecordsError(.poolExhausted, "no free \(kind.rawValue) for unit \(hardwareID): all \(tried) candidates are issued or voided")
            }
            return try await self.identity(c, id)!
        }
    }

    public func reserveIdentity(_ kind: IdentityKind, for hardwareID: String, fromLease lease: LeaseID) async throws -> Identity {
        try Self.check(hardwareID: hardwareID)
        let now = Date()
        return try await transaction { c in
            guard let leased = try await self.rows(c, LeaseRow.self, "SELECT * FROM leases WHERE id = \(lease.rawValue)").first else {
                throw RecordsError(.notFound, "lease \(lease) does not exist")
            }
            guard leased.kind == kind else {
                throw RecordsError(.invalidArgument, "lease \(lease) holds \(leased.kind.rawValue) identities, not \(kind.rawValue)")
            }
            try await self.ensureUnit(c, hardwareID, now)
            if let held = try await self.activeIdentity(c, kind, hardwareID) { return held }
            let next = try await c.query("""
                SELECT id FROM identities WHERE lease_id = \(lease.rawValue) AND state = 'leased' ORDER BY id LIMIT 1 FOR UPDATE
                """, logger: self.logger).collect().first?.decode(Int64.self)
            guard let next else {
                throw RecordsError(.poolExhausted, "lease \(lease) of station \(leased.station) has no free \(kind.rawValue) left")
            }
            try await c.query("""
                UPDATE identities SET state = 'reserved', hardware_id = \(hardwareID), updated_at = \(now) WHERE id = \(next)
                """, logger: self.logger)
            return try await self.identity(c, next)!
        }
    }

    public func leaseBlock(
        _ kind: IdentityKind, count: Int, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Lease {
        guard count > 0 else { throw RecordsError(.invalidArgument, "a lease needs at least one identity, not \(count)") }
        let now = Date()
        return try await transaction { c in
            let id = try await c.query("""
                INSERT INTO leases (station, kind, created_at) VALUES (\(station), \(kind.rawValue), \(now)) RETURNING id
                """, logger: self.logger).collect().first!.decode(Int64.self)
            let lease = LeaseID(id)
            let (ids, tried) = try await self.insertFree(
                c, kind, count: count, state: .leased, hardwareID: nil, station: station, lease: lease, at: now, candidates)
            guard !ids.isEmpty else {
                throw RecordsError(.poolExhausted, "no free \(kind.rawValue) to lease to \(station): all \(tried) candidates are issued or voided")
            }
            let identities = try await self.identities(c, "SELECT * FROM identities WHERE lease_id = \(id) ORDER BY id")
            return Lease(id: lease, station: station, kind: kind, createdAt: now, identities: identities)
        }
    }

    public func voidUnused(lease: LeaseID) async throws -> [Identity] {
        let now = Date()
        return try await transaction { c in
            guard try await !c.query("SELECT 1 FROM leases WHERE id = \(lease.rawValue)", logger: self.logger).collect().isEmpty else {
                throw RecordsError(.notFound, "lease \(lease) does not exist")
            }
            let unused = try await self.identities(c, "SELECT * FROM identities WHERE lease_id = \(lease.rawValue) AND state = 'leased' ORDER BY id FOR UPDATE")
            try await c.query("""
                UPDATE identities SET state = 'voided', updated_at = \(now) WHERE lease_id = \(lease.rawValue) AND state = 'leased'
                """, logger: self.logger)
            return unused.map { var voided = $0; voided.state = .voided; voided.updatedAt = now; return voided }
        }
    }

    public func releaseUnused(lease: LeaseID, station: String) async throws -> Int {
        try await transaction { c in
            let rows = try await c.query("""
                DELETE FROM identities WHERE lease_id = \(lease.rawValue) AND station = \(station) AND state = 'leased' RETURNING id
                """, logger: self.logger).collect()
            return rows.count
        }
    }

    public func identities(of hardwareID: String) async throws -> [Identity] {
        try await transaction { c in try await self.identities(c, "SELECT * FROM identities WHERE hardware_id = \(hardwareID) ORDER BY id") }
    }

    public func transition(_ id: IdentityID, to target: IdentityState) async throws -> Identity {
        let now = Date()
        return try await transaction { c in
            guard let current = try await self.identities(c, "SELECT * FROM identities WHERE id = \(id.rawValue) FOR UPDATE").first else {
                throw RecordsError(.notFound, "identity \(id) does not exist")
            }
            guard try current.changes(to: target) else { return current }
            try await c.query("UPDATE identities SET state = \(target.rawValue), updated_at = \(now) WHERE id = \(id.rawValue)", logger: self.logger)
            return try await self.identity(c, id.rawValue)!
        }
    }

    // MARK: - Runs

    public func startRun(_ start: RunStart) async throws -> RunID {
        try Self.check(hardwareID: start.hardwareID)
        try Traceability.check(start)
        let hashes = try Self.encodeHashes(start.imageHashes)
        let metadata = try Self.encodeHashes(start.metadata)
        return try await transaction { c in
            try await self.ensureUnit(c, start.hardwareID, start.startedAt)
            // The unit's row serialises two stations starting runs of one unit.
            try await c.query("SELECT 1 FROM units WHERE hardware_id = \(start.hardwareID) FOR UPDATE", logger: self.logger)
            try await c.query("""
                UPDATE runs SET outcome = 'aborted', ended_at = \(start.startedAt) WHERE hardware_id = \(start.hardwareID) AND outcome IS NULL
                """, logger: self.logger)
            let rework = try await c.query("""
                SELECT COUNT(*) FROM runs WHERE hardware_id = \(start.hardwareID) AND outcome IN ('fail', 'error')
                """, logger: self.logger).collect().first!.decode(Int64.self)
            let id = try await c.query("""
                INSERT INTO runs (hardware_id, station, slot, operator, recipe_hash, tool_version, image_hashes, started_at, rework_count,
                                  work_order, lot, fixture, metadata)
                VALUES (\(start.hardwareID), \(start.station), \(start.slot), \(start.operatorName), \(start.recipeHash),
                        \(start.toolVersion), \(hashes), \(start.startedAt), \(rework), \(start.workOrder), \(start.lot),
                        \(start.fixture), \(metadata))
                RETURNING id
                """, logger: self.logger).collect().first!.decode(Int64.self)
            return RunID(id)
        }
    }

    public func recordStep(_ step: StepRecord, in run: RunID) async throws -> StepID {
        guard step.retries >= 0 else { throw RecordsError(.invalidArgument, "step \(step.name): retries cannot be negative") }
        return try await transaction { c in
            try await self.checkOpen(c, run)
            let id = try await c.query("""
                INSERT INTO steps (run_id, name, started_at, ended_at, outcome, retries, message)
                VALUES (\(run.rawValue), \(step.name), \(step.startedAt), \(step.endedAt), \(step.outcome.rawValue), \(step.retries), \(step.message))
                RETURNING id
                """, logger: self.logger).collect().first!.decode(Int64.self)
            for measurement in step.measurements { try await self.insert(c, measurement, StepID(id)) }
            return StepID(id)
        }
    }

    public func recordMeasurement(_ measurement: RecordModel.Measurement, in step: StepID) async throws {
        try await transaction { c in
            guard let run = try await c.query("SELECT run_id FROM steps WHERE id = \(step.rawValue)", logger: self.logger)
                .collect().first?.decode(Int64.self) else {
                throw RecordsError(.notFound, "step \(step) does not exist")
            }
            try await self.checkOpen(c, RunID(run))
            try await self.insert(c, measurement, step)
        }
    }

    public func finishRun(_ run: RunID, outcome: RunOutcome, at date: Date) async throws {
        try await transaction { c in
            try await self.checkOpen(c, run)
            try await c.query("""
                UPDATE runs SET outcome = \(outcome.rawValue), ended_at = \(date) WHERE id = \(run.rawValue) AND outcome IS NULL
                """, logger: self.logger)
        }
    }

    public func abortOpenRuns(station: String, at date: Date) async throws -> [RunID] {
        try await transaction { c in
            var ids: [RunID] = []
            for try await id in try await c.query("""
                UPDATE runs SET outcome = 'aborted', ended_at = \(date) WHERE station = \(station) AND outcome IS NULL RETURNING id
                """, logger: self.logger).decode(Int64.self) {
                ids.append(RunID(id))
            }
            return ids.sorted()
        }
    }

    // MARK: - A station's outbox

    public func importRun(_ run: RunRecord, origin: String) async throws -> RunID {
        guard let outcome = run.outcome, let ended = run.endedAt else {
            throw RecordsError(.invalidArgument, "run \(run.id) of \(run.start.hardwareID) is still open: only a finished run is imported")
        }
        let start = run.start
        try Self.check(hardwareID: start.hardwareID)
        try Traceability.check(start)
        for attachment in run.attachments { try Traceability.check(attachment) }
        for answer in run.answers { try answer.check() }
        let hashes = try Self.encodeHashes(start.imageHashes)
        let metadata = try Self.encodeHashes(start.metadata)
        return try await transaction { c in
            if let existing = try await c.query("SELECT id FROM runs WHERE origin = \(origin)", logger: self.logger).collect().first {
                return RunID(try existing.decode(Int64.self))
            }
            try await c.query("""
                INSERT INTO units (hardware_id, first_seen) VALUES (\(start.hardwareID), \(start.startedAt))
                ON CONFLICT (hardware_id) DO UPDATE SET first_seen = LEAST(units.first_seen, EXCLUDED.first_seen)
                """, logger: self.logger)
            try await c.query("SELECT 1 FROM units WHERE hardware_id = \(start.hardwareID) FOR UPDATE", logger: self.logger)
            let rework = try await c.query("""
                SELECT COUNT(*) FROM runs WHERE hardware_id = \(start.hardwareID) AND outcome IN ('fail', 'error')
                                            AND started_at < \(start.startedAt)
                """, logger: self.logger).collect().first!.decode(Int64.self)
            let id = try await c.query("""
                INSERT INTO runs (hardware_id, station, slot, operator, recipe_hash, tool_version, image_hashes, started_at,
                                  ended_at, outcome, rework_count, origin, work_order, lot, fixture, metadata)
                VALUES (\(start.hardwareID), \(start.station), \(start.slot), \(start.operatorName), \(start.recipeHash),
                        \(start.toolVersion), \(hashes), \(start.startedAt), \(ended), \(outcome.rawValue), \(rework), \(origin),
                        \(start.workOrder), \(start.lot), \(start.fixture), \(metadata))
                RETURNING id
                """, logger: self.logger).collect().first!.decode(Int64.self)
            for step in run.steps {
                let stepID = try await c.query("""
                    INSERT INTO steps (run_id, name, started_at, ended_at, outcome, retries, message)
                    VALUES (\(id), \(step.name), \(step.startedAt), \(step.endedAt), \(step.outcome.rawValue), \(step.retries), \(step.message))
                    RETURNING id
                    """, logger: self.logger).collect().first!.decode(Int64.self)
                for measurement in step.measurements { try await self.insert(c, measurement, StepID(stepID)) }
            }
            for attachment in run.attachments { try await self.insert(c, attachment, RunID(id)) }
            for answer in run.answers { try await self.insert(c, answer, RunID(id)) }
            return RunID(id)
        }
    }

    public func applyIdentity(_ kind: IdentityKind, value: String, hardwareID: String?, state: IdentityState, station: String) async throws {
        if let hardwareID { try Self.check(hardwareID: hardwareID) }
        let now = Date()
        try await transaction { c in
            func conflict(_ why: String) -> RecordsError {
                RecordsError(.conflict, "\(kind.rawValue) \(value) cannot become \(state.rawValue)\(hardwareID.map { " for unit \($0)" } ?? ""): \(why)")
            }
            guard let current = try await self.identities(c, """
                SELECT * FROM identities WHERE kind = \(kind.rawValue) AND value = \(value) FOR UPDATE
                """).first else {
                // A value made from another identity (a serial from its unit's address) reaches the server here.
                guard let hardwareID, state != .voided, state != .leased else {
                    throw RecordsError(.notFound, "\(kind.rawValue) \(value) is not in the records database \(self.name)")
                }
                try await self.ensureUnit(c, hardwareID, now)
                if let held = try await self.activeIdentity(c, kind, hardwareID) { throw conflict("the unit holds \(held.value) already") }
                // A concurrent insert of the value fails the transaction (unique violation), which is tried again.
                try await c.query("""
                    INSERT INTO identities (kind, value, state, hardware_id, station, updated_at)
                    VALUES (\(kind.rawValue), \(value), \(state.rawValue), \(hardwareID), \(station), \(now))
                    """, logger: self.logger)
                return
            }
            if current.state == state, current.hardwareID == hardwareID { return }
            let rank: [IdentityState: Int] = [.leased: 0, .reserved: 1, .written: 2, .committed: 3]
            switch (current.state, state) {
            case (.voided, _):
                throw conflict("it is voided, and a voided value is never issued again")
            case (_, .voided):
                guard current.state != .committed else { throw conflict("the unit \(current.hardwareID ?? "") holds it for good") }
                guard current.hardwareID == nil || current.hardwareID == hardwareID || hardwareID == nil else {
                    throw conflict("unit \(current.hardwareID!) holds it")
                }
                try await c.query("UPDATE identities SET state = 'voided', updated_at = \(now) WHERE id = \(current.id.rawValue)", logger: self.logger)
            case (.leased, _):
                guard current.station == station else { throw conflict("it is leased to station \(current.station)") }
                guard let hardwareID else { throw conflict("no unit is named") }
                try await self.ensureUnit(c, hardwareID, now)
                if let held = try await self.activeIdentity(c, kind, hardwareID), held.id != current.id {
                    throw conflict("the unit holds \(held.value) already")
                }
                try await c.query("""
                    UPDATE identities SET state = \(state.rawValue), hardware_id = \(hardwareID), updated_at = \(now) WHERE id = \(current.id.rawValue)
                    """, logger: self.logger)
            default:
                guard current.hardwareID == hardwareID else { throw conflict("unit \(current.hardwareID ?? "none") holds it") }
                if rank[state, default: 0] > rank[current.state, default: 0] {
                    try await c.query("""
                        UPDATE identities SET state = \(state.rawValue), updated_at = \(now) WHERE id = \(current.id.rawValue)
                        """, logger: self.logger)
                }
            }
        }
    }

    // MARK: - Traceability and rework

    public func recordAttachment(_ attachment: Attachment, in run: RunID) async throws {
        try Traceability.check(attachment)
        try await transaction { c in
            try await self.checkOpen(c, run)
            try await self.insert(c, attachment, run)
        }
    }

    public func attachment(run: RunID, name: String) async throws -> Attachment? {
        try await transaction { c in
            try await self.rows(c, AttachmentRow.self, "SELECT * FROM attachments WHERE run_id = \(run.rawValue) AND name = \(name)")
                .first?.attachment
        }
    }

    public func release(_ hardwareID: String, by releasedBy: String, reason: String, at date: Date) async throws -> Release {
        try Self.check(hardwareID: hardwareID)
        for (what, value) in [("the releaser's name", releasedBy), ("the reason", reason)] {
            if let problem = Traceability.problem(value: value, what: what) { throw RecordsError(.invalidArgument, problem) }
        }
        return try await transaction { c in
            // The unit's row serialises a release with a station starting a run of it.
            guard try await !c.query("SELECT 1 FROM units WHERE hardware_id = \(hardwareID) FOR UPDATE", logger: self.logger).collect().isEmpty else {
                throw RecordsError(.notFound, "unit \(hardwareID) has never been seen")
            }
            let runs = try await self.rows(c, RunRow.self, "SELECT * FROM runs WHERE hardware_id = \(hardwareID) ORDER BY id").map(\.run)
            let failures = Rework.failuresSinceRelease(runs: runs, releases: try await self.releases(c, hardwareID))
            guard failures > 0 else {
                throw RecordsError(.invalidTransition, "unit \(hardwareID) has no failed run since its last release: nothing to release")
            }
            let release = Release(hardwareID: hardwareID, releasedAt: date.toMilliseconds, releasedBy: releasedBy, reason: reason, failures: failures)
            try await c.query("""
                INSERT INTO releases (hardware_id, released_at, released_by, reason, failures)
                VALUES (\(hardwareID), \(release.releasedAt), \(releasedBy), \(reason), \(Int64(failures)))
                """, logger: self.logger)
            return release
        }
    }

    public func releases(of hardwareID: String) async throws -> [Release] {
        try await transaction { c in try await self.releases(c, hardwareID) }
    }

    public func releases(ofUnits hardwareIDs: [String]) async throws -> [String: [Release]] {
        try await transaction { c in
            let releases = try await self.rows(c, ReleaseRow.self, "SELECT * FROM releases WHERE hardware_id = ANY(\(hardwareIDs)) ORDER BY id")
                .map(\.release)
            return Dictionary(grouping: releases, by: \.hardwareID)
        }
    }

    private func releases(_ c: PostgresConnection, _ hardwareID: String) async throws -> [Release] {
        try await rows(c, ReleaseRow.self, "SELECT * FROM releases WHERE hardware_id = \(hardwareID) ORDER BY id").map(\.release)
    }

    // MARK: - Operator answers

    public func recordAnswer(_ answer: OperatorAnswer, in run: RunID) async throws {
        try answer.check()
        try await transaction { c in
            let rows = try await c.query("SELECT outcome FROM runs WHERE id = \(run.rawValue)", logger: self.logger).collect()
            guard let row = rows.first else { throw RecordsError(.notFound, "run \(run) does not exist") }
            if let outcome = try row.decode(String?.self) {
                throw RecordsError(.invalidTransition, "run \(run) has ended (\(outcome)); it takes no more records")
            }
            try await self.insert(c, answer, run)
        }
    }

    public func bindings(ofCode code: String) async throws -> [ScanBinding] {
        try await transaction { c in
            try await self.rows(c, BindingRow.self, """
                SELECT a.value, r.hardware_id, a.run_id, a.answered_at FROM answers a JOIN runs r ON r.id = a.run_id
                WHERE a.kind = 'scan' AND a.value = \(code) ORDER BY a.id
                """).map(\.binding)
        }
    }

    private func insert(_ c: PostgresConnection, _ a: OperatorAnswer, _ run: RunID) async throws {
        try await c.query("""
            INSERT INTO answers (run_id, step, kind, label, value, answered_by, source, answered_at)
            VALUES (\(run.rawValue), \(a.step), \(a.kind.rawValue), \(a.label), \(a.value), \(a.answeredBy), \(a.source), \(a.answeredAt))
            """, logger: logger)
    }

    private func insert(_ c: PostgresConnection, _ a: Attachment, _ run: RunID) async throws {
        guard try await c.query("SELECT 1 FROM attachments WHERE run_id = \(run.rawValue) AND name = \(a.name)", logger: logger).collect().isEmpty else {
            throw RecordsError(.invalidArgument, "run \(run) has an attachment named \(a.name) already")
        }
        let count = try await c.query("SELECT COUNT(*) FROM attachments WHERE run_id = \(run.rawValue)", logger: logger)
            .collect().first!.decode(Int64.self)
        guard count < Traceability.maxAttachments else {
            throw RecordsError(.invalidArgument, "run \(run) has \(count) attachments; at most \(Traceability.maxAttachments)")
        }
        try await c.query("""
            INSERT INTO attachments (run_id, step, name, media_type, size, sha256, content, created_at)
            VALUES (\(run.rawValue), \(a.step), \(a.name), \(a.mediaType), \(Int64(a.size)), \(a.sha256), \(a.content ?? Data()), \(a.createdAt))
            """, logger: logger)
    }

    // MARK: - Reading

    public func units() async throws -> [UnitRecord] {
        try await transaction { c in
            var units: [UnitRecord] = []
            for row in try await self.rows(c, UnitRow.self, "SELECT hardware_id, first_seen FROM units ORDER BY first_seen, hardware_id") {
                units.append(try await self.unit(c, row))
            }
            return units
        }
    }

    public func unit(_ hardwareID: String) async throws -> UnitRecord? {
        try await transaction { c in
            guard let row = try await self.rows(c, UnitRow.self, "SELECT hardware_id, first_seen FROM units WHERE hardware_id = \(hardwareID)")
                .first else { return nil }
            return try await self.unit(c, row)
        }
    }

    public func runs(hardwareID: String?, station: String?) async throws -> [RunRecord] {
        try await transaction { c in
            try await self.rows(c, RunRow.self, """
                SELECT * FROM runs WHERE (\(hardwareID)::TEXT IS NULL OR hardware_id = \(hardwareID))
                                     AND (\(station)::TEXT IS NULL OR station = \(station)) ORDER BY id
                """).map(\.run)
        }
    }

    public func latestFinishedRuns(station: String, recipeHash: String, limit: Int) async throws -> [RunRecord] {
        try await transaction { c in
            try await self.rows(c, RunRow.self, """
                SELECT * FROM runs WHERE station = \(station) AND recipe_hash = \(recipeHash) AND outcome IN ('pass', 'fail', 'error')
                ORDER BY started_at DESC, id DESC LIMIT \(max(0, limit))
                """).map(\.run).reversed()
        }
    }

    public func run(_ id: RunID) async throws -> RunRecord? {
        try await transaction { c in
            guard var run = try await self.rows(c, RunRow.self, "SELECT * FROM runs WHERE id = \(id.rawValue)").first?.run else { return nil }
            let steps = try await self.rows(c, StepRow.self, "SELECT * FROM steps WHERE run_id = \(id.rawValue) ORDER BY id")
            let measurements = try await self.rows(c, MeasurementRow.self, """
                SELECT m.* FROM measurements m JOIN steps s ON s.id = m.step_id WHERE s.run_id = \(id.rawValue) ORDER BY m.id
                """)
            run.steps = steps.map { step in step.record(measurements.filter { $0.stepID == step.id }.map(\.measurement)) }
            run.attachments = try await self.rows(c, AttachmentRow.self, """
                SELECT run_id, name, step, media_type, size, sha256, created_at FROM attachments WHERE run_id = \(id.rawValue) ORDER BY id
                """).map(\.attachment)
            run.answers = try await self.rows(c, AnswerRow.self, "SELECT * FROM answers WHERE run_id = \(id.rawValue) ORDER BY id").map(\.answer)
            return run
        }
    }

    // MARK: - Transactions and errors

    /// Runs `body` in a transaction within `timeout`; runs it again (up to five times) when it lost a race to
    /// another station on a unique index or was chosen as a deadlock victim.
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await Self.bounded(timeout, name: name) {
                    try await self.client.withTransaction(logger: self.logger) { connection in try await body(connection) }
                }
            } catch {
                let cause = Self.unwrapped(error)
                if attempt < 5, let psql = cause as? PSQLError, ["23505", "40001", "40P01"].contains(psql.serverInfo?[.sqlState] ?? "") {
                    continue
                }
                throw Self.mapped(cause, name: name)
            }
        }
    }

    /// `body` within `timeout`, else `RecordsError.unreachable`.
    private static func bounded<T: Sendable>(_ timeout: Duration, name: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withDeadline(timeout, late: {
            RecordsError(.unreachable, "records database \(name) did not answer within \(Self.seconds(timeout)) s (is the server running and reachable?)")
        }, body)
    }

    /// The error a transaction's closure (or its BEGIN or COMMIT) threw, out of postgres-nio's wrapper.
    private static func unwrapped(_ error: any Error) -> any Error {
        guard let wrapper = error as? PostgresTransactionError else { return error }
        return wrapper.closureError ?? wrapper.beginError ?? wrapper.commitError ?? wrapper.rollbackError ?? error
    }

    /// postgres-nio's errors as `RecordsError`s (our own errors and cancellation pass through).
    static func mapped(_ error: any Error, name: String) -> any Error {
        let error = unwrapped(error)
        guard let psql = error as? PSQLError else { return error }
        if let info = psql.serverInfo {
            let state = info[.sqlState] ?? ""
            let message = info[.message] ?? "server error \(state)"
            if state.hasPrefix("28") || state == "3D000" {
                return RecordsError(.cannotOpen, "cannot open records database \(name): \(message)")
            }
            if state.hasPrefix("57P") || state.hasPrefix("08") {
                return RecordsError(.unreachable, "records database \(name) is unreachable: \(message)")
            }
            return RecordsError(.storage, "records database \(name): \(message) (SQLSTATE \(state))")
        }
        if psql.code == .sslUnsupported {
            return RecordsError(
                .cannotOpen,
                "cannot open records database \(name): the server does not offer TLS, which sslmode=require asks for (use sslmode=prefer or disable on the line's own network)")
        }
        let cause = psql.underlying.map(describe) ?? "\(psql.code)"
        return RecordsError(.unreachable, "records database \(name) is unreachable (\(cause))")
    }

    /// Why a connection failed, in words: the system's for a refused or unreachable address, not the library's types.
    static func describe(_ error: any Error) -> String {
        if let failure = error as? NIOConnectionError {
            if let first = failure.connectionErrors.first { return describe(first.error) }
            if failure.dnsAError != nil || failure.dnsAAAAError != nil { return "cannot resolve \(failure.host)" }
            return "cannot connect to \(failure.host):\(failure.port)"
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return "no answer to the connection" }
        let text = String(describing: error)
        return text.split(separator: "\n").first.map(String.init) ?? text
    }

    static func seconds(_ d: Duration) -> String {
        String(format: "%g", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }

    // MARK: - Rows

    private static func check(hardwareID: String) throws {
        guard !hardwareID.isEmpty else { throw RecordsError(.invalidArgument, "a unit needs a hardware id") }
    }

    private func insertFree(
        _ c: PostgresConnection, _ kind: IdentityKind, count: Int, state: IdentityState, hardwareID: String?, station: String,
        lease: LeaseID?, at now: Date, _ candidates: IdentityCandidates
    ) async throws -> (ids: [Int64], tried: Int) {
        var ids: [Int64] = []
        var tried = 0
        while ids.count < count, tried < SQLiteRecordStore.candidateLimit, let value = candidates(tried) {
            tried += 1
            guard !value.isEmpty else { throw RecordsError(.invalidArgument, "an empty \(kind.rawValue) cannot be issued") }
            let inserted = try await c.query("""
                INSERT INTO identities (kind, value, state, hardware_id, station, lease_id, updated_at)
                VALUES (\(kind.rawValue), \(value), \(state.rawValue), \(hardwareID), \(station), \(lease?.rawValue), \(now))
                ON CONFLICT (kind, value) DO NOTHING RETURNING id
                """, logger: logger).collect()
            if let id = try inserted.first?.decode(Int64.self) { ids.append(id) }
        }
        return (ids, tried)
    }

    private func ensureUnit(_ c: PostgresConnection, _ hardwareID: String, _ now: Date) async throws {
        try await c.query("""
            INSERT INTO units (hardware_id, first_seen) VALUES (\(hardwareID), \(now)) ON CONFLICT (hardware_id) DO NOTHING
            """, logger: logger)
    }

    private func activeIdentity(_ c: PostgresConnection, _ kind: IdentityKind, _ hardwareID: String) async throws -> Identity? {
        try await identities(c, """
            SELECT * FROM identities WHERE hardware_id = \(hardwareID) AND kind = \(kind.rawValue) AND state <> 'voided' ORDER BY id
            """).first
    }

    private func identity(_ c: PostgresConnection, _ id: Int64) async throws -> Identity? {
        try await identities(c, "SELECT * FROM identities WHERE id = \(id)").first
    }

    private func identities(_ c: PostgresConnection, _ query: PostgresQuery) async throws -> [Identity] {
        try await rows(c, IdentityRow.self, query).map(\.identity)
    }

    /// What `query` selects, as rows of `type` (Rows.swift, by Codable).
    private func rows<R: RowColumns>(_ c: PostgresConnection, _ type: R.Type, _ query: PostgresQuery) async throws -> [R] {
        try await c.query(query, logger: logger).collect().map { try $0.record(R.self) }
    }

    private func checkOpen(_ c: PostgresConnection, _ run: RunID) async throws {
        guard let row = try await c.query("SELECT outcome FROM runs WHERE id = \(run.rawValue) FOR UPDATE", logger: logger).collect().first else {
            throw RecordsError(.notFound, "run \(run) does not exist")
        }
        if let outcome = try row.decode(String?.self) {
            throw RecordsError(.invalidTransition, "run \(run) has ended (\(outcome)); it takes no more records")
        }
    }

    private func insert(_ c: PostgresConnection, _ m: RecordModel.Measurement, _ step: StepID) async throws {
        // A value is required, as in the SQLite store (where NaN is NULL, refused by NOT NULL): PostgreSQL would keep NaN.
        guard !m.value.isNaN else {
            throw RecordsError(.storage, "records database \(name): measurement \(m.name) has no value (NaN)")
        }
        try await c.query("""
            INSERT INTO measurements (step_id, name, value, unit, low, high, marginal_low, marginal_high, outcome)
            VALUES (\(step.rawValue), \(m.name), \(m.value), \(m.unit), \(m.low), \(m.high), \(m.marginalLow), \(m.marginalHigh), \(m.outcome.rawValue))
            """, logger: logger)
    }

    private func unit(_ c: PostgresConnection, _ row: UnitRow) async throws -> UnitRecord {
        UnitRecord(
            hardwareID: row.hardwareID, firstSeen: row.firstSeen,
            identities: try await identities(c, "SELECT * FROM identities WHERE hardware_id = \(row.hardwareID) ORDER BY id"),
            runs: try await rows(c, RunRow.self, "SELECT * FROM runs WHERE hardware_id = \(row.hardwareID) ORDER BY id").map(\.run),
            releases: try await releases(c, row.hardwareID))
    }
}

extension PostgresRecordStore {
    /// One transaction for the line's status and the stations' heartbeats (LineStatus.swift).
    func lineTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws -> T {
        try await transaction { c in try await body(c, self.logger) }
    }
}
