import Foundation
import Logging
import Records
import Station
import Support
import Synchronization

/// The operator page's state, fed by a station's events: a tile per slot, the running totals, the failure Pareto of
/// the shift (the station's runs since it started), and the last units with their records, read from the records
/// database (so they are there again after a restart).
///
/// `handle(_:)` is the station's event listener: it only updates values under a lock and wakes the connected pages
/// (no I/O, no encoding, no waiting on a page); a finished unit's record is read by a task of the feed's own.
public final class StationFeed: Sendable {
    public let sections = Sections()
    private let store: any RecordStore
    private let station: String
    private let operatorName: String
    private let recent: Int
    private let finished: AsyncStream<UnitResult>.Continuation
    private let finishedStream: AsyncStream<UnitResult>
    private let reader = Mutex<Task<Void, Never>?>(nil)
    /// Where the page's answers to the station's scans and prompts go (nil: the page only shows them).
    private let desk: OperatorDesk?
    /// The prompts' images by prompt name (`GET /image/NAME`).
    private let images: [String: PromptImage]

    /// - Parameters:
    ///   - store: the station's records (read for the last units).
    ///   - station: the station's name in the records.
    ///   - operatorName: who operates it (as recorded on its runs).
    ///   - recent: how many of the last units the page lists.
    ///   - desk: the station's desk: answers given on the page go to it (checked there, as the terminal's are).
    ///   - images: the recipe's prompt images by prompt name.
    public init(store: any RecordStore, station: String, recipe: String = "", operatorName: String = "", recent: Int = 50,
                desk: OperatorDesk? = nil, images: [String: PromptImage] = [:]) {
        self.desk = desk
        self.images = images
        self.store = store
        self.station = station
        self.operatorName = operatorName
        self.recent = max(1, recent)
        (finishedStream, finished) = AsyncStream<UnitResult>.makeStream()
        sections.update { e in
            var header = Header(station: station, recipe: recipe, operatorName: desk?.signedInOperator ?? operatorName)
            header.signInOffered = desk != nil
            header.signedIn = desk?.signedInOperator != nil
            e.set("header", header)
            e.set("totals", Totals(StationTotals()))
            e.set("pareto", Pareto())
            e.set("units", [UnitRow]())
        }
    }

    /// Reads the last units of the station from the records, and starts reading each finished unit's record as it
    /// comes. Call it before serving the page.
    public func start() async {
        let rows = await loadRecent()
        sections.update { $0.set("units", rows) }
        let task = Task { [finishedStream, weak self] in
            for await result in finishedStream {
                guard let self else { return }
                await self.readRecord(of: result)
            }
        }
        reader.withLock { $0 = task }
    }

    /// Stops reading records at once (what is not read yet stays as the station's result listed it).
    public func stop() {
        finished.finish()
        reader.withLock { $0?.cancel() }
    }

    /// Stops taking results but first reads the records of those already finished (the last unit of a station
    /// that ends right after it), so the page's last rows get their record before it stops; then as `stop()`.
    public func finish() async {
        finished.finish()
        let task = reader.withLock { $0 }
        await task?.value
    }

    // MARK: The station's events

    /// The station's event listener: quick, never waits.
    public func handle(_ event: StationEvent) {
        sections.update { e in
            switch event {
            case let .started(slots, recipe, recipeHash, station):
                var header = e.get("header", as: Header.self) ?? Header(station: station, recipe: recipe, operatorName: operatorName)
                (header.station, header.recipe, header.recipeHash, header.slots) = (station, recipe, recipeHash, slots)
                e.set("header", header)
                for slot in slots where e.get(Self.tileKey(slot), as: Tile.self) == nil { e.set(Self.tileKey(slot), Tile(slot: slot)) }
            case .recovered:
                return
            case let .waiting(slot):
                Self.tile(&e, slot) { $0.present = false }
            case let .arrived(slot, hardwareID):
                Self.tile(&e, slot) { $0 = Tile(slot: slot, unit: hardwareID, step: StepName.identify, state: "running", present: true) }
            case let .identified(slot, hardwareID, serial, _):
                Self.tile(&e, slot) { tile in if tile.unit == hardwareID { tile.serial = serial } }
            case let .stepStarted(slot, _, step):
                Self.tile(&e, slot) { $0.step = step; $0.fraction = nil }
            case let .progress(slot, _, step, fraction):
                Self.tile(&e, slot) { $0.step = step; $0.fraction = (fraction * 1000).rounded() / 1000 }
            case let .stepEnded(slot, _, step, outcome, message):
                Self.tile(&e, slot) { tile in
                    tile.step = step
                    tile.fraction = nil
                    if outcome == "fail" || outcome == "error" { tile.message = message }
                }
            case let .finished(result):
                Self.tile(&e, result.slot) { tile in
                    tile.state = result.outcome.rawValue
                    tile.unit = result.hardwareID ?? tile.unit
                    tile.serial = result.serial
                    tile.fraction = nil
                    tile.step = result.failedStep ?? "done"
                    tile.message = result.message
                    tile.seconds = (result.seconds * 10).rounded() / 10
                }
                // The unit is listed at once from its result; its record (steps, measurements) follows.
                if result.outcome != .aborted || result.run != nil {
                    var rows = e.get("units", as: [UnitRow].self) ?? []
                    // The run's operator as recorded (a sign-in since does not change it), its end as the feed saw it.
                    var row = UnitRow(result, operatorName: result.operatorName ?? desk?.signedInOperator ?? operatorName)
                    row.endedAt = Date()
                    if let seconds = row.seconds { row.startedAt = row.endedAt?.addingTimeInterval(-seconds) }
                    rows.insert(row, at: 0)
                    if rows.count > recent { rows.removeLast(rows.count - recent) }
                    e.set("units", rows)
                }
                if result.outcome == .fail || result.outcome == .error {
                    var pareto = e.get("pareto", as: Pareto.self) ?? Pareto()
                    pareto.causes[result.run ?? -Int64(pareto.causes.count + 1)] = result.failedStep ?? "(no step)"
                    e.set("pareto", pareto)
                }
                finished.yield(result)
            case let .left(slot):
                Self.tile(&e, slot) { $0.present = false }
            case let .stopping(reason):
                var header = e.get("header", as: Header.self) ?? Header(station: station, recipe: "", operatorName: operatorName)
                header.stopping = reason
                e.set("header", header)
            case let .totals(totals):
                e.set("totals", Totals(totals))
            case let .prompt(prompt):
                Self.tile(&e, prompt.slot) { $0.prompt = prompt }
            case let .promptEnded(slot, id, _, _, _):
                Self.tile(&e, slot) { tile in if tile.prompt?.id == id { tile.prompt = nil } }
            default:
                // Events other parts of the station own (quarantine, prompts, ...) leave the page as it is.
                return
            }
        }
    }

    static func tileKey(_ slot: String) -> String { "tile:" + slot }

    private static func tile(_ e: inout Sections.Editor, _ slot: String, _ change: (inout Tile) -> Void) {
        var tile = e.get(tileKey(slot), as: Tile.self) ?? Tile(slot: slot)
        change(&tile)
        e.set(tileKey(slot), tile)
    }

    // MARK: The records

    /// The station's last finished units, newest first, with their records.
    private func loadRecent() async -> [UnitRow] {
        guard let runs = try? await store.runs(hardwareID: nil, station: station) else { return [] }
        var rows: [UnitRow] = []
        for run in runs.reversed() where run.outcome != nil {
            guard rows.count < recent else { break }
            guard let full = try? await store.run(run.id) else { continue }
            let serial = (try? await store.identities(of: run.start.hardwareID))?
                .last { $0.kind == .serial && $0.state != .voided }?.value
            rows.append(UnitRow(full, serial: serial))
        }
        return rows
    }

    /// Replaces a finished unit's row with its record, and counts its failure by the record's cause (its failing
    /// measurement, else its failing step, as `records report` does).
    private func readRecord(of result: UnitResult) async {
        guard let id = result.run, let record = try? await store.run(RunID(id)) else { return }
        var row = UnitRow(record, serial: result.serial)
        row.seconds = (result.seconds * 10).rounded() / 10
        let cause = record.outcome == .fail || record.outcome == .error ? RecordsReport(runs: [record]).pareto.first?.cause : nil
        sections.update { e in
            var rows = e.get("units", as: [UnitRow].self) ?? []
            if let index = rows.firstIndex(where: { $0.run == id }) {
                rows[index] = row
                e.set("units", rows)
            }
            if let cause {
                var pareto = e.get("pareto", as: Pareto.self) ?? Pareto()
                pareto.causes[id] = cause
                e.set("pareto", pareto)
            }
        }
    }
}

// MARK: - The values the page shows

struct Header: Encodable, Sendable, Equatable {
    var station: String
    var recipe: String
    var recipeHash = ""
    var operatorName: String
    var slots: [String] = []
    var stopping: String?
    /// Whether an operator may sign in on the page (the page's answers go to the station).
    var signInOffered = false
    /// Whether `operatorName` signed in on the page (else it is the station's `--operator`).
    var signedIn = false
    /// Why the last name given to sign in was refused.
    var signInRefusal: String?

    init(station: String, recipe: String, operatorName: String) {
        (self.station, self.recipe, self.operatorName) = (station, recipe, operatorName)
    }

    private enum CodingKeys: String, CodingKey {
        case station, recipe, recipeHash, operatorName = "operator", slots, stopping, signInOffered = "signIn", signedIn, signInRefusal
    }
}

struct Tile: Encodable, Sendable, Equatable {
    var slot: String
    var unit: String?
    var serial: String?
    var step = "waiting"
    var fraction: Double?
    /// waiting, running, pass, fail, error, aborted: a result stays until the next unit arrives.
    var state = "waiting"
    /// Whether a unit is in the slot.
    var present = false
    var message: String?
    var seconds: Double?
    /// What the station asks the operator at this slot now (a scan, a prompt), answered on the tile.
    var prompt: OperatorPrompt?
}

/// A prompt's image file, served as `/image/NAME`.
public struct PromptImage: Sendable, Hashable {
    public var path: String
    public var mediaType: String
    public init(path: String, mediaType: String) { (self.path, self.mediaType) = (path, mediaType) }
}

struct Totals: Encodable, Sendable, Equatable {
    var passed: Int, failed: Int, errors: Int, aborted: Int, completed: Int
    var unitsPerHour: Double?
    var firstPassYield: Double?
    var elapsed: Double

    init(_ t: StationTotals) {
        (passed, failed, errors, aborted, completed) = (t.passed, t.failed, t.errors, t.aborted, t.completed)
        unitsPerHour = t.unitsPerHour.map { ($0 * 10).rounded() / 10 }
        firstPassYield = t.firstPassYield
        elapsed = (t.elapsed * 10).rounded() / 10
    }
}

/// The shift's failing runs by cause; encoded as rows, most frequent first.
struct Pareto: Encodable, Sendable, Equatable {
    var causes: [Int64: String] = [:]

    struct Row: Encodable {
        var cause: String
        var count: Int
        var share: Double
        var cumulative: Double
    }

    var rows: [Row] {
        var counts: [String: Int] = [:]
        for cause in causes.values { counts[cause, default: 0] += 1 }
        let total = Double(causes.count)
        var cumulative = 0.0
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { cause, count in
            cumulative += Double(count) / total
            return Row(cause: cause, count: count, share: Double(count) / total, cumulative: min(1, cumulative))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rows)
    }
}

struct UnitRow: Encodable, Sendable, Equatable {
    struct MeasurementRow: Encodable, Sendable, Equatable {
        var name: String
        var value: Double
        var unit: String
        var low: Double?
        var high: Double?
        var outcome: String
    }

    struct StepRow: Encodable, Sendable, Equatable {
        var name: String
        var outcome: String
        var message: String
        var seconds: Double
        var measurements: [MeasurementRow]
    }

    var run: Int64?
    var hardwareID: String
    var serial: String?
    var slot: String
    var operatorName: String
    var outcome: String
    var startedAt: Date?
    var endedAt: Date?
    var seconds: Double?
    var failedStep: String?
    var message: String?
    var steps: [StepRow] = []

    private enum CodingKeys: String, CodingKey {
        case run, hardwareID, serial, slot, operatorName = "operator", outcome, startedAt, endedAt, seconds, failedStep, message, steps
    }

    /// From the station's result (before its record is read).
    init(_ result: UnitResult, operatorName: String) {
        run = result.run
        hardwareID = result.hardwareID ?? "-"
        serial = result.serial
        slot = result.slot
        self.operatorName = operatorName
        outcome = result.outcome.rawValue
        seconds = (result.seconds * 10).rounded() / 10
        failedStep = result.failedStep
        message = result.message
    }

    /// From the records.
    init(_ record: RunRecord, serial: String?) {
        run = record.id.rawValue
        hardwareID = record.start.hardwareID
        self.serial = serial
        slot = record.start.slot
        operatorName = record.start.operatorName
        outcome = record.outcome?.rawValue ?? "open"
        startedAt = record.start.startedAt
        endedAt = record.endedAt
        if let end = record.endedAt { seconds = (end.timeIntervalSince(record.start.startedAt) * 10).rounded() / 10 }
        let failing = record.steps.last { $0.outcome == .fail || $0.outcome == .error }
        failedStep = failing?.name
        message = failing.map(\.message).flatMap { $0.isEmpty ? nil : $0 }
        steps = record.steps.map { step in
            StepRow(
                name: step.name, outcome: step.outcome.rawValue, message: step.message,
                seconds: (step.endedAt.timeIntervalSince(step.startedAt) * 1000).rounded() / 1000,
                measurements: step.measurements.map {
                    MeasurementRow(name: $0.name, value: $0.value, unit: $0.unit, low: $0.low, high: $0.high, outcome: $0.outcome.rawValue)
                })
        }
    }
}

extension StationFeed {
    /// Serves the operator page of this feed on `address` (see `PageServer`).
    public func serve(on address: ListenAddress, logger: Logger? = nil, applied: (@Sendable (Int) -> Void)? = nil) async throws -> PageServer {
        let desk = self.desk, images = self.images
        var answer: (@Sendable (Int, String) async -> Void)?
        if let desk {
            answer = { @Sendable (id: Int, text: String) async -> Void in
                _ = await desk.answer(text, to: id, source: "page")
            }
        }
        // A prompt's image: read on the blocking executor, at most 4 MiB (checked when the recipe was loaded).
        let image: @Sendable (String) async -> (Data, String)? = { name in
            guard let found = images[name] else { return nil }
            guard let data = try? await Blocking.perform("prompt image", { () throws -> Data in
                try Data(contentsOf: URL(fileURLWithPath: found.path), options: .mappedIfSafe)
            }), data.count <= 4 << 20 else { return nil }
            return (data, found.mediaType)
        }
        let pageAnswer = answer
        var signIn: (@Sendable (String?) async -> Void)?
        if desk != nil { signIn = { @Sendable (name: String?) async -> Void in self.signIn(name) } }
        let pageSignIn = signIn
        return try await PageServer.start(
            sections, on: address, serverName: "tuneup-station", logger: logger, applied: applied, answer: pageAnswer, signIn: pageSignIn,
            image: image
        ) { self.document($0) }
    }

    /// An operator signs in on the page (`name`), or out (nil): the desk takes it (runs started from now on record
    /// who signed in) and the header says who operates the station now, or why a name was refused.
    public func signIn(_ name: String?) {
        guard let desk else { return }
        let refusal = desk.signIn(name)
        let signedIn = desk.signedInOperator
        sections.update { e in
            var header = e.get("header", as: Header.self) ?? Header(station: station, recipe: "", operatorName: operatorName)
            header.operatorName = signedIn ?? operatorName
            header.signedIn = signedIn != nil
            header.signInRefusal = refusal
            e.set("header", header)
        }
    }

    /// The operator page with `initialState` (a `Sections` message) embedded.
    public func document(_ initialState: String) -> String {
        PageDocument.render(kind: .station, title: "Station " + station, initialState: initialState)
    }
}
