import Crypto
import Foundation
import OrderedJSON
import RecordModel

/// The IPC-CFX (IPC-2591) messages a station publishes for each unit run (docs/cfx.md).
public enum CFXMessageKind: String, Sendable, Hashable, CaseIterable, Codable {
    case workStarted = "CFX.Production.WorkStarted"
    case unitsPersonalized = "CFX.Production.Assembly.UnitsPersonalized"
    case unitsTested = "CFX.Production.TestAndInspection.UnitsTested"
    case workCompleted = "CFX.Production.WorkCompleted"

    /// The short name used in the message's UniqueID and in spool file names.
    public var shortName: String {
        switch self {
        case .workStarted: "WorkStarted"
        case .unitsPersonalized: "UnitsPersonalized"
        case .unitsTested: "UnitsTested"
        case .workCompleted: "WorkCompleted"
        }
    }
}

/// A CFX message in its envelope: `MessageName`, `Version`, `TimeStamp`, `UniqueID`, `Source`, `Target`,
/// `RequestID`, `MessageBody` (with its `$type`), written as the CFX SDK writes them.
public struct CFXEnvelope: Sendable, Hashable {
    /// The version of the standard the messages follow.
    public static let version = "1.4"

    public var kind: CFXMessageKind
    public var version: String
    /// When the event took place (not when the message is sent).
    public var timeStamp: Date
    /// Lowercase UUID text; the same for a message sent again, so a receiver can drop a duplicate.
    public var uniqueID: String
    /// The publisher's CFX handle.
    public var source: String
    public var target: String?
    public var requestID: String?
    /// The body's fields, without `$type` (added when written).
    public var body: [(String, OrderedJSON)]

    public static func == (lhs: CFXEnvelope, rhs: CFXEnvelope) -> Bool { lhs.text() == rhs.text() }
    public func hash(into hasher: inout Hasher) { hasher.combine(text()) }

    public var messageName: String { kind.rawValue }

    public func json() -> OrderedJSON {
        .object([
            ("MessageName", .string(kind.rawValue)),
            ("Version", .string(version)),
            ("TimeStamp", .string(CFXTime.text(timeStamp))),
            ("UniqueID", .string(uniqueID)),
            ("Source", .string(source)),
            ("Target", .optional(target)),
            ("RequestID", .optional(requestID)),
            ("MessageBody", .object([("$type", .string("\(kind.rawValue), CFX"))] + body)),
        ])
    }

    /// The message as one line of JSON (an AMQP message's body).
    /// The message as one line of JSON (an AMQP message's body); whole numeric values as decimals (`87.0`), as the
    /// CFX SDK writes them.
    public func text() -> String { json().rendered(wholeNumbersAsDecimals: true) }
}

extension TimeZone {
    public static let utc = TimeZone(identifier: "UTC")!
}

/// CFX times: ISO 8601 with milliseconds and the offset (UTC unless told) (`2026-11-27T17:36:25.123+00:00`).
public enum CFXTime {
    public static func text(_ date: Date, timeZone: TimeZone = .utc) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        // Whole milliseconds, as the records keep them.
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let fraction = Int(millis - seconds * 1000)
        let rounded = Date(timeIntervalSince1970: Double(seconds))
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: rounded)
        let offset = timeZone.secondsFromGMT(for: rounded)
        let sign = offset < 0 ? "-" : "+"
        let hours = abs(offset) / 3600, minutes = abs(offset) % 3600 / 60
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0,
                      c.minute ?? 0, c.second ?? 0, fraction) + sign + String(format: "%02d:%02d", hours, minutes)
    }
}

/// Name-based UUIDs (RFC 4122 version 5, SHA-1): the same name gives the same id on every machine and every run.
public enum CFXIdentifier {
    /// The namespace of Tuneup's CFX ids.
    static let namespace: [UInt8] = [0x4f, 0x2e, 0x9b, 0x61, 0x0c, 0x57, 0x4d, 0x1a, 0x9e, 0x83, 0x5b, 0x3c, 0x6a, 0x11, 0xd0, 0x42]

    public static func uuid(_ name: String) -> String {
        var hash = Insecure.SHA1()
        hash.update(data: namespace)
        hash.update(data: Array(name.utf8))
        var bytes = Array(hash.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }
}

/// What one unit's messages are made from: its run as recorded (with steps and measurements) and the identity it
/// was given.
public struct CFXUnitRun: Sendable, Hashable {
    public var run: RunRecord
    public var serial: String?
    public var bluetoothAddress: String?
    public var bluetoothName: String?

    public init(run: RunRecord, serial: String?, bluetoothAddress: String?, bluetoothName: String?) {
        self.run = run
        self.serial = serial
        self.bluetoothAddress = bluetoothAddress
        self.bluetoothName = bluetoothName
    }

    /// From a run and the unit's identities (the live ones: not voided).
    public init(run: RunRecord, identities: [Identity]) {
        func value(_ kind: IdentityKind) -> String? {
            identities.last { $0.kind == kind && $0.state != .voided }?.value
        }
        self.init(run: run, serial: value(.serial), bluetoothAddress: value(.bluetoothAddress), bluetoothName: value(.bluetoothName))
    }
}

/// Maps a unit's recorded run to its CFX messages. Pure: the same run gives the same messages, byte for byte.
public struct CFXMapper: Sendable {
    /// The publisher's CFX handle (`Source`).
    public var source: String

    public init(source: String) { self.source = source }

    /// The default handle of a station: `Tuneup.Station.NAME`.
    public static func handle(station: String) -> String { "Tuneup.Station.\(station)" }

    /// The name a message's UniqueID is made from: the station's handle, the unit, the run and the message.
    public func uniqueID(_ kind: CFXMessageKind, run: RunRecord) -> String {
        CFXIdentifier.uuid("\(source)|\(run.start.hardwareID)|\(run.id.rawValue)|\(kind.shortName)")
    }

    /// The run's transaction (shared by its four messages).
    public func transactionID(_ run: RunRecord) -> String {
        CFXIdentifier.uuid("\(source)|\(run.start.hardwareID)|\(run.id.rawValue)|transaction")
    }

    /// The messages of a finished run, in the order they are sent: WorkStarted, UnitsPersonalized (only when the
    /// identity was written, or the unit held it already), UnitsTested, WorkCompleted. A station publishes each when
    /// its event happens (the run's start, the identity step's end, the run's end), made from the run as recorded
    /// so far: each message needs only what was recorded by then, so it is the same whenever it is made.
    public func messages(for unit: CFXUnitRun) -> [CFXEnvelope] {
        var messages = [workStarted(unit)]
        if let personalized = unitsPersonalized(unit) { messages.append(personalized) }
        messages.append(unitsTested(unit))
        messages.append(workCompleted(unit))
        return messages
    }

    /// The unit as CFX names it: its serial, or its hardware id before it has one.
    func unitIdentifier(_ unit: CFXUnitRun) -> String { unit.serial ?? unit.run.start.hardwareID }

    func envelope(_ kind: CFXMessageKind, _ run: RunRecord, at time: Date, body: [(String, OrderedJSON)]) -> CFXEnvelope {
        CFXEnvelope(kind: kind, version: CFXEnvelope.version, timeStamp: time, uniqueID: uniqueID(kind, run: run), source: source,
                    target: nil, requestID: nil, body: body)
    }

    /// The work on the unit starts: it is named by its hardware id, the identifier it has when the work starts (a
    /// new unit is given its serial later in the run; UnitsPersonalized pairs the two).
    public func workStarted(_ unit: CFXUnitRun) -> CFXEnvelope {
        let run = unit.run
        return envelope(.workStarted, run, at: run.start.startedAt, body: [
            ("TransactionID", .string(transactionID(run))),
            ("UnitCount", .int(1)),
            ("Units", .array([.object([
                ("UnitIdentifier", .string(run.start.hardwareID)),
                ("PositionNumber", .int(1)),
                ("PositionName", .string(run.start.slot)),
            ])])),
        ])
    }

    /// The identity the unit was given, when the run wrote it (or found it written): nil otherwise.
    public func unitsPersonalized(_ unit: CFXUnitRun) -> CFXEnvelope? {
        let run = unit.run
        guard let step = run.steps.last(where: { $0.name == "identity" }), step.outcome == .pass || step.outcome == .skipped else {
            return nil
        }
        var characteristics: [OrderedJSON] = []
        func add(_ name: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            characteristics.append(.object([("Name", .string(name)), ("Value", .string(value))]))
        }
        add("Serial Number", unit.serial)
        add("Bluetooth Address", unit.bluetoothAddress)
        add("Bluetooth Name", unit.bluetoothName)
        add("Hardware ID", run.start.hardwareID)
        // Traceability (work order, lot, fixture, metadata): what the unit was built under, with its identity.
        add("Work Order", run.start.workOrder)
        add("Lot", run.start.lot)
        add("Fixture", run.start.fixture)
        for (key, value) in run.start.metadata.sorted(by: { $0.key < $1.key }) { add("meta.\(key)", value) }
        return envelope(.unitsPersonalized, run, at: step.endedAt, body: [
            ("TransactionId", .string(transactionID(run))),
            ("PersonalizedUnits", .array([.object([
                ("UnitIdentifier", .string(unitIdentifier(unit))),
                ("UnitPositionNumber", .int(1)),
                ("Characteristics", .array(characteristics)),
            ])])),
        ])
    }

    public func unitsTested(_ unit: CFXUnitRun) -> CFXEnvelope {
        let run = unit.run
        let testsID = uniqueID(.unitsTested, run: run)
        let tests: [OrderedJSON] = run.steps.enumerated().map { index, step in
            let testID = CFXIdentifier.uuid("\(testsID)|test|\(index)")
            let measurements: [OrderedJSON] = step.measurements.enumerated().map { m, measurement in
                .object([
                    ("$type", .string("CFX.Structures.NumericMeasurement, CFX")),
                    ("MeasuredValue", .object([
                        ("Value", .optional(measurement.value)),
                        ("ValueUnits", .optional(measurement.unit.isEmpty ? nil : measurement.unit)),
                        ("ExpectedValue", .null),
                        ("ExpectedValueUnits", .null),
                        ("MinimumAcceptableValue", .optional(measurement.low)),
                        ("MaximumAcceptableValue", .optional(measurement.high)),
                    ])),
                    ("UniqueIdentifier", .string(CFXIdentifier.uuid("\(testID)|measurement|\(m)"))),
                    ("MeasurementName", .string(measurement.name)),
                    ("TimeRecorded", .string(CFXTime.text(step.endedAt))),
                    ("Sequence", .int(m)),
                    // A marginal value is within the limits: CFX has no marginal result.
                    ("Result", .string(measurement.outcome == .fail ? "Failed" : "Passed")),
                ])
            }
            return .object([
                ("UniqueIdentifier", .string(testID)),
                ("TestName", .string(step.name)),
                ("TestStartTime", .string(CFXTime.text(step.startedAt))),
                ("TestEndTime", .string(CFXTime.text(step.endedAt))),
                ("Comments", .optional(step.message.isEmpty ? nil : step.message)),
                ("Result", .string(Self.testResult(step.outcome))),
                ("Measurements", .array(measurements)),
            ])
        }
        let tester: OrderedJSON = run.start.operatorName.isEmpty ? .null : .object([
            ("OperatorIdentifier", .string(run.start.operatorName)),
            ("ActorType", .string("Human")),
        ])
        let time = run.steps.last?.endedAt ?? run.endedAt ?? run.start.startedAt
        return envelope(.unitsTested, run, at: time, body: [
            ("TransactionId", .string(transactionID(run))),
            ("TestMethod", .string("Automated")),
            ("Tester", tester),
            ("TestedUnits", .array([.object([
                ("UnitIdentifier", .string(unitIdentifier(unit))),
                ("UnitPositionNumber", .int(1)),
                ("OverallResult", .string(Self.overallResult(run.outcome))),
                ("Tests", .array(tests)),
            ])])),
        ])
    }

    public func workCompleted(_ unit: CFXUnitRun) -> CFXEnvelope {
        let run = unit.run
        let result = switch run.outcome {
        case .pass: "Completed"
        case .fail, .error: "Failed"
        case .aborted, nil: "Aborted"
        }
        return envelope(.workCompleted, run, at: run.endedAt ?? run.steps.last?.endedAt ?? run.start.startedAt, body: [
            ("TransactionID", .string(transactionID(run))),
            ("Result", .string(result)),
        ])
    }

    static func testResult(_ outcome: StepOutcome) -> String {
        switch outcome {
        case .pass: "Passed"
        case .fail: "Failed"
        case .error: "Error"
        case .skipped: "Skipped"
        case .aborted: "Aborted"
        }
    }

    static func overallResult(_ outcome: RunOutcome?) -> String {
        switch outcome {
        case .pass: "Passed"
        case .fail: "Failed"
        case .error: "Error"
        case .aborted, nil: "Aborted"
        }
    }
}

extension OrderedJSON {
    /// A string, or null for nil.
    static func optional(_ text: String?) -> OrderedJSON { text.map(OrderedJSON.string) ?? .null }
    /// A number, or null for nil (and, when written, for values JSON cannot hold: NaN, infinities).
    static func optional(_ number: Double?) -> OrderedJSON { number.map(OrderedJSON.double) ?? .null }
}
