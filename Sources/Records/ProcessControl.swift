import Foundation

/// A recipe's statistical process control limits (docs/recipe.md, `spc:`): over the last `window` units, every
/// measurement with limits must keep its Cpk at or above its minimum, and the first-pass yield at or above
/// `minFirstPassYield`.
public struct SPCLimits: Sendable, Hashable, Codable {
    /// How many of the latest units (and of each measurement's latest values) are judged, 2...10000.
    public var window: Int
    /// The least Cpk of every measurement with limits (nil: none, unless `measurements` names one).
    public var minCpk: Double?
    /// The least first-pass yield (0...1) over the window's units.
    public var minFirstPassYield: Double?
    /// Per measurement name, its own least Cpk (overriding `minCpk`; 0 turns the check off for it).
    public var measurements: [String: Double]

    public init(window: Int, minCpk: Double? = nil, minFirstPassYield: Double? = nil, measurements: [String: Double] = [:]) {
        (self.window, self.minCpk, self.minFirstPassYield, self.measurements) = (window, minCpk, minFirstPassYield, measurements)
    }

    /// The least Cpk `name` must keep, or nil when it is not judged.
    public func minCpk(for name: String) -> Double? {
        if let own = measurements[name] { return own > 0 ? own : nil }
        return minCpk
    }
}

/// Why a station stopped taking units: a measurement's Cpk or the first-pass yield over the window fell below its
/// limit.
public struct ProcessAlarm: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable { case cpk, firstPassYield = "first-pass-yield" }
    public var kind: Kind
    /// The measurement (for `cpk`).
    public var measurement: String?
    /// The figure over the window, and the limit it fell below.
    public var value: Double
    public var limit: Double
    /// Units (or values) judged.
    public var window: Int

    /// One line: "SPC alarm: mic-sensitivity-left Cpk 0.87 over the last 20 units is below 1.33".
    public var message: String {
        switch kind {
        case .cpk:
            "SPC alarm: \(measurement ?? "?") Cpk \(String(format: "%.2f", value)) over the last \(window) units is below \(ProcessWindow.format(limit))"
        case .firstPassYield:
            "SPC alarm: first-pass yield \(String(format: "%.1f", value * 100)) % over the last \(window) units is below \(String(format: "%g", limit * 100)) %"
        }
    }
}

/// One measurement's figures over a window.
public struct WindowFigures: Sendable, Hashable, Codable {
    public var name: String
    public var unit: String
    /// Values in the window (at most its size).
    public var count: Int
    public var mean: Double
    /// Sample standard deviation (n − 1).
    public var standardDeviation: Double
    /// The newest value's limits.
    public var low: Double?
    public var high: Double?
    /// `RecordsReport.cpk` of the window's values; nil without limits, with σ = 0 or fewer than two values.
    public var cpk: Double?
}

/// The latest units of a station (or of the records) for process control: the first-pass outcome of the last
/// `size` units and the last `size` values of each measurement. Pure: the station adds each finished unit, `records
/// spc` builds it from runs; `alarm(_:)` judges it against a recipe's limits.
public struct ProcessWindow: Sendable, Hashable {
    /// One finished unit: whether it passed the first time, and what it measured.
    public struct Sample: Sendable, Hashable {
        public var firstPass: Bool
        public var measurements: [RecordModel.Measurement]
        public init(firstPass: Bool, measurements: [RecordModel.Measurement]) { (self.firstPass, self.measurements) = (firstPass, measurements) }
    }

    public let size: Int
    /// The first-pass outcomes of the latest units, oldest first (at most `size`).
    public private(set) var firstPasses: [Bool] = []
    /// Per measurement, its latest values, oldest first (at most `size`).
    public private(set) var values: [String: [RecordModel.Measurement]] = [:]
    /// Measurement names in the order they were first seen.
    public private(set) var names: [String] = []

    public init(size: Int) { self.size = max(1, size) }

    /// Adds a finished unit (the oldest leaves a full window).
    public mutating func add(_ sample: Sample) {
        firstPasses.append(sample.firstPass)
        if firstPasses.count > size { firstPasses.removeFirst(firstPasses.count - size) }
        for m in sample.measurements where m.value.isFinite {
            if values[m.name] == nil { names.append(m.name) }
            values[m.name, default: []].append(m)
            if values[m.name]!.count > size { values[m.name]!.removeFirst(values[m.name]!.count - size) }
        }
    }

    /// First-passed units ÷ units in the window (nil when empty).
    public var firstPassYield: Double? {
        firstPasses.isEmpty ? nil : Double(firstPasses.filter { $0 }.count) / Double(firstPasses.count)
    }

    /// Each measurement's figures over its values in the window.
    public var figures: [WindowFigures] {
        names.map { name in
            let all = values[name]!
            let (mean, sigma) = Self.meanAndSigma(all.map(\.value))
            let newest = all.last!
            return WindowFigures(
                name: name, unit: newest.unit, count: all.count, mean: mean, standardDeviation: sigma, low: newest.low, high: newest.high,
                cpk: RecordsReport.cpk(mean: mean, sigma: sigma, count: all.count, low: newest.low, high: newest.high))
        }
    }

    /// The first limit the window breaks, judged only on full windows (`size` units for the yield, `size` values
    /// for a measurement): Cpk in measurement order first, then the first-pass yield. A measurement whose Cpk cannot
    /// be computed (σ = 0, no limits) is not judged.
    public func alarm(_ limits: SPCLimits) -> ProcessAlarm? {
        for figure in figures where figure.count >= size {
            guard let least = limits.minCpk(for: figure.name), let cpk = figure.cpk, cpk < least else { continue }
            return ProcessAlarm(kind: .cpk, measurement: figure.name, value: cpk, limit: least, window: size)
        }
        if let least = limits.minFirstPassYield, firstPasses.count >= size, let fpy = firstPassYield, fpy < least {
            return ProcessAlarm(kind: .firstPassYield, measurement: nil, value: fpy, limit: least, window: size)
        }
        return nil
    }

    /// The window over `runs` (each with its steps): every finished run (pass, fail, error) in start order is a
    /// unit; it passed the first time when it passed and its unit's first finished run among `runs` passed (the
    /// report's first pass: a rework's pass is none, a passing re-run of a unit that passed is one).
    public static func of(runs: [RunRecord], size: Int) -> ProcessWindow {
        var window = ProcessWindow(size: size)
        var first: [String: RunOutcome] = [:]
        for run in runs.sorted(by: { ($0.start.startedAt, $0.id) < ($1.start.startedAt, $1.id) })
        where run.outcome == .pass || run.outcome == .fail || run.outcome == .error {
            if first[run.start.hardwareID] == nil { first[run.start.hardwareID] = run.outcome }
            let firstPass = run.outcome == .pass && first[run.start.hardwareID] == .pass
            window.add(Sample(firstPass: firstPass, measurements: run.steps.flatMap(\.measurements)))
        }
        return window
    }

    /// Mean and sample standard deviation (n − 1; 0 for fewer than two values).
    public static func meanAndSigma(_ values: [Double]) -> (mean: Double, sigma: Double) {
        guard !values.isEmpty else { return (0, 0) }
        let n = Double(values.count)
        let mean = values.reduce(0, +) / n
        guard values.count > 1 else { return (mean, 0) }
        return (mean, (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / (n - 1)).squareRoot())
    }

    static func format(_ value: Double) -> String { String(format: "%g", value) }
}
