import Foundation

// The values the records store takes and returns. They carry no database types, so a PostgreSQL store returns the
// same values as the SQLite one.

/// The id of a stored row (run, step, measurement, identity, lease), typed by what it names.
public struct RecordID<Kind>: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public var description: String { String(rawValue) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(Int64.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

public enum RunKind {}
public enum StepKind {}
public enum IdentityRecordKind {}
public enum LeaseKind {}
public typealias RunID = RecordID<RunKind>
public typealias StepID = RecordID<StepKind>
public typealias IdentityID = RecordID<IdentityRecordKind>
public typealias LeaseID = RecordID<LeaseKind>

/// What an identity is.
public enum IdentityKind: String, Sendable, Hashable, Codable, CaseIterable {
    case serial
    case bluetoothAddress = "bt-address"
    case bluetoothName = "bt-name"
}

/// Where an identity is in its life: leased to a station (no unit yet) → reserved for a unit → written to it (and
/// read back) → committed; or voided, after which its value is never issued again.
public enum IdentityState: String, Sendable, Hashable, Codable, CaseIterable {
    case leased, reserved, written, committed, voided
}

/// One issued identity value.
public struct Identity: Sendable, Hashable, Codable {
    public var id: IdentityID
    public var kind: IdentityKind
    public var value: String
    public var state: IdentityState
    /// The unit it is reserved for; nil while it only sits in a station's lease.
    public var hardwareID: String?
    public var station: String
    public var lease: LeaseID?
    public var updatedAt: Date

    public init(
        id: IdentityID, kind: IdentityKind, value: String, state: IdentityState, hardwareID: String?, station: String,
        lease: LeaseID?, updatedAt: Date
    ) {
        self.id = id
        self.kind = kind
        self.value = value
        self.state = state
        self.hardwareID = hardwareID
        self.station = station
        self.lease = lease
        self.updatedAt = updatedAt
    }
}

/// A block of identities leased to one station, so it keeps provisioning while the shared database is away.
public struct Lease: Sendable, Hashable, Codable {
    public var id: LeaseID
    public var station: String
    public var kind: IdentityKind
    public var createdAt: Date
    /// The identities of the block, in the order they are handed out.
    public var identities: [Identity]

    public init(id: LeaseID, station: String, kind: IdentityKind, createdAt: Date, identities: [Identity]) {
        self.id = id
        self.station = station
        self.kind = kind
        self.createdAt = createdAt
        self.identities = identities
    }
}

/// How a run ended. A run without an outcome is still open (or its station was killed: see `abortOpenRuns`).
public enum RunOutcome: String, Sendable, Hashable, Codable, CaseIterable {
    case pass, fail, error, aborted
}

/// How a step ended.
public enum StepOutcome: String, Sendable, Hashable, Codable, CaseIterable {
    case pass, fail, error, skipped, aborted
}

/// How a measurement compares with its limits.
public enum MeasurementOutcome: String, Sendable, Hashable, Codable, CaseIterable {
    case pass, marginal, fail
}

/// What a station knows when a run starts.
public struct RunStart: Sendable, Hashable, Codable {
    public var hardwareID: String
    public var station: String
    public var slot: String
    public var operatorName: String
    public var recipeHash: String
    public var toolVersion: String
    /// Image name → hash (e.g. "application" → SHA-256 hex).
    public var imageHashes: [String: String]
    public var startedAt: Date
    /// Traceability (schema v3, `Traceability` checks them): the work order and lot the unit is built under, the
    /// fixture it sat in, and free key/value metadata (the recipe's `metadata:` and the station's `--meta`).
    public var workOrder: String?
    public var lot: String?
    public var fixture: String?
    public var metadata: [String: String]

    public init(
        hardwareID: String, station: String, slot: String, operatorName: String = "", recipeHash: String = "",
        toolVersion: String = "", imageHashes: [String: String] = [:], startedAt: Date = Date(),
        workOrder: String? = nil, lot: String? = nil, fixture: String? = nil, metadata: [String: String] = [:]
    ) {
        self.hardwareID = hardwareID
        self.station = station
        self.slot = slot
        self.operatorName = operatorName
        self.recipeHash = recipeHash
        self.toolVersion = toolVersion
        self.imageHashes = imageHashes
        self.startedAt = startedAt
        self.workOrder = workOrder
        self.lot = lot
        self.fixture = fixture
        self.metadata = metadata
    }
}

/// One measured value with its limits.
public struct Measurement: Sendable, Hashable, Codable {
    public var name: String
    public var value: Double
    public var unit: String
    public var low: Double?
    public var high: Double?
    public var marginalLow: Double?
    public var marginalHigh: Double?
    public var outcome: MeasurementOutcome

    public init(
        name: String, value: Double, unit: String = "", low: Double? = nil, high: Double? = nil,
        marginalLow: Double? = nil, marginalHigh: Double? = nil, outcome: MeasurementOutcome
    ) {
        self.name = name
        self.value = value
        self.unit = unit
        self.low = low
        self.high = high
        self.marginalLow = marginalLow
        self.marginalHigh = marginalHigh
        self.outcome = outcome
    }
}

/// One step of a run, with the measurements it took.
public struct StepRecord: Sendable, Hashable, Codable {
    public var name: String
    public var startedAt: Date
    public var endedAt: Date
    public var outcome: StepOutcome
    public var retries: Int
    public var message: String
    public var measurements: [Measurement]

    public init(
        name: String, startedAt: Date, endedAt: Date, outcome: StepOutcome, retries: Int = 0, message: String = "",
        measurements: [Measurement] = []
    ) {
        self.name = name
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.outcome = outcome
        self.retries = retries
        self.message = message
        self.measurements = measurements
    }
}

/// A stored run: what it started with, how it ended, and (from `run(_:)`) its steps.
public struct RunRecord: Sendable, Hashable, Codable {
    public var id: RunID
    public var start: RunStart
    public var endedAt: Date?
    /// nil while the run is open.
    public var outcome: RunOutcome?
    /// How many earlier runs of the same unit failed or ended in error (the unit came back for rework).
    public var reworkCount: Int
    /// The steps in the order they were recorded; empty in listings.
    public var steps: [StepRecord]
    /// The files the run's steps attached (a log, a measured curve), in the order they were recorded, without their
    /// content (`RecordStore.attachment(run:name:)` has it); empty in listings.
    public var attachments: [Attachment]
    /// What the operator answered (scanned codes, prompts), in the order answered (schema v5); empty in listings.
    public var answers: [OperatorAnswer]

    public init(
        id: RunID, start: RunStart, endedAt: Date?, outcome: RunOutcome?, reworkCount: Int, steps: [StepRecord] = [],
        attachments: [Attachment] = [], answers: [OperatorAnswer] = []
    ) {
        self.id = id
        self.start = start
        self.endedAt = endedAt
        self.outcome = outcome
        self.reworkCount = reworkCount
        self.steps = steps
        self.attachments = attachments
        self.answers = answers
    }
}

/// An operator's answer recorded with a run (schema v5, `v5-operator-answers`): a scanned code bound to the unit, or
/// the answer to a recipe's prompt; who gave it, from where and when.
public struct OperatorAnswer: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A scanned (or typed) code bound to the unit.
        case scan
        /// PASS or FAIL.
        case passFail = "pass-fail"
        /// A value entered.
        case value
    }

    /// The step it answered (`scan`, `prompt:NAME`).
    public var step: String
    public var kind: Kind
    /// What was asked: the scan's label, the prompt's text.
    public var label: String
    /// What was answered: the code, `pass` or `fail`, the value as entered.
    public var value: String
    /// Who answered (the station's operator).
    public var answeredBy: String
    /// Where: `page` (the operator page) or `terminal`.
    public var source: String
    public var answeredAt: Date

    public init(step: String, kind: Kind, label: String, value: String, answeredBy: String, source: String, answeredAt: Date = Date()) {
        // Kept to the millisecond, as every time of the records.
        (self.step, self.kind, self.label, self.value, self.answeredBy, self.source, self.answeredAt) =
            (step, kind, label, value, answeredBy, source, answeredAt.toMilliseconds)
    }

    /// The one rule of every store: texts of one line, a code of at most 128 characters.
    package func check() throws {
        for (what, text, max) in [("step", step, 128), ("label", label, 256), ("value", value, 256), ("answered-by", answeredBy, 256), ("source", source, 32)] {
            guard text.count <= max, !text.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
                throw RecordsError(.invalidArgument, "an answer's \(what) is one line of at most \(max) characters")
            }
        }
        guard !step.isEmpty else { throw RecordsError(.invalidArgument, "an answer names its step") }
    }
}

/// A scanned code and the unit it is bound to.
public struct ScanBinding: Sendable, Hashable, Codable {
    public var code: String
    public var hardwareID: String
    public var run: RunID
    public var answeredAt: Date
    public init(code: String, hardwareID: String, run: RunID, answeredAt: Date) {
        (self.code, self.hardwareID, self.run, self.answeredAt) = (code, hardwareID, run, answeredAt)
    }
}

/// A file a step attached to its run: a log, a measured curve. Kept in the records database whole (at most
/// `Traceability.maxAttachmentBytes`), named uniquely within its run.
public struct Attachment: Sendable, Hashable, Codable {
    /// Unique within the run: `A-Z a-z 0-9 _ . -`, 1...128 characters.
    public var name: String
    /// The step that attached it (nil when the run did).
    public var step: String?
    /// `type/subtype`, e.g. `text/csv`.
    public var mediaType: String
    /// Bytes.
    public var size: Int
    /// SHA-256 of the content, lowercase hex.
    public var sha256: String
    public var createdAt: Date
    /// The bytes; nil in a run's listing (exports carry the other fields only).
    public var content: Data? = nil

    /// An attachment of `content`: its size and SHA-256 are computed here.
    public init(name: String, step: String? = nil, mediaType: String, content: Data, createdAt: Date = Date()) {
        self.name = name
        self.step = step
        self.mediaType = mediaType
        self.size = content.count
        self.sha256 = Traceability.sha256(content)
        self.createdAt = createdAt
        self.content = content
    }

    /// A stored attachment's description (content optional).
    public init(name: String, step: String?, mediaType: String, size: Int, sha256: String, createdAt: Date, content: Data?) {
        (self.name, self.step, self.mediaType, self.size, self.sha256, self.createdAt, self.content) =
            (name, step, mediaType, size, sha256, createdAt, content)
    }

    private enum CodingKeys: String, CodingKey { case name, step, mediaType, size, sha256, createdAt }
}

/// A quarantined unit let back onto the line (`tuneup records release`): who, when, why, and how many failed runs
/// it released. Releases are never changed or deleted: they are the audit of the quarantine.
public struct Release: Sendable, Hashable, Codable {
    public var hardwareID: String
    public var releasedAt: Date
    public var releasedBy: String
    public var reason: String
    /// The unit's failed or erred runs since its previous release (what made it quarantined).
    public var failures: Int

    public init(hardwareID: String, releasedAt: Date, releasedBy: String, reason: String, failures: Int) {
        (self.hardwareID, self.releasedAt, self.releasedBy, self.reason, self.failures) = (hardwareID, releasedAt, releasedBy, reason, failures)
    }
}

/// A unit and what it was given.
public struct UnitRecord: Sendable, Hashable, Codable {
    public var hardwareID: String
    public var firstSeen: Date
    /// Every identity ever reserved for it, voided ones included.
    public var identities: [Identity]
    /// Its runs, oldest first, without steps.
    public var runs: [RunRecord]
    /// Its releases from quarantine, oldest first.
    public var releases: [Release]

    public init(hardwareID: String, firstSeen: Date, identities: [Identity], runs: [RunRecord], releases: [Release] = []) {
        self.hardwareID = hardwareID
        self.firstSeen = firstSeen
        self.identities = identities
        self.runs = runs
        self.releases = releases
    }
}

extension Identity {
    /// The states an identity may leave for `target` (markWritten, commit, void).
    package static func sources(of target: IdentityState) -> Set<IdentityState> {
        switch target {
        case .written: [.reserved]
        case .committed: [.written]
        case .voided: [.leased, .reserved, .written]
        case .leased, .reserved: []
        }
    }

    /// Whether becoming `target` changes the identity (false when it is in `target` already); throws
    /// `invalidTransition` when its state forbids the change. The one rule of both stores.
    package func changes(to target: IdentityState) throws -> Bool {
        if state == target { return false }
        let sources = Self.sources(of: target)
        guard sources.contains(state) else {
            let allowed = sources.map(\.rawValue).sorted().joined(separator: " or ")
            throw RecordsError(.invalidTransition, "\(kind.rawValue) \(value) is \(state.rawValue); only a \(allowed) one can become \(target.rawValue)")
        }
        return true
    }
}

extension Date {
    /// Records keep times to the millisecond (both stores; a PostgreSQL server keeps microseconds).
    package var toMilliseconds: Date { Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000) }
}
