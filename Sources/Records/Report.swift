import Foundation

/// What a line did, computed from its runs (with their steps): counts and yields, units per hour, yield per step,
/// the failure Pareto, and per measurement its mean, spread and process capability against its limits. Pure: the
/// runs come from any `RecordStore` (`RecordsReport.load`). docs/records.md gives the definitions.
public struct RecordsReport: Sendable, Hashable, Encodable {
    /// One step name's outcomes over every run.
    public struct StepYield: Sendable, Hashable, Encodable {
        public var step: String
        public var passed: Int
        public var failed: Int
        public var errors: Int
        public var skipped: Int
        /// passed / (passed + failed + errors); nil when the step never ran to a verdict.
        public var yield: Double?
    }

    /// One cause of failing runs.
    public struct Cause: Sendable, Hashable, Encodable {
        /// The failing measurement's name, else the failing step's name.
        public var cause: String
        public var count: Int
        /// count / all failing runs.
        public var share: Double
        /// The shares of this cause and every one before it.
        public var cumulative: Double
    }

    /// One measurement's statistics against its limits.
    public struct MeasurementStats: Sendable, Hashable, Encodable {
        public var name: String
        public var unit: String
        public var count: Int
        public var mean: Double
        /// Sample standard deviation (n - 1); 0 for a single value.
        public var standardDeviation: Double
        public var minimum: Double
        public var maximum: Double
        /// The limits of the newest value (a recipe's limits may change between runs).
        public var low: Double?
        public var high: Double?
        /// min(high - mean, mean - low) / 3σ, one-sided when one limit is open; nil without limits, with σ = 0 or
        /// fewer than two values.
        public var cpk: Double?
        public var marginal: Int
        public var failed: Int
    }

    /// Distinct units with a run.
    public var units: Int
    public var runs: Int
    public var passed: Int
    public var failed: Int
    public var errors: Int
    public var aborted: Int
    /// Runs still open (a station is provisioning the unit, or was killed and not restarted).
    public var open: Int
    /// Units whose first finished run (pass, fail or error; aborted runs do not count) passed, over the units with a
    /// finished run.
    public var firstPassYield: Double?
    /// Units whose last finished run passed, over the units with a finished run.
    public var finalYield: Double?
    /// Units with a finished run per hour, from the first run's start to the last run's end (`Throughput`: nil over
    /// less than a minute).
    public var unitsPerHour: Double?
    public var steps: [StepYield]
    public var pareto: [Cause]
    public var measurements: [MeasurementStats]

    /// The report of `runs` (each with its steps, in the order they were recorded).
    public init(runs: [RunRecord]) {
        self.runs = runs.count
        units = Set(runs.map(\.start.hardwareID)).count
        passed = runs.filter { $0.outcome == .pass }.count
        failed = runs.filter { $0.outcome == .fail }.count
        errors = runs.filter { $0.outcome == .error }.count
        aborted = runs.filter { $0.outcome == .aborted }.count
        open = runs.filter { $0.outcome == nil }.count

        let finished = runs.filter { [.pass, .fail, .error].contains($0.outcome) }.sorted { $0.start.startedAt < $1.start.startedAt }
        var firstOutcome: [String: RunOutcome] = [:], lastOutcome: [String: RunOutcome] = [:]
        for run in finished {
            if firstOutcome[run.start.hardwareID] == nil { firstOutcome[run.start.hardwareID] = run.outcome }
            lastOutcome[run.start.hardwareID] = run.outcome
        }
        let finishedUnits = Double(firstOutcome.count)
        firstPassYield = firstOutcome.isEmpty ? nil : Double(firstOutcome.values.filter { $0 == .pass }.count) / finishedUnits
        finalYield = lastOutcome.isEmpty ? nil : Double(lastOutcome.values.filter { $0 == .pass }.count) / finishedUnits
        if let start = runs.map(\.start.startedAt).min(), let end = finished.compactMap(\.endedAt).max() {
            unitsPerHour = Throughput.unitsPerHour(firstOutcome.count, seconds: end.timeIntervalSince(start))
        }

        steps = Self.stepYields(runs)
        pareto = Self.pareto(runs.filter { $0.outcome == .fail || $0.outcome == .error })
        measurements = Self.measurementStats(runs)
    }

    private static func stepYields(_ runs: [RunRecord]) -> [StepYield] {
        var order: [String] = []
        var byName: [String: StepYield] = [:]
        for step in runs.flatMap(\.steps) {
            if byName[step.name] == nil {
                order.append(step.name)
                byName[step.name] = StepYield(step: step.name, passed: 0, failed: 0, errors: 0, skipped: 0)
            }
            switch step.outcome {
            case .pass: byName[step.name]!.passed += 1
            case .fail: byName[step.name]!.failed += 1
            case .error: byName[step.name]!.errors += 1
            case .skipped: byName[step.name]!.skipped += 1
            case .aborted: break
            }
        }
        return order.map { name in
            var y = byName[name]!
            let verdicts = y.passed + y.failed + y.errors
            y.yield = verdicts == 0 ? nil : Double(y.passed) / Double(verdicts)
            return y
        }
    }

    /// The cause of a failing run: its failing step's failing measurement, else the step; "(no step)" when it
    /// failed before any step was recorded.
    static func cause(of run: RunRecord) -> String {
        guard let step = run.steps.last(where: { $0.outcome == .fail || $0.outcome == .error }) else { return "(no step)" }
        return step.measurements.first { $0.outcome == .fail }?.name ?? step.name
    }

    private static func pareto(_ failing: [RunRecord]) -> [Cause] {
        var counts: [String: Int] = [:]
        for run in failing { counts[cause(of: run), default: 0] += 1 }
        let total = Double(failing.count)
        var cumulative = 0.0
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { cause, count in
            let share = Double(count) / total
            cumulative += share
            return Cause(cause: cause, count: count, share: share, cumulative: min(1, cumulative))
        }
    }

    private static func measurementStats(_ runs: [RunRecord]) -> [MeasurementStats] {
        var order: [String] = []
        var byName: [String: [RecordModel.Measurement]] = [:]
        for m in runs.flatMap({ $0.steps.flatMap(\.measurements) }) where m.value.isFinite {
            if byName[m.name] == nil { order.append(m.name) }
            byName[m.name, default: []].append(m)
        }
        return order.map { name in
            let all = byName[name]!
            let values = all.map(\.value)
            let newest = all.last!
            let n = Double(values.count)
            let mean = values.reduce(0, +) / n
            let sigma = values.count < 2 ? 0 : (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / (n - 1)).squareRoot()
            return MeasurementStats(
                name: name, unit: newest.unit, count: values.count, mean: mean, standardDeviation: sigma,
                minimum: values.min()!, maximum: values.max()!, low: newest.low, high: newest.high,
                cpk: cpk(mean: mean, sigma: sigma, count: values.count, low: newest.low, high: newest.high),
                marginal: all.filter { $0.outcome == .marginal }.count, failed: all.filter { $0.outcome == .fail }.count)
        }
    }

    /// Process capability: the distance from the mean to the nearer limit in units of 3σ.
    public static func cpk(mean: Double, sigma: Double, count: Int, low: Double?, high: Double?) -> Double? {
        guard count >= 2, sigma > 0, low != nil || high != nil else { return nil }
        let sides = [high.map { ($0 - mean) / (3 * sigma) }, low.map { (mean - $0) / (3 * sigma) }].compactMap { $0 }
        return sides.min()
    }
}

/// Which runs a report or an export covers.
public struct RecordsFilter: Sendable, Hashable {
    public var station: String?
    public var hardwareID: String?
    public var outcome: RunOutcome?
    public var since: Date?
    public var until: Date?

    public init(station: String? = nil, hardwareID: String? = nil, outcome: RunOutcome? = nil, since: Date? = nil, until: Date? = nil) {
        (self.station, self.hardwareID, self.outcome, self.since, self.until) = (station, hardwareID, outcome, since, until)
    }

    public func admits(_ run: RunRecord) -> Bool {
        (outcome.map { run.outcome == $0 } ?? true)
            && (since.map { run.start.startedAt >= $0 } ?? true)
            && (until.map { run.start.startedAt < $0 } ?? true)
    }
}

extension RecordStore {
    /// The runs `filter` admits, oldest first, each with its steps and measurements.
    public func runsWithSteps(_ filter: RecordsFilter = .init()) async throws -> [RunRecord] {
        var result: [RunRecord] = []
        for run in try await runs(hardwareID: filter.hardwareID, station: filter.station) where filter.admits(run) {
            if let full = try await self.run(run.id) { result.append(full) }
        }
        return result
    }
}
