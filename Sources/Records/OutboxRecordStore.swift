import Foundation
import Support
import Synchronization

/// The records of one station on a line: everything is written first to a local SQLite file (the outbox) and
/// uploaded to the line's server in the background, so the station keeps provisioning while the server is briefly
/// unreachable.
///
/// - Identities come from blocks the server leases to the station (`leaseSize` values of each kind, topped up when
///   half are used): a unit takes the next leased value locally, and the server learns it with the upload. A unit
///   the server already knows (it was given its identity at another station) gets that identity back.
/// - Runs, steps and measurements are recorded locally as they happen; a run is uploaded once it has ended, in one
///   transaction, exactly once (its origin, `station/hardware-id/start-ms`, is unique on the server).
/// - A serial is made from the unit's leased address (`reserveIdentity(_:exactly:for:station:)`): it needs no lease.
/// - `finish(within:)` returns the leased values no unit took to the line's pool (they never reached a unit) and
///   uploads what is left; what cannot be returned or uploaded stays in the outbox file for the next start of the
///   station, which uses its leases first.
///
/// Reads (`units`, `run`, ...) answer from the outbox: the station's own view. `runs(hardwareID:)` adds the
/// server's runs of the unit from other stations when it answers (by their server id negated, which `run(_:)` reads
/// back from the server), so a unit reworked at another station is known as such; `unit`/`units` carry the line's
/// releases, which only the server holds.
public final class OutboxRecordStore: RecordStore {
    public let server: any LineRecordServer
    public let outbox: SQLiteRecordStore
    /// The station whose records these are (the leases' holder).
    public let station: String
    /// How many values of each kind a lease holds.
    public let leaseSize: Int
    /// How long the station's own path (identity look-ups) waits for the server before going on without it.
    public let serverWait: Duration

    private let shared: Shared
    private let uploader: Task<Void, Never>
    private let ticker: Task<Void, Never>

    /// - Parameters:
    ///   - retryInterval: how often the uploader tries again while the server does not answer.
    public init(
        server: any LineRecordServer, outbox: SQLiteRecordStore, station: String, leaseSize: Int = 32,
        serverWait: Duration = .seconds(2), retryInterval: Duration = .seconds(1)
    ) {
        self.server = server
        self.outbox = outbox
        self.station = station
        self.leaseSize = max(1, leaseSize)
        self.serverWait = serverWait
        let (kicks, kick) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let shared = Shared(server: server, outbox: outbox, station: station, leaseSize: max(1, leaseSize), wait: serverWait,
                            retryInterval: retryInterval, kick: kick)
        self.shared = shared
        uploader = Task {
            for await _ in kicks { await shared.upload() }
        }
        ticker = Task {
            while !Task.isCancelled {
                kick.yield()
                try? await Task.sleep(for: retryInterval)
            }
        }
    }

    deinit {
        ticker.cancel()
        uploader.cancel()
        shared.kick.finish()
    }

    /// What the outbox still holds for the server.
    public func backlog() async throws -> OutboxBacklog { try await outbox.backlog() }

    /// How many records (runs and identity changes) reached the server through this store.
    public var uploaded: Int { shared.state.withLock { $0.uploaded } }

    /// Why the last upload failed, while the server does not answer (nil when it does).
    public var serverProblem: String? { shared.state.withLock { $0.problem } }

    /// Stops the station's use of its leases and uploads what is left: unused leased values are returned to the
    /// server's pool, then uploads run until the outbox is empty or `within` has passed. Returns what is left.
    public func finish(within: Duration) async -> OutboxBacklog {
        // No lease from now on; a refill under way ends first, so the block it brings is voided below too.
        let refills = shared.state.withLock { s in
            s.finished = true
            return Array(s.refills.values)
        }
        for refill in refills { _ = try? await refill.value }
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline, !Task.isCancelled {
            // Every round: a lease the server granted after a bounded wait gave up arrives late, and is returned then.
            // Values no unit took go back to the line's pool (they never reached a unit); while the server does not
            // answer they stay with the station, whose next start uses them first.
            for lease in (try? await outbox.leasesWithUnused()) ?? [] {
                _ = try? await shared.bounded {
                    guard let serverLease = try await self.outbox.serverLease(of: lease) else { return }
                    _ = try await self.server.releaseUnused(lease: serverLease, station: self.station)
                    try await self.outbox.dropUnused(lease: lease)
                }
            }
            await shared.upload()
            guard let left = try? await outbox.backlog(), !left.isEmpty else { break }
            try? await Task.sleep(for: .milliseconds(200))
        }
        ticker.cancel()
        uploader.cancel()
        shared.kick.finish()
        return (try? await outbox.backlog()) ?? OutboxBacklog(runs: 0, identities: 0, conflicts: 0)
    }

    // MARK: Identities

    public func reserveIdentity(
        _ kind: IdentityKind, for hardwareID: String, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Identity {
        shared.state.withLock { $0.candidates[kind] = candidates }
        if let held = try await held(kind, by: hardwareID) { return held }
        for attempt in 0..<4 {
            let (lease, free) = try await outbox.freeLease(kind)
            if let lease {
                do {
                    let identity = try await outbox.reserveIdentity(kind, for: hardwareID, fromLease: lease)
                    shared.kick.yield()  // the server learns it; a lease half used is topped up
                    _ = free
                    return identity
                } catch let error as RecordsError where error.code == .poolExhausted {
                    continue  // another slot took the lease's last value meanwhile
                }
            }
            do {
                try await shared.refill(kind)
            } catch let error as RecordsError where error.code == .poolExhausted && attempt == 0 {
                // A refill already under way (the uploader's top-up) leased with the candidates asked for before,
                // which may all be taken where these are not: lease once more, with these.
                continue
            }
        }
        throw RecordsError(.poolExhausted, "the station's leases of \(kind.rawValue) ran dry while it reserved one")
    }

    /// A value made from another identity the unit holds (its serial from its leased address) is reserved in the
    /// outbox without a lease; the server takes it with the upload (`applyIdentity` issues a value it does not know
    /// yet), and refuses it as a conflict should another unit hold it.
    public func reserveIdentity(_ kind: IdentityKind, exactly value: String, for hardwareID: String, station: String) async throws -> Identity {
        if let held = try await held(kind, by: hardwareID) { return held }
        defer { shared.kick.yield() }
        return try await outbox.reserveIdentity(kind, exactly: value, for: hardwareID, station: station)
    }

    /// The unit's live identity of `kind`: the outbox's, else the server's (when it answers in time: the station does
    /// not depend on it), copied into the outbox.
    private func held(_ kind: IdentityKind, by hardwareID: String) async throws -> Identity? {
        if let held = try await outbox.liveIdentity(kind, of: hardwareID) { return held }
        guard shared.serverUsable else { return nil }
        do {
            let known = try await shared.bounded { try await self.server.identities(of: hardwareID) }
            if let held = known.first(where: { $0.kind == kind && $0.state != .voided }) {
                return try await outbox.mirror(held: held)
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // Whatever went wrong there, the station goes on from its own records and leases.
            shared.down(error)
        }
        return nil
    }

    public func reserveIdentity(_ kind: IdentityKind, for hardwareID: String, fromLease lease: LeaseID) async throws -> Identity {
        defer { shared.kick.yield() }
        return try await outbox.reserveIdentity(kind, for: hardwareID, fromLease: lease)
    }

    public func leaseBlock(
        _ kind: IdentityKind, count: Int, station: String, candidates: @escaping IdentityCandidates
    ) async throws -> Lease {
        let granted = try await server.leaseBlock(kind, count: count, station: station, candidates: candidates)
        let local = try await outbox.mirror(lease: granted)
        var lease = granted
        lease.id = local
        lease.identities = try await outbox.identities(ofLease: local)
        return lease
    }

    public func transition(_ identity: IdentityID, to state: IdentityState) async throws -> Identity {
        try await changed { try await self.outbox.transition(identity, to: state) }
    }
    public func voidUnused(lease: LeaseID) async throws -> [Identity] { try await changed { try await self.outbox.voidUnused(lease: lease) } }
    public func identities(of hardwareID: String) async throws -> [Identity] { try await outbox.identities(of: hardwareID) }

    // MARK: Runs

    public func startRun(_ start: RunStart) async throws -> RunID { try await outbox.startRun(start) }
    public func recordStep(_ step: StepRecord, in run: RunID) async throws -> StepID { try await outbox.recordStep(step, in: run) }
    public func recordMeasurement(_ measurement: RecordModel.Measurement, in step: StepID) async throws {
        try await outbox.recordMeasurement(measurement, in: step)
    }
    public func finishRun(_ run: RunID, outcome: RunOutcome, at date: Date) async throws {
        try await changed { try await self.outbox.finishRun(run, outcome: outcome, at: date) }
    }
    public func abortOpenRuns(station: String, at date: Date) async throws -> [RunID] {
        try await changed { try await self.outbox.abortOpenRuns(station: station, at: date) }
    }

    // MARK: Traceability and rework

    /// Kept in the outbox and uploaded with its run (content and all).
    public func recordAttachment(_ attachment: Attachment, in run: RunID) async throws {
        try await outbox.recordAttachment(attachment, in: run)
    }
    public func attachment(run: RunID, name: String) async throws -> Attachment? { try await outbox.attachment(run: run, name: name) }

    /// A release is the line's: it is written to the server (within the station's wait), never only to the outbox.
    /// The server counts the failures it releases from the runs it holds, so this station's finished runs of the unit
    /// are uploaded first (a unit the station has just failed is released with those failures, not refused as unknown).
    public func release(_ hardwareID: String, by releasedBy: String, reason: String, at date: Date) async throws -> Release {
        try await shared.uploadRuns(of: hardwareID)
        return try await shared.bounded { try await self.server.release(hardwareID, by: releasedBy, reason: reason, at: date) }
    }

    /// The server's releases of the unit (where `tuneup records release` writes them) when it answers in time, else
    /// the outbox's (none, unless the file is also used as a database of its own).
    public func releases(of hardwareID: String) async throws -> [Release] {
        guard shared.serverUsable else { return try await outbox.releases(of: hardwareID) }
        do {
            return try await shared.bounded { try await self.server.releases(of: hardwareID) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            shared.down(error)
            return try await outbox.releases(of: hardwareID)
        }
    }

    // MARK: Operator answers

    /// Kept in the outbox and uploaded with its run.
    public func recordAnswer(_ answer: OperatorAnswer, in run: RunID) async throws {
        try await outbox.recordAnswer(answer, in: run)
    }

    /// The line's bindings of the code (the server's, when it answers in time) and the outbox's not uploaded yet.
    public func bindings(ofCode code: String) async throws -> [ScanBinding] {
        let local = try await outbox.bindings(ofCode: code)
        guard shared.serverUsable else { return local }
        do {
            let known = try await shared.bounded { try await self.server.bindings(ofCode: code) }
            let units = Set(known.map(\.hardwareID))
            return known + local.filter { !units.contains($0.hardwareID) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            shared.down(error)
            return local
        }
    }

    // MARK: Reading

    /// The station's units, each with the line's releases (which only the server holds) when it answers: those of
    /// all units in one query, not one per unit (an export of many units through a station's outbox); else the
    /// outbox's, as `releases(of:)`.
    public func units() async throws -> [UnitRecord] {
        var units = try await outbox.units()
        guard !units.isEmpty, shared.serverUsable else { return units }
        let hardwareIDs = units.map(\.hardwareID)
        do {
            let releases = try await shared.bounded { try await self.server.releases(ofUnits: hardwareIDs) }
            for index in units.indices { units[index].releases = releases[units[index].hardwareID] ?? [] }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            shared.down(error)
        }
        return units
    }

    /// The unit as this station knows it, with the line's releases (which only the server holds) when it answers.
    public func unit(_ hardwareID: String) async throws -> UnitRecord? {
        guard var unit = try await outbox.unit(hardwareID) else { return nil }
        unit.releases = try await releases(of: hardwareID)
        return unit
    }

    /// The station's own runs (the outbox holds every run of this station).
    public func latestFinishedRuns(station: String, recipeHash: String, limit: Int) async throws -> [RunRecord] {
        try await outbox.latestFinishedRuns(station: station, recipeHash: recipeHash, limit: limit)
    }

    /// This station's run by the id it listed; a negative id is another station's run, read from the server
    /// (`runs(hardwareID:)` lists those by their server id negated, so that the two kinds of ids never meet).
    public func run(_ id: RunID) async throws -> RunRecord? {
        guard id.rawValue < 0 else { return try await outbox.run(id) }
        let serverID = RunID(-id.rawValue)
        guard var run = try await shared.bounded({ try await self.server.run(serverID) }) else { return nil }
        run.id = id
        return run
    }

    /// The station's own runs (by their outbox ids); for one unit of any station, also the runs the server holds from
    /// other stations, by their server id negated (`run(_:)` reads both kinds back).
    public func runs(hardwareID: String?, station: String?) async throws -> [RunRecord] {
        guard let hardwareID, station == nil, shared.serverUsable else {
            return try await outbox.runs(hardwareID: hardwareID, station: station)
        }
        do {
            // The outbox first: a run uploaded meanwhile is then in both lists and kept once (the outbox's, by its
            // origin), never in neither.
            let local = try await outbox.runs(hardwareID: hardwareID, station: nil)
            let known = try await shared.bounded { try await self.server.runs(hardwareID: hardwareID, station: nil) }
            let origins = Set(local.map(Self.origin))
            let others = known.filter { !origins.contains(Self.origin($0)) }.map { run in
                var run = run
                run.id = RunID(-run.id.rawValue)
                return run
            }
            return (local + others).sorted { ($0.start.startedAt, $0.id.rawValue) < ($1.start.startedAt, $1.id.rawValue) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // The server's view is a bonus: the station's own records answer when it cannot.
            shared.down(error)
            return try await outbox.runs(hardwareID: hardwareID, station: nil)
        }
    }

    private func changed<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        defer { shared.kick.yield() }
        return try await body()
    }

    /// The origin of a run on the server: the station, the unit and the start to the millisecond.
    static func origin(_ run: RunRecord) -> String {
        "\(run.start.station)/\(run.start.hardwareID)/\(Int64((run.start.startedAt.timeIntervalSince1970 * 1000).rounded()))"
    }

    // MARK: - The uploader's side

    /// What the station's path and the uploader share.
    final class Shared: Sendable {
        let server: any LineRecordServer
        let outbox: SQLiteRecordStore
        let station: String
        let leaseSize: Int
        let wait: Duration
        let retryInterval: Duration
        let kick: AsyncStream<Void>.Continuation
        let state = Mutex(State())
        /// One upload at a time (the uploader's, `finish`'s, or a release's runs).
        private let uploading = AsyncLock()

        struct State {
            var down = false
            var problem: String?
            var candidates: [IdentityKind: IdentityCandidates] = [:]
            var refills: [IdentityKind: Task<Void, any Error>] = [:]
            var uploaded = 0
            /// The station finished: no more leases.
            var finished = false
        }

        init(server: any LineRecordServer, outbox: SQLiteRecordStore, station: String, leaseSize: Int, wait: Duration,
             retryInterval: Duration, kick: AsyncStream<Void>.Continuation) {
            (self.server, self.outbox, self.station, self.leaseSize, self.wait, self.retryInterval, self.kick) =
                (server, outbox, station, leaseSize, wait, retryInterval, kick)
        }

        /// False from the server's first failure until the uploader (which tries every `retryInterval`) reaches it
        /// again: the station's path does not wait for a server that is down.
        var serverUsable: Bool { state.withLock { !$0.down } }

        func down(_ error: any Error) {
            let message = (error as? RecordsError)?.message ?? String(describing: error)
            state.withLock { s in
                s.down = true
                s.problem = message
            }
        }

        /// `body` within the station's wait for the server, else `RecordsError.unreachable`.
        func bounded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
            let wait = self.wait
            // The abandoned work runs on: an upload or a lease whose answer comes late is still kept.
            return try await withDeadline(wait, cancelLate: false, late: {
                RecordsError(.unreachable, "the line's records server did not answer within \(wait)")
            }, body)
        }

        /// Leases another block of `kind` from the server (one refill of a kind at a time; a caller that finds one
        /// under way waits for it).
        func refill(_ kind: IdentityKind) async throws {
            let task = state.withLock { s -> Task<Void, any Error>? in
                if let running = s.refills[kind] { return running }
                guard !s.finished else { return nil }
                guard let candidates = s.candidates[kind] else { return nil }
                let task = Task { [self] in
                    defer { _ = state.withLock { $0.refills.removeValue(forKey: kind) } }
                    do {
                        // Leased and copied in one piece of work: a lease granted after the wait ended is kept.
                        _ = try await bounded {
                            let lease = try await self.server.leaseBlock(kind, count: self.leaseSize, station: self.station, candidates: candidates)
                            return try await self.outbox.mirror(lease: lease)
                        }
                    } catch let error as RecordsError where error.code == .unreachable {
                        down(error)
                        throw RecordsError(
                            .unreachable,
                            "the line's records server is unreachable and this station's lease of \(kind.rawValue) is used up (\(error.message))")
                    }
                }
                s.refills[kind] = task
                return task
            }
            guard let task else {
                throw RecordsError(.invalidArgument, "no \(kind.rawValue) has been asked for yet: nothing to lease")
            }
            try await task.value
        }

        /// Uploads one finished run (its attachments with it, whole) and marks it uploaded.
        private func uploadRun(_ id: RunID) async throws {
            guard var found = try await outbox.run(id) else { return }
            found.attachments = try await outbox.attachmentsForUpload(of: id)
            let run = found
            try await bounded {
                _ = try await self.server.importRun(run, origin: OutboxRecordStore.origin(run))
                try await self.outbox.markUploaded(run: id, at: Date())
            }
            state.withLock { $0.uploaded += 1 }
        }

        /// Uploads the unit's finished runs the server does not hold yet, now (between the uploader's passes). Throws
        /// `RecordsError.unreachable` when the server does not answer within the station's wait.
        func uploadRuns(of hardwareID: String) async throws {
            try await uploading.withLock {
                for run in try await outbox.runsNotUploaded(of: hardwareID) where run.outcome != nil {
                    try await uploadRun(run.id)
                }
            }
        }

        /// Uploads identity changes, then finished runs, then tops up leases that are half used; stops at the first
        /// failure to reach the server (and tries again after `retryInterval`).
        func upload() async {
            do { try await uploading.lock() } catch { return }
            defer { uploading.unlock() }
            do {
                if !serverUsable {
                    // A probe (one indexed read), so that the server counts as back only once it answers.
                    _ = try await bounded { try await self.server.run(RunID(0)) }
                }
                for identity in try await outbox.identitiesToUpload() {
                    do {
                        try await bounded {
                            try await self.server.applyIdentity(
                                identity.kind, value: identity.value, hardwareID: identity.hardwareID, state: identity.state,
                                station: self.station)
                            try await self.outbox.markUploaded(identity.id, state: identity.state)
                        }
                    } catch let error as RecordsError where error.code == .conflict || error.code == .notFound {
                        try await outbox.markUploaded(identity.id, state: identity.state, conflict: true)
                    }
                    state.withLock { $0.uploaded += 1 }
                }
                for id in try await outbox.runsToUpload() {
                    try await uploadRun(id)
                }
                let kinds = state.withLock { $0.finished ? [] : Array($0.candidates.keys) }
                for kind in kinds where try await outbox.freeLease(kind).free * 2 < leaseSize {
                    try await refill(kind)
                }
                state.withLock { s in
                    s.problem = nil
                    s.down = false
                }
            } catch let error as RecordsError where error.code == .poolExhausted {
                // Nothing left to lease: the station learns it when it next needs a value.
                state.withLock { s in
                    s.problem = nil
                    s.down = false
                }
            } catch is CancellationError {
                return
            } catch {
                down(error)
            }
        }
    }
}
