import Failure
import Foundation
import Recipe
import Records
import Support
import Synchronization

/// A station's set-up that every program running one repeats: the recipe loaded and checked before a unit is touched,
/// the records chosen from `--db` and `--outbox` (a SQLite file, or a line's PostgreSQL database through a local
/// outbox), the holds on the station's name, and at the end the outbox uploaded as far as it goes and the holds
/// released (`tuneup station run`; docs/provisioning.md).
public final class StationRecords: Sendable {
    /// Where the station's runs are recorded.
    public let store: any RecordStore
    /// On a line: the line's database (the station's heartbeat beats there).
    public let server: PostgresRecordStore?
    /// On a line: the outbox every run goes to first, and its file.
    private let outbox: OutboxRecordStore?
    public let outboxPath: String?
    /// Held until the station ends (the kernel drops it if the process dies): a second live station of this name on
    /// these records is refused instead of closing this one's runs as a killed station's.
    private let held: StationLock
    /// On a line the name is held on the server too (a station on another host has an outbox of its own).
    private let lineHold: LineStationLock?
    private let nameChanges: NameFollower

    /// Who is told of the line's hold on the name (set once the station exists).
    private final class NameFollower: Sendable {
        let handler = Mutex<(@Sendable (LineStationLock.Status) -> Void)?>(nil)
    }

    private init(store: any RecordStore, server: PostgresRecordStore?, outbox: OutboxRecordStore?, outboxPath: String?,
                 held: StationLock, lineHold: LineStationLock?, nameChanges: NameFollower) {
        (self.store, self.server, self.outbox, self.outboxPath, self.held, self.lineHold) = (store, server, outbox, outboxPath, held, lineHold)
        self.nameChanges = nameChanges
    }

    /// Opens the records of station `station` for the recipe at `recipe`: `db` a SQLite file (default: records.sqlite
    /// next to the recipe) or `postgres://…` for a line, whose runs go through the outbox file `outbox` (default:
    /// STATION.outbox.sqlite next to the recipe) and which leases `lease` addresses at a time (default 32). The
    /// station's name is held on the records (and on the line's database): a second live station is refused.
    public static func open(db: String?, outbox: String?, lease: Int?, station: String, recipe: String) async throws -> StationRecords {
        let path = recordsPath(db: db, outbox: outbox, station: station, recipe: recipe)
        let nameChanges = NameFollower()
        if let db, RecordStores.isServer(db) {
            let server = try await PostgresRecordStore.open(url: db)
            let outboxStore = try await SQLiteRecordStore.open(path: path)
            let lined = OutboxRecordStore(server: server, outbox: outboxStore, station: station, leaseSize: lease ?? 32)
            let held = try await StationLock.acquire(station: station, recordsPath: path)
            let lineHold = try await LineStationLock.acquire(station: station, url: db) { status in
                nameChanges.handler.withLock { $0 }?(status)
            }
            return StationRecords(store: lined, server: server, outbox: lined, outboxPath: path, held: held, lineHold: lineHold, nameChanges: nameChanges)
        }
        let store = try await SQLiteRecordStore.open(path: path)
        let held = try await StationLock.acquire(station: station, recordsPath: path)
        return StationRecords(store: store, server: nil, outbox: nil, outboxPath: nil, held: held, lineHold: nil, nameChanges: nameChanges)
    }

    /// The local records file: the outbox on a line, else the SQLite database.
    public static func recordsPath(db: String?, outbox: String?, station: String, recipe: String) -> String {
        let directory = URL(fileURLWithPath: recipe).deletingLastPathComponent().path
        if let db, RecordStores.isServer(db) { return outbox ?? directory + "/\(fileName(station)).outbox.sqlite" }
        return db ?? directory + "/records.sqlite"
    }

    /// Follows the hold on the name on the line's database: lost in an outage (the station goes on and takes it back
    /// when the server answers), held again, or taken by another station of the name meanwhile (this one must stop:
    /// `nameTakenReason`).
    public func followName(_ handler: @escaping @Sendable (LineStationLock.Status) -> Void) {
        nameChanges.handler.withLock { $0 = handler }
    }

    /// Whether another station took the name on the line's database while this one's hold was lost.
    public var nameTaken: Bool { lineHold?.status == .taken }

    /// At the station's end (also by Ctrl-C): unused leased values are voided and the outbox uploaded, waiting up to
    /// `uploadWait` for the server; `note` is told what was uploaded or what waits for the next start. Then the
    /// hold on the name on the line's database is released. Returns whether another station had taken the name
    /// (`nameTaken`, as it was before the release).
    @discardableResult
    public func close(uploadWait: Duration, note: (String) -> Void) async -> Bool {
        if let outbox, let path = outboxPath {
            let left = await Task { await outbox.finish(within: uploadWait) }.value
            if left.isEmpty {
                note("records: \(outbox.uploaded) uploaded to the line's database; the outbox is empty")
            } else {
                note("records: \(left.runs) run\(left.runs == 1 ? "" : "s") and \(left.identities) identity change\(left.identities == 1 ? "" : "s") wait in \(path) (\(outbox.serverProblem ?? "the server did not answer")); the station's next start uploads them")
            }
            if left.conflicts > 0 {
                note("records: \(left.conflicts) identity change\(left.conflicts == 1 ? " was" : "s were") refused by the line's database (another unit or station holds the value); see \(path)")
            }
        }
        let taken = nameTaken
        await lineHold?.release()
        withExtendedLifetime(held) {}
        return taken
    }

    /// Why a station stopped whose name another station took on the line's database while its hold was lost.
    public static func nameTakenReason(_ station: String) -> String {
        "station \(station) started elsewhere while this one's hold on its name on the line's database was lost: this one takes no more units (stop one of them, or name them apart with --station)"
    }

    /// What the line's hold on the name says when it changes, for people.
    public static func nameChangeText(_ status: LineStationLock.Status, station: String) -> String {
        switch status {
        case .held: "records: station \(station) holds its name on the line's database again"
        case .lost(let why): "records: station \(station) lost its hold on its name on the line's database (\(why)); it goes on and takes it back when the server answers"
        case .taken: nameTakenReason(station)
        }
    }

    /// A station name as a file name (path separators and odd characters replaced).
    public static func fileName(_ station: String) -> String {
        String(station.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" })
    }

    /// The station's default name: this machine's (gethostname: no name-service lookup, unlike Foundation's hostName).
    public static func defaultStationName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "station" }
        let name = String(cString: buffer)
        return name.isEmpty ? "station" : name
    }
}

/// Why a station refuses to start with a recipe (exit 64).
public typealias StationSetupError = CodedFailure<StationSetupErrors>

/// The codes of `StationSetupError`.
public enum StationSetupErrors: ErrorDomain {
    public static func category(of code: StationSetupError.Code) -> FailureCategory { .usage }
}

extension ErrorCodeIn where Domain == StationSetupError {
    /// A test of the recipe is not a measurement the station can take.
    public static let unmeasurable = Self(rawValue: "unmeasurable")
    /// The recipe asks the operator (a scan, prompts) and nobody can answer: no terminal and no operator page.
    public static let unanswerable = Self(rawValue: "unanswerable")
}

extension Station {
    /// Loads the recipe at `path` on the blocking executor (it reads and verifies the images) and checks that the
    /// station can run it: every test a measurement it takes, and its questions answerable on a `terminal` or the
    /// operator `page`. Everything that can be wrong with the recipe is found before a unit is touched.
    public static func loadRecipe(_ path: String, terminal: Bool, page: Bool) async throws -> LoadedRecipe {
        let loaded = try await Blocking.perform("recipe load") { try ProvisioningRecipe.load(path: path) }
        for test in loaded.recipe.tests where !canMeasure(test.name) {
            throw StationSetupError(
                .unmeasurable, "\(loaded.path): tests: the station cannot measure '\(test.name)' (it measures \(measurements.joined(separator: ", ")))")
        }
        if let problem = loaded.recipe.unanswerable(terminal: terminal, page: page) {
            throw StationSetupError(.unanswerable, "\(path): \(problem)")
        }
        return loaded
    }
}
