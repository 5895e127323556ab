import Foundation
import GRDB

/// A records database a line of stations shares (PostgreSQL): what a station's outbox uploads to it.
public protocol LineRecordServer: RecordStore {
    /// Imports a finished run a station recorded (with its steps and measurements, its traceability and its
    /// attachments, whose content it must carry) once: a second import of the same
    /// `origin` changes nothing and returns the first one's id. The rework count is the server's (earlier failed or
    /// erred runs of the unit at any station).
    func importRun(_ run: RunRecord, origin: String) async throws -> RunID

    /// Brings the identity `kind`/`value` to `state` for `hardwareID`: an identity leased to `station` is taken by
    /// the unit, one the unit holds moves forward (never back), an unused one is voided, one the server does not
    /// know yet (a value made from another identity, such as a serial from its address) is issued to the unit.
    /// Anything else (another unit or station holds it, it is voided) throws `RecordsError.conflict`; voiding an
    /// unknown value `notFound`.
    func applyIdentity(_ kind: IdentityKind, value: String, hardwareID: String?, state: IdentityState, station: String) async throws

    /// Returns the values of `station`'s lease that no unit took to the pool (they become free candidates again) and
    /// says how many. Values that reached a unit, or were voided, stay as they are.
    func releaseUnused(lease: LeaseID, station: String) async throws -> Int

    /// The releases of each unit of `hardwareIDs`, oldest first, in one query (a unit without any is absent): what
    /// `releases(of:)` returns for each.
    func releases(ofUnits hardwareIDs: [String]) async throws -> [String: [Release]]
}

/// What a station's outbox still holds for the line's server.
public struct OutboxBacklog: Sendable, Equatable, Codable {
    /// Finished runs not uploaded yet.
    public var runs: Int
    /// Identity changes not uploaded yet.
    public var identities: Int
    /// Identity changes the server refused (another unit or station holds the value): kept, reported, not retried.
    public var conflicts: Int

    public var isEmpty: Bool { runs == 0 && identities == 0 }
}

/// The outbox side of a SQLite records file (schema v2): which records the line's server holds.
extension SQLiteRecordStore {
    /// Copies a lease the server granted: a local lease that knows the server's id, with the same values, leased.
    func mirror(lease: Lease) async throws -> LeaseID {
        try await write { db in
            let local = try LeaseRow(station: lease.station, kind: lease.kind, createdAt: lease.createdAt, serverLeaseID: lease.id.rawValue)
                .insertedID(db)
            for identity in lease.identities where identity.state == .leased {
                var row = IdentityRow(
                    kind: identity.kind, value: identity.value, state: .leased, hardwareID: nil, station: identity.station, leaseID: local,
                    updatedAt: identity.updatedAt, uploadedState: IdentityState.leased.rawValue)
                try row.insert(db, onConflict: .ignore)
            }
            return LeaseID(local)
        }
    }

    /// Copies an identity the server says a unit holds (it was given at another station); returns the local copy.
    func mirror(held identity: Identity) async throws -> Identity {
        guard let hardwareID = identity.hardwareID else {
            throw RecordsError(.invalidArgument, "\(identity.kind.rawValue) \(identity.value) is held by no unit")
        }
        return try await write { db in
            try Self.ensureUnit(db, hardwareID, identity.updatedAt)
            if let held = try Self.activeIdentity(db, identity.kind, hardwareID) { return held }
            var row = IdentityRow(
                kind: identity.kind, value: identity.value, state: identity.state, hardwareID: hardwareID, station: identity.station,
                leaseID: nil, updatedAt: identity.updatedAt, uploadedState: identity.state.rawValue)
            try row.insert(db, onConflict: .ignore)
            guard let copy = try Self.activeIdentity(db, identity.kind, hardwareID) else {
                throw RecordsError(.conflict, "\(identity.kind.rawValue) \(identity.value) of unit \(hardwareID) is held otherwise in this station's outbox")
            }
            return copy
        }
    }

    /// The unit's live identity of `kind` in this file, if any.
    func liveIdentity(_ kind: IdentityKind, of hardwareID: String) async throws -> Identity? {
        try await read { db in try Self.activeIdentity(db, kind, hardwareID) }
    }

    /// The oldest lease of `kind` with a free identity, and how many leased identities of `kind` are free in all.
    func freeLease(_ kind: IdentityKind) async throws -> (lease: LeaseID?, free: Int) {
        try await read { db in
            let lease = try Int64.fetchOne(
                db, sql: "SELECT lease_id FROM identities WHERE kind = ? AND state = 'leased' AND lease_id IS NOT NULL ORDER BY id LIMIT 1",
                arguments: [kind.rawValue])
            let free = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM identities WHERE kind = ? AND state = 'leased'", arguments: [kind.rawValue]) ?? 0
            return (lease.map(LeaseID.init), free)
        }
    }

    /// The identities of a lease, in order.
    func identities(ofLease lease: LeaseID) async throws -> [Identity] {
        try await read { db in try Self.identities(db, where: "lease_id = ?", [lease.rawValue]) }
    }

    /// The leases with identities no unit took.
    func leasesWithUnused() async throws -> [LeaseID] {
        try await read { db in
            try Int64.fetchAll(
                db, sql: "SELECT DISTINCT lease_id FROM identities WHERE state = 'leased' AND lease_id IS NOT NULL ORDER BY lease_id"
            ).map(LeaseID.init)
        }
    }

    /// The server's id of a local lease (nil for a lease made here).
    func serverLease(of lease: LeaseID) async throws -> LeaseID? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT server_lease_id FROM leases WHERE id = ?", arguments: [lease.rawValue]).map(LeaseID.init)
        }
    }

    /// Forgets the lease's values no unit took (the server has them back).
    func dropUnused(lease: LeaseID) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM identities WHERE lease_id = ? AND state = 'leased'", arguments: [lease.rawValue])
        }
    }

    /// Identities whose state the server does not hold yet (refused ones left out), oldest change first.
    func identitiesToUpload() async throws -> [Identity] {
        try await read { db in
            try Self.identities(
                db, where: "uploaded_state IS NOT state AND (uploaded_state IS NULL OR uploaded_state NOT LIKE 'conflict%')", [])
        }
    }

    /// The server holds `identity` in `state` (or refused it: `conflict`).
    func markUploaded(_ identity: IdentityID, state: IdentityState, conflict: Bool = false) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE identities SET uploaded_state = ? WHERE id = ?",
                arguments: [conflict ? "conflict:\(state.rawValue)" : state.rawValue, identity.rawValue])
        }
    }

    /// Finished runs the server does not hold yet, oldest first.
    func runsToUpload() async throws -> [RunID] {
        try await read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM runs WHERE outcome IS NOT NULL AND uploaded_at IS NULL ORDER BY id").map(RunID.init)
        }
    }

    /// Runs of the unit the server does not hold yet (open ones included), oldest first, without steps.
    func runsNotUploaded(of hardwareID: String) async throws -> [RunRecord] {
        let ids = try await read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM runs WHERE hardware_id = ? AND uploaded_at IS NULL ORDER BY id", arguments: [hardwareID])
        }
        let all = try await runs(hardwareID: hardwareID, station: nil)
        return all.filter { ids.contains($0.id.rawValue) }
    }

    /// A run's attachments with their content (an upload carries them whole).
    func attachmentsForUpload(of run: RunID) async throws -> [Attachment] {
        try await read { db in try Self.attachments(db, run.rawValue, content: true) }
    }

    /// The server holds the run.
    func markUploaded(run: RunID, at date: Date) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE runs SET uploaded_at = ? WHERE id = ?", arguments: [date, run.rawValue])
        }
    }

    /// What the outbox still holds.
    func backlog() async throws -> OutboxBacklog {
        try await read { db in
            OutboxBacklog(
                runs: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runs WHERE outcome IS NOT NULL AND uploaded_at IS NULL") ?? 0,
                identities: try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM identities WHERE uploaded_state IS NOT state AND (uploaded_state IS NULL OR uploaded_state NOT LIKE 'conflict%')") ?? 0,
                conflicts: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM identities WHERE uploaded_state LIKE 'conflict%'") ?? 0)
        }
    }
}
