import Foundation
import Logging
import PostgresNIO
import Synchronization

// The line's live status (`tuneup line serve`): which stations are alive, by their heartbeat in the `stations` table
// (migration v4-station-heartbeat, Schema.swift), and what the line did lately, read from a PostgreSQL line's records.

/// What a line did lately, and which of its stations are alive: the line dashboard's content.
public struct LineStatus: Sendable, Hashable, Encodable {
    public struct Station: Sendable, Hashable, Encodable {
        public var station: String
        /// Its heartbeat is at most `aliveWithin` old and it did not say it stopped.
        public var alive: Bool
        /// Seconds since its last heartbeat (nil: it never sent one, its runs are older than the heartbeat).
        public var lastSeen: Double?
        public var stopped: Bool
        /// Finished runs (pass, fail, error) in the window.
        public var units: Int
        public var passed: Int
        public var failed: Int
        public var errors: Int
        /// units × 3600 / seconds from the first of them started to now.
        public var unitsPerHour: Double?
        /// passed / units.
        public var yield: Double?
        /// Of the runs that were their unit's first try (no earlier failed run): passed / all.
        public var firstPassYield: Double?
    }

    public struct Totals: Sendable, Hashable, Encodable {
        public var database: String
        public var windowMinutes: Double
        public var stations: Int
        public var alive: Int
        public var units: Int
        public var passed: Int
        public var unitsPerHour: Double?
        public var yield: Double?
        public var firstPassYield: Double?

        public init(database: String, windowMinutes: Double, stations: Int, alive: Int, units: Int, passed: Int,
                    unitsPerHour: Double? = nil, yield: Double? = nil, firstPassYield: Double? = nil) {
            (self.database, self.windowMinutes, self.stations, self.alive, self.units, self.passed) = (database, windowMinutes, stations, alive, units, passed)
            (self.unitsPerHour, self.yield, self.firstPassYield) = (unitsPerHour, yield, firstPassYield)
        }
    }

    public struct Unit: Sendable, Hashable, Encodable {
        public var run: Int64
        public var station: String
        public var slot: String
        public var hardwareID: String
        public var serial: String?
        public var operatorName: String
        public var outcome: String
        public var endedAt: Date?
        public var seconds: Double?
        public var failedStep: String?
        public var message: String?

        private enum CodingKeys: String, CodingKey {
            case run, station, slot, hardwareID, serial, operatorName = "operator", outcome, endedAt, seconds, failedStep, message
        }
    }

    public var line: Totals
    public var stations: [Station]
    public var pareto: [RecordsReport.Cause]
    /// Per measurement over the line's last `cpkRuns` finished runs (limits of the newest value).
    public var cpk: [RecordsReport.MeasurementStats]
    public var units: [Unit]
}

extension PostgresRecordStore {
    /// The station's heartbeat: its row in `stations` gets the server's time now (`started` on its first beat).
    /// `stopped`: the station stops cleanly (the dashboard shows it stopped, not silent).
    public func beat(station: String, startedAt: Date, slots: Int = 0, recipeHash: String = "", toolVersion: String = "", stopped: Bool = false) async throws {
        _ = try await lineTransaction { c, logger in
            try await c.query("""
                INSERT INTO stations (station, started_at, last_seen, stopped_at, slots, recipe_hash, tool_version)
                VALUES (\(station), \(startedAt), now(), CASE WHEN \(stopped) THEN now() END, \(Int64(slots)), \(recipeHash), \(toolVersion))
                ON CONFLICT (station) DO UPDATE SET started_at = excluded.started_at, last_seen = excluded.last_seen,
                    stopped_at = excluded.stopped_at, slots = excluded.slots, recipe_hash = excluded.recipe_hash,
                    tool_version = excluded.tool_version
                """, logger: logger)
        }
    }

    /// The line's status now: stations (alive when their heartbeat is at most `aliveWithin` old), counts and yields
    /// of the runs that ended in the last `window`, the failure Pareto of those runs, Cpk per measurement over the
    /// last `cpkRuns` finished runs, and the last `lastUnits` finished runs.
    public func lineStatus(window: Duration = .seconds(3600), aliveWithin: Duration = .seconds(10), cpkRuns: Int = 50,
                           lastUnits: Int = 20) async throws -> LineStatus {
        let windowSeconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        let aliveSeconds = Double(aliveWithin.components.seconds) + Double(aliveWithin.components.attoseconds) / 1e18
        let database = name
        return try await lineTransaction { c, logger in
            // Heartbeats.
            var stations: [String: LineStatus.Station] = [:]
            for try await (station, age, stopped) in try await c.query("""
                SELECT station, EXTRACT(EPOCH FROM now() - last_seen)::float8, stopped_at IS NOT NULL FROM stations
                """, logger: logger).decode((String, Double, Bool).self) {
                stations[station] = LineStatus.Station(
                    station: station, alive: !stopped && age <= aliveSeconds, lastSeen: max(0, age), stopped: stopped, units: 0, passed: 0,
                    failed: 0, errors: 0)
            }
            // The window's runs, per station.
            var firstStart: [String: Double] = [:]
            var lineFirstRuns = 0, lineFirstPassed = 0
            for try await (station, passed, failed, errors, firstRuns, firstPassed, span) in try await c.query("""
                SELECT station,
                       count(*) FILTER (WHERE outcome = 'pass'), count(*) FILTER (WHERE outcome = 'fail'),
                       count(*) FILTER (WHERE outcome = 'error'), count(*) FILTER (WHERE rework_count = 0),
                       count(*) FILTER (WHERE rework_count = 0 AND outcome = 'pass'),
                       EXTRACT(EPOCH FROM now() - min(started_at))::float8
                FROM runs WHERE outcome IN ('pass', 'fail', 'error') AND ended_at >= now() - make_interval(secs => \(windowSeconds))
                GROUP BY station
                """, logger: logger).decode((String, Int64, Int64, Int64, Int64, Int64, Double).self) {
                var s = stations[station] ?? LineStatus.Station(
                    station: station, alive: false, lastSeen: nil, stopped: false, units: 0, passed: 0, failed: 0, errors: 0)
                (s.passed, s.failed, s.errors) = (Int(passed), Int(failed), Int(errors))
                s.units = s.passed + s.failed + s.errors
                s.yield = s.units == 0 ? nil : Double(s.passed) / Double(s.units)
                s.firstPassYield = firstRuns == 0 ? nil : Double(firstPassed) / Double(firstRuns)
                s.unitsPerHour = Throughput.unitsPerHour(s.units, seconds: span)
                firstStart[station] = span
                lineFirstRuns += Int(firstRuns)
                lineFirstPassed += Int(firstPassed)
                stations[station] = s
            }
            let list = stations.values.sorted { $0.station < $1.station }
            let units = list.map(\.units).reduce(0, +), passed = list.map(\.passed).reduce(0, +)
            let totals = LineStatus.Totals(
                database: database, windowMinutes: windowSeconds / 60, stations: list.count, alive: list.filter(\.alive).count,
                units: units, passed: passed,
                unitsPerHour: firstStart.values.max().flatMap { Throughput.unitsPerHour(units, seconds: $0) },
                yield: units == 0 ? nil : Double(passed) / Double(units),
                firstPassYield: lineFirstRuns == 0 ? nil : Double(lineFirstPassed) / Double(lineFirstRuns))

            // The Pareto of the window's failing runs: the failing step's failing measurement, else the step
            // (RecordsReport.cause).
            var counts: [(String, Int)] = []
            for try await (cause, count) in try await c.query("""
                SELECT COALESCE(m.name, s.name, '(no step)'), count(*)
                FROM runs r
                LEFT JOIN LATERAL (SELECT id, name FROM steps WHERE run_id = r.id AND outcome IN ('fail', 'error') ORDER BY id DESC LIMIT 1) s ON true
                LEFT JOIN LATERAL (SELECT name FROM measurements WHERE step_id = s.id AND outcome = 'fail' ORDER BY id LIMIT 1) m ON true
                WHERE r.outcome IN ('fail', 'error') AND r.ended_at >= now() - make_interval(secs => \(windowSeconds))
                GROUP BY 1
                """, logger: logger).decode((String, Int64).self) {
                counts.append((cause, Int(count)))
            }
            let failing = Double(counts.map(\.1).reduce(0, +))
            var cumulative = 0.0
            let pareto = counts.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.map { cause, count in
                cumulative += Double(count) / failing
                return RecordsReport.Cause(cause: cause, count: count, share: Double(count) / failing, cumulative: min(1, cumulative))
            }

            // Cpk per measurement over the last finished runs.
            var values: [String: [RecordModel.Measurement]] = [:]
            var order: [String] = []
            for try await (name, unit, value, low, high, outcome) in try await c.query("""
                SELECT m.name, m.unit, m.value, m.low, m.high, m.outcome
                FROM measurements m JOIN steps s ON s.id = m.step_id
                WHERE s.run_id IN (SELECT id FROM runs WHERE outcome IN ('pass', 'fail', 'error') ORDER BY ended_at DESC, id DESC LIMIT \(Int64(cpkRuns)))
                ORDER BY m.id
                """, logger: logger).decode((String, String, Double, Double?, Double?, String).self) where value.isFinite {
                if values[name] == nil { order.append(name) }
                values[name, default: []].append(RecordModel.Measurement(
                    name: name, value: value, unit: unit, low: low, high: high, outcome: MeasurementOutcome(rawValue: outcome) ?? .pass))
            }
            let cpk = order.map { name -> RecordsReport.MeasurementStats in
                let all = values[name]!
                let v = all.map(\.value), newest = all.last!
                let n = Double(v.count), mean = v.reduce(0, +) / n
                let sigma = v.count < 2 ? 0 : (v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / (n - 1)).squareRoot()
                return RecordsReport.MeasurementStats(
                    name: name, unit: newest.unit, count: v.count, mean: mean, standardDeviation: sigma, minimum: v.min()!, maximum: v.max()!,
                    low: newest.low, high: newest.high,
                    cpk: RecordsReport.cpk(mean: mean, sigma: sigma, count: v.count, low: newest.low, high: newest.high),
                    marginal: all.filter { $0.outcome == .marginal }.count, failed: all.filter { $0.outcome == .fail }.count)
            }

            // The last units.
            var last: [LineStatus.Unit] = []
            for try await (id, station, slot, hardwareID, operatorName, outcome, started, ended, serial, step, message) in try await c.query("""
                SELECT r.id, r.station, r.slot, r.hardware_id, r.operator, r.outcome, r.started_at, r.ended_at,
                       (SELECT value FROM identities i WHERE i.hardware_id = r.hardware_id AND i.kind = 'serial' AND i.state <> 'voided'
                        ORDER BY i.id DESC LIMIT 1),
                       s.name, s.message
                FROM runs r
                LEFT JOIN LATERAL (SELECT name, message FROM steps WHERE run_id = r.id AND outcome IN ('fail', 'error') ORDER BY id DESC LIMIT 1) s ON true
                WHERE r.outcome IS NOT NULL
                ORDER BY r.ended_at DESC, r.id DESC LIMIT \(Int64(lastUnits))
                """, logger: logger).decode((Int64, String, String, String, String, String, Date, Date?, String?, String?, String?).self) {
                last.append(LineStatus.Unit(
                    run: id, station: station, slot: slot, hardwareID: hardwareID, serial: serial, operatorName: operatorName, outcome: outcome,
                    endedAt: ended?.toMilliseconds, seconds: ended.map { ($0.timeIntervalSince(started) * 10).rounded() / 10 },
                    failedStep: step, message: message.flatMap { $0.isEmpty ? nil : $0 }))
            }
            return LineStatus(line: totals, stations: list, pareto: pareto, cpk: cpk, units: last)
        }
    }
}

/// A running station's heartbeat on the line's database: a beat every `interval` (a failed beat is tried again at
/// the next; the station goes on whatever the server does), and a last one that says it stopped.
public final class StationHeartbeat: Sendable {
    private let task: Task<Void, Never>
    private let server: PostgresRecordStore
    private let station: String
    private let startedAt: Date
    private let slots: Int
    private let toolVersion: String

    /// Whether the server took the last beat.
    private let answered: Answered

    private final class Answered: Sendable {
        let value = Mutex(false)
    }

    private init(task: Task<Void, Never>, server: PostgresRecordStore, station: String, startedAt: Date, slots: Int, toolVersion: String,
                 answered: Answered) {
        (self.task, self.server, self.station, self.startedAt) = (task, server, station, startedAt)
        (self.slots, self.toolVersion) = (slots, toolVersion)
        self.answered = answered
    }

    public static func start(_ server: PostgresRecordStore, station: String, slots: Int = 0, toolVersion: String = "",
                             interval: Duration = .seconds(2)) -> StationHeartbeat {
        let startedAt = Date()
        let answered = Answered()
        let task = Task {
            while !Task.isCancelled {
                let ok = (try? await server.beat(station: station, startedAt: startedAt, slots: slots, toolVersion: toolVersion)) != nil
                answered.value.withLock { $0 = ok }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
        return StationHeartbeat(task: task, server: server, station: station, startedAt: startedAt, slots: slots, toolVersion: toolVersion,
                                answered: answered)
    }

    /// Stops beating and marks the station stopped, when the server took the last beat (a server that is away
    /// does not hold the station's end up: the dashboard then shows the station silent).
    public func stop() async {
        task.cancel()
        await task.value
        guard answered.value.withLock({ $0 }) else { return }
        try? await server.beat(station: station, startedAt: startedAt, slots: slots, toolVersion: toolVersion, stopped: true)
    }
}
