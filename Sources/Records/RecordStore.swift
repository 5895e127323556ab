import Foundation
// The record values are the store's API: every user of the records sees them through `import Records`.
@_exported import RecordModel

/// Offers candidate values for an identity: called with 0, 1, 2, ... until it returns nil (the pool is exhausted).
/// The store takes the first candidate no one holds; the recipe's identity rules make the values.
public typealias IdentityCandidates = @Sendable (_ attempt: Int) -> String?

/// The unit records of factory provisioning: units, their runs with steps and measurements, and the identities
/// issued to them. Every method is one transaction: a process killed at any point leaves each record either fully
/// written or absent.
///
/// Times are kept to the millisecond. `SQLiteRecordStore` is the one implementation today; a PostgreSQL store
/// conforms to the same protocol.
public protocol RecordStore: Sendable {
    // MARK: Identities

    /// The identity of `kind` for the unit `hardwareID`: the one it already has (in any state but voided), or a new
    /// reservation of the first candidate no one holds. A unit never gets a second identity of one kind while the
    /// first is not voided. Throws `poolExhausted` when no candidate is free.
    func reserveIdentity(
        _ kind: IdentityKind, for hardwareID: String, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Identity

    /// The identity of `kind` for the unit: the one it already has, or a reservation of exactly `value`: an identity
    /// made from another one the unit holds (a serial from its address's place in the recipe's block), which needs no
    /// lease because the value it is made from is the unit's alone. Throws `poolExhausted` when someone else holds
    /// `value` (or it is voided).
    func reserveIdentity(_ kind: IdentityKind, exactly value: String, for hardwareID: String, station: String) async throws -> Identity

    /// The identity of `kind` for the unit from `candidates` (as `reserveIdentity(_:for:station:candidates:)`) and the
    /// identity of `pairedKind` made from it (`paired`, called with the first once it is the unit's; as
    /// `reserveIdentity(_:exactly:for:station:)`): a unit's serial from its address's place in the block. A store that
    /// can makes both in one transaction (one round trip, and a failure of the second leaves the first unreserved);
    /// the default makes them one after the other.
    func reserveIdentityPair(
        _ kind: IdentityKind, _ pairedKind: IdentityKind, for hardwareID: String, station: String,
        candidates: @escaping IdentityCandidates, paired: @escaping @Sendable (Identity) throws -> String
    ) async throws -> (Identity, Identity)

    /// The identity of `kind` for the unit: the one it already has, or the next free identity of the station's lease.
    /// Throws `poolExhausted` when the lease has none left.
    func reserveIdentity(_ kind: IdentityKind, for hardwareID: String, fromLease lease: LeaseID) async throws -> Identity

    /// Leases a block of up to `count` free candidate values to `station` (fewer when the candidates run out, but
    /// at least one, or `poolExhausted`).
    func leaseBlock(
        _ kind: IdentityKind, count: Int, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Lease

    /// Moves an identity on by the one rule of `Identity.changes(to:)`: reserved → written → committed, reserved or
    /// written → voided; again to the state it is in is a no-op. `markWritten`, `commit` and `void` name the steps.
    func transition(_ identity: IdentityID, to state: IdentityState) async throws -> Identity
    /// Voids the identities of the lease that no unit took, and returns them.
    func voidUnused(lease: LeaseID) async throws -> [Identity]
    /// The identities of a unit, voided ones included.
    func identities(of hardwareID: String) async throws -> [Identity]

    // MARK: Runs

    /// Records the start of a run (and the unit, on its first run). An earlier run of the same unit that is still
    /// open (its station was killed or the unit left) is closed as aborted first.
    func startRun(_ start: RunStart) async throws -> RunID
    /// Records one step with its measurements, atomically.
    func recordStep(_ step: StepRecord, in run: RunID) async throws -> StepID
    /// Adds a measurement to a recorded step.
    func recordMeasurement(_ measurement: RecordModel.Measurement, in step: StepID) async throws
    /// Closes an open run with its outcome. Throws `invalidTransition` when it was closed already.
    func finishRun(_ run: RunID, outcome: RunOutcome, at: Date) async throws
    /// Closes every open run of `station` as aborted (a station calls it when it starts: its previous process was
    /// killed). Returns the runs it closed.
    func abortOpenRuns(station: String, at: Date) async throws -> [RunID]

    // MARK: Traceability and rework (schema v3)

    /// Stores a file a step attached to an open run (`Traceability.check` rules; a second attachment of one name in
    /// a run is `invalidArgument`).
    func recordAttachment(_ attachment: Attachment, in run: RunID) async throws
    /// One attachment of a run with its content, or nil.
    func attachment(run: RunID, name: String) async throws -> Attachment?
    /// Lets a quarantined unit back onto the line: records who released it, when and why, with the failed runs it
    /// released. Throws `notFound` for a unit never seen, `invalidTransition` when it has no failed run since its
    /// last release (nothing to release).
    func release(_ hardwareID: String, by releasedBy: String, reason: String, at date: Date) async throws -> Release
    /// A unit's releases, oldest first.
    func releases(of hardwareID: String) async throws -> [Release]

    // MARK: Operator answers (schema v5)

    /// Records an operator's answer (a scanned code, a prompt's answer) with an open run.
    func recordAnswer(_ answer: OperatorAnswer, in run: RunID) async throws
    /// The units a scanned code is bound to (the `scan` answers of that value), oldest first.
    func bindings(ofCode code: String) async throws -> [ScanBinding]

    // MARK: Reading

    /// Every unit, oldest first, with identities and runs (without steps).
    func units() async throws -> [UnitRecord]
    /// One unit, or nil when it has never been seen.
    func unit(_ hardwareID: String) async throws -> UnitRecord?
    /// The runs, oldest first, optionally of one unit or one station, without steps.
    func runs(hardwareID: String?, station: String?) async throws -> [RunRecord]
    /// One run with its steps and their measurements, and its attachments (without content), or nil.
    func run(_ id: RunID) async throws -> RunRecord?
    /// The last `limit` finished runs (pass, fail or error) of `station` under the recipe `recipeHash`, oldest first,
    /// without steps: the start of a station's process control window (`processWindow`), read with a limit so that a
    /// long history costs its start nothing.
    func latestFinishedRuns(station: String, recipeHash: String, limit: Int) async throws -> [RunRecord]
}

extension RecordStore {
    /// Reserves the first free value of `values` (see `reserveIdentity(_:for:station:candidates:)`).
    public func reserveIdentity(
        _ kind: IdentityKind, for hardwareID: String, station: String, values: [String]
    ) async throws -> Identity {
        try await reserveIdentity(kind, for: hardwareID, station: station) { $0 < values.count ? values[$0] : nil }
    }

    /// Reserves exactly `value` (see the requirement): the one candidate.
    public func reserveIdentity(_ kind: IdentityKind, exactly value: String, for hardwareID: String, station: String) async throws -> Identity {
        try await reserveIdentity(kind, for: hardwareID, station: station) { $0 == 0 ? value : nil }
    }

    /// One after the other (see the requirement).
    public func reserveIdentityPair(
        _ kind: IdentityKind, _ pairedKind: IdentityKind, for hardwareID: String, station: String,
        candidates: @escaping IdentityCandidates, paired: @escaping @Sendable (Identity) throws -> String
    ) async throws -> (Identity, Identity) {
        let first = try await reserveIdentity(kind, for: hardwareID, station: station, candidates: candidates)
        let second = try await reserveIdentity(pairedKind, exactly: try paired(first), for: hardwareID, station: station)
        return (first, second)
    }

    /// Every run, oldest first.
    public func runs() async throws -> [RunRecord] { try await runs(hardwareID: nil, station: nil) }
}

extension RecordStore {
    /// The identity was written to the unit and read back (reserved → written; again on written is a no-op).
    public func markWritten(_ identity: IdentityID) async throws -> Identity { try await transition(identity, to: .written) }
    /// The unit holds it for good (written → committed; again on committed is a no-op).
    public func commit(_ identity: IdentityID) async throws -> Identity { try await transition(identity, to: .committed) }
    /// Takes a reserved or written identity out of use for good: its value is never issued again.
    public func void(_ identity: IdentityID) async throws -> Identity { try await transition(identity, to: .voided) }
}
