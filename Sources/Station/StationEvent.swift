import Foundation
import Records

/// Where a unit is provisioned: a physical place (a USB port path such as `usb:1-2.3`, a fixture's TCP address) so
/// two identical units never clash, and the address the station opens to reach the unit in it.
public struct Slot: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The slot's name in events and records (the address as written, by default).
    public var name: String
    /// The address the station opens (`DeviceRegistry.parseAddress` syntax).
    public var address: String

    public init(name: String? = nil, address: String) {
        self.name = name ?? address
        self.address = address
    }

    public var description: String { name }
}

/// One step of a unit's run as the station names it in events and records.
public enum StepName {
    public static let identify = "identify"
    public static let flashApplication = "flash-application"
    public static let flashResource = "flash-resource"
    public static let settings = "settings"
    public static let identity = "identity"
    public static let calibrateANC = "calibrate-anc"
    public static let lock = "lock"
    /// A recipe test: `test:NAME`.
    public static func test(_ name: String) -> String { "test:\(name)" }
    /// The code the recipe's `scan:` binds to the unit.
    public static let scan = "scan"
    /// A recipe prompt: `prompt:NAME`.
    public static func prompt(_ name: String) -> String { "prompt:\(name)" }
}

/// How one unit's run ended, with what the station gave it.
public struct UnitResult: Sendable, Hashable, Codable {
    public enum Outcome: String, Sendable, Hashable, Codable {
        case pass, fail, error, aborted
        /// Refused: the unit failed the recipe's `max-rework` times and waits for `tuneup records release` (no run
        /// is recorded, nothing is flashed).
        case quarantined
    }

    public var slot: String
    /// nil when the unit never answered its hardware id.
    public var hardwareID: String?
    public var serial: String?
    public var bluetoothAddress: String?
    public var outcome: Outcome
    /// The failing step and why, for fail and error.
    public var failedStep: String?
    public var message: String?
    /// The run's id in the records (nil when it was never recorded).
    public var run: Int64?
    /// Wall time of the unit, from its arrival to its result.
    public var seconds: Double
    /// The station's own part of it: everything but waiting on the device and the link.
    public var stationSeconds: Double
    /// Steps the device verifiably held already (a resumed unit) and that were not done again.
    public var skippedSteps: [String]
    /// Who operated the station when the unit's run was recorded (nil without a run): the run's operator, which a
    /// sign-in on the page afterwards does not change.
    public var operatorName: String? = nil
}

/// What the station reports as it works: JSON Lines with `--format json`, live lines on a terminal.
public enum StationEvent: Sendable, Hashable {
    /// The station took its slots and waits for or starts on units.
    case started(slots: [String], recipe: String, recipeHash: String, station: String)
    /// At start: runs a killed station of the same name left open, closed as aborted (their ids).
    case recovered(runs: [Int64])
    /// A slot is empty and watched for a unit.
    case waiting(slot: String)
    /// A unit answered in a slot.
    case arrived(slot: String, hardwareID: String)
    /// The unit's run is recorded (its id in the records): the work on it starts.
    case runStarted(slot: String, hardwareID: String, run: Int64)
    /// The unit's identity is known (reserved in the records, the one it keeps when it comes back): shown while it
    /// runs, before it is written.
    case identified(slot: String, hardwareID: String, serial: String, bluetoothAddress: String)
    case stepStarted(slot: String, hardwareID: String, step: String)
    /// Progress within a long step (0...1).
    case progress(slot: String, hardwareID: String, step: String, fraction: Double)
    case stepEnded(slot: String, hardwareID: String, step: String, outcome: String, message: String?)
    /// A unit is done: take it out.
    case finished(UnitResult)
    /// The unit was taken out of the slot.
    case left(slot: String)
    /// The station stops taking units, and why (the identity pool is used up, the records cannot be written, an SPC
    /// alarm).
    case stopping(reason: String)
    /// A unit that failed `maxRework` times since its last release is refused (its `finished` follows).
    case quarantined(slot: String, hardwareID: String, failures: Int, maxRework: Int)
    /// The recipe's process control limits are broken: the station stops taking units (a `stopping` follows).
    case alarm(ProcessAlarm)
    /// The running totals after each unit, and the summary at the end.
    case totals(StationTotals)
    /// The station waits for the operator (a scan, a recipe prompt); again with `refusal` set when an answer was not
    /// taken.
    case prompt(OperatorPrompt)
    /// A prompt is over: answered (`answer`, `source`), or given up (nil: the unit's run ended, timed out, cancelled).
    case promptEnded(slot: String, id: Int, step: String, answer: String?, source: String?)
}

/// Running totals of a station.
public struct StationTotals: Sendable, Hashable, Encodable {
    public var passed = 0
    public var failed = 0
    public var errors = 0
    public var aborted = 0
    /// Units refused because they are quarantined (not counted as completed).
    public var quarantined = 0
    /// Units (distinct hardware ids) with a finished run (pass, fail, error) at this station.
    public var units = 0
    /// Of `units`, those whose first finished run passed (at any station: a re-run of a unit that passed before is
    /// one; a unit that failed or erred before is not), as `RecordsReport` counts them.
    public var firstPassed = 0
    /// Runs with a result (pass, fail or error; a slot whose unit never answered counts as an error).
    public var completed: Int { passed + failed + errors }
    /// Runs with a result per hour since the station started (`Throughput`: nil before it ran a minute).
    public var unitsPerHour: Double?
    /// firstPassed / units (nil before the first): `RecordsReport.firstPassYield`'s definition.
    public var firstPassYield: Double? { units == 0 ? nil : Double(firstPassed) / Double(units) }
    /// The station's own time as a share of each unit's wall time: mean and largest over the units.
    public var stationShareMean: Double?
    public var stationShareMax: Double?
    /// Seconds since the station started.
    public var elapsed: Double = 0

    public init() {}

    private enum Keys: String, CodingKey {
        case passed, failed, errors, aborted, quarantined, units, firstPassed, completed, unitsPerHour, firstPassYield
        case stationShareMean, stationShareMax, elapsed
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(passed, forKey: .passed)
        try c.encode(failed, forKey: .failed)
        try c.encode(errors, forKey: .errors)
        try c.encode(aborted, forKey: .aborted)
        try c.encode(quarantined, forKey: .quarantined)
        try c.encode(units, forKey: .units)
        try c.encode(firstPassed, forKey: .firstPassed)
        try c.encode(completed, forKey: .completed)
        try c.encodeIfPresent(unitsPerHour, forKey: .unitsPerHour)
        try c.encodeIfPresent(firstPassYield, forKey: .firstPassYield)
        try c.encodeIfPresent(stationShareMean, forKey: .stationShareMean)
        try c.encodeIfPresent(stationShareMax, forKey: .stationShareMax)
        try c.encode(elapsed, forKey: .elapsed)
    }
}

extension StationEvent: Encodable {
    private enum Keys: String, CodingKey {
        case event, slot, slots, recipe, recipeHash, station, hardwareID, step, fraction, outcome, message, unit, reason, totals, runs, run
        case failures, maxRework, kind, measurement, value, limit, window
        case prompt, answer, source, serial, bluetoothAddress
    }

    /// One JSON object per event, `{"event": "...", ...}`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        switch self {
        case let .started(slots, recipe, recipeHash, station):
            try c.encode("started", forKey: .event)
            try c.encode(slots, forKey: .slots)
            try c.encode(recipe, forKey: .recipe)
            try c.encode(recipeHash, forKey: .recipeHash)
            try c.encode(station, forKey: .station)
        case let .recovered(runs):
            try c.encode("recovered", forKey: .event)
            try c.encode(runs, forKey: .runs)
        case let .waiting(slot):
            try c.encode("waiting", forKey: .event)
            try c.encode(slot, forKey: .slot)
        case let .arrived(slot, hardwareID):
            try c.encode("arrived", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
        case let .runStarted(slot, hardwareID, run):
            try c.encode("run-started", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
            try c.encode(run, forKey: .run)
        case let .identified(slot, hardwareID, serial, bluetoothAddress):
            try c.encode("identified", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
            try c.encode(serial, forKey: .serial)
            try c.encode(bluetoothAddress, forKey: .bluetoothAddress)
        case let .stepStarted(slot, hardwareID, step):
            try c.encode("step-started", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
            try c.encode(step, forKey: .step)
        case let .progress(slot, hardwareID, step, fraction):
            try c.encode("progress", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
            try c.encode(step, forKey: .step)
            try c.encode((fraction * 1000).rounded() / 1000, forKey: .fraction)
        case let .stepEnded(slot, hardwareID, step, outcome, message):
            try c.encode("step-ended", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
            try c.encode(step, forKey: .step)
            try c.encode(outcome, forKey: .outcome)
            try c.encodeIfPresent(message, forKey: .message)
        case let .finished(result):
            try c.encode("finished", forKey: .event)
            try c.encode(result.slot, forKey: .slot)
            try c.encode(result, forKey: .unit)
        case let .left(slot):
            try c.encode("left", forKey: .event)
            try c.encode(slot, forKey: .slot)
        case let .stopping(reason):
            try c.encode("stopping", forKey: .event)
            try c.encode(reason, forKey: .reason)
        case let .totals(totals):
            try c.encode("totals", forKey: .event)
            try c.encode(totals, forKey: .totals)
        case let .quarantined(slot, hardwareID, failures, maxRework):
            try c.encode("quarantined", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(hardwareID, forKey: .hardwareID)
            try c.encode(failures, forKey: .failures)
            try c.encode(maxRework, forKey: .maxRework)
            try c.encode("unit \(hardwareID) is quarantined: it failed \(failures) time\(failures == 1 ? "" : "s") (max-rework \(maxRework)); release it with 'tuneup records release \(hardwareID)'", forKey: .message)
        case let .prompt(prompt):
            try c.encode("prompt", forKey: .event)
            try c.encode(prompt.slot, forKey: .slot)
            try c.encode(prompt, forKey: .prompt)
        case let .promptEnded(slot, id, step, answer, source):
            try c.encode("prompt-ended", forKey: .event)
            try c.encode(slot, forKey: .slot)
            try c.encode(id, forKey: .prompt)
            try c.encode(step, forKey: .step)
            try c.encodeIfPresent(answer, forKey: .answer)
            try c.encodeIfPresent(source, forKey: .source)
        case let .alarm(alarm):
            try c.encode("alarm", forKey: .event)
            try c.encode(alarm.kind.rawValue, forKey: .kind)
            try c.encodeIfPresent(alarm.measurement, forKey: .measurement)
            try c.encode((alarm.value * 10_000).rounded() / 10_000, forKey: .value)
            try c.encode(alarm.limit, forKey: .limit)
            try c.encode(alarm.window, forKey: .window)
            try c.encode(alarm.message, forKey: .message)
        }
    }
}
