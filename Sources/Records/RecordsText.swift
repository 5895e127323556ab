import Foundation
import RecordModel

// What `tuneup records list`, `show` and `report` print, for people: a program using the library prints what tuneup
// prints without writing it again (the JSON is the values' own, through `RecordsExport.encoder`).

extension UnitRecord {
    /// The unit with its identities, releases, and its runs with their traceability, attachments, answers, steps
    /// and measurements (the runs as given: `show` reads each in full first).
    public var text: String {
        var lines = ["Unit \(hardwareID), first seen \(RecordsExport.timestamp(firstSeen))"]
        for identity in identities {
            lines.append("  \(identity.kind.rawValue) \(identity.value) (\(identity.state.rawValue), \(identity.station))")
        }
        for release in releases {
            lines.append("  released \(RecordsExport.timestamp(release.releasedAt)) by \(release.releasedBy) after \(release.failures) failed run\(release.failures == 1 ? "" : "s")"
                         + (release.reason.isEmpty ? "" : ": \(release.reason)"))
        }
        for run in runs {
            lines.append("Run \(run.id): \(run.outcome?.rawValue ?? "open") at \(run.start.station) slot \(run.start.slot), "
                         + "\(RecordsExport.timestamp(run.start.startedAt))" + (run.reworkCount > 0 ? ", rework \(run.reworkCount)" : "")
                         + (run.start.operatorName.isEmpty ? "" : ", operator \(run.start.operatorName)"))
            let trace = [("work order", run.start.workOrder), ("lot", run.start.lot), ("fixture", run.start.fixture)]
                .compactMap { name, value in value.map { "\(name) \($0)" } }
            if !trace.isEmpty { lines.append("  " + trace.joined(separator: ", ")) }
            if !run.start.metadata.isEmpty { lines.append("  metadata: " + Traceability.text(run.start.metadata)) }
            for a in run.attachments {
                lines.append("  attachment \(a.name) (\(a.mediaType), \(a.size) bytes, sha256 \(a.sha256.prefix(16))...)" + (a.step.map { " from \($0)" } ?? ""))
            }
            for a in run.answers {
                let what = a.kind == .scan ? "scanned \(a.label)" : "answered \(a.step)"
                lines.append("  \(what): \(a.value) (by \(a.answeredBy.isEmpty ? "?" : a.answeredBy) on the \(a.source), \(RecordsExport.timestamp(a.answeredAt)))")
            }
            // Names in full (padding(toLength:) also cuts), aligned on the run's longest.
            let width = max(24, run.steps.map(\.name.count).max() ?? 0)
            for step in run.steps {
                var line = "  \(step.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(step.outcome.rawValue)"
                if step.retries > 0 { line += " (\(step.retries) retr\(step.retries == 1 ? "y" : "ies"))" }
                if !step.message.isEmpty { line += "  \(step.message)" }
                lines.append(line)
                for m in step.measurements {
                    let limits = "\(m.low.map { String($0) } ?? "-inf")...\(m.high.map { String($0) } ?? "+inf")"
                    lines.append("      \(m.name) = \(m.value) \(m.unit) [\(limits)] \(m.outcome.rawValue)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension RecordsReport {
    /// The totals, yields and rate, then the tables: yield per step, the failure Pareto, the measurements.
    public var text: String {
        let r = self
        var lines = [
            "Units \(r.units), runs \(r.runs): passed \(r.passed), failed \(r.failed), errors \(r.errors), aborted \(r.aborted)"
                + (r.open > 0 ? ", open \(r.open)" : ""),
            "First-pass yield \(RecordsText.percent(r.firstPassYield)), final yield \(RecordsText.percent(r.finalYield)), "
                + "\(r.unitsPerHour.map { String(format: "%.0f", $0) } ?? "-") units/h",
        ]
        if !r.steps.isEmpty {
            lines += [""] + RecordsText.table(
                ["Step", "pass", "fail", "error", "skipped", "yield"],
                r.steps.map { [$0.step, "\($0.passed)", "\($0.failed)", "\($0.errors)", "\($0.skipped)", RecordsText.percent($0.yield)] })
        }
        if !r.pareto.isEmpty {
            lines += [""] + RecordsText.table(
                ["Failure (Pareto)", "count", "share", "cumulative"],
                r.pareto.map { [$0.cause, "\($0.count)", RecordsText.percent($0.share), RecordsText.percent($0.cumulative)] })
        }
        if !r.measurements.isEmpty {
            lines += [""] + RecordsText.table(
                ["Measurement", "n", "mean", "sigma", "min", "max", "limits", "Cpk", "marginal", "fail"],
                r.measurements.map { m in
                    let limits = "\(m.low.map { String(format: "%g", $0) } ?? "-inf")...\(m.high.map { String(format: "%g", $0) } ?? "+inf") \(m.unit)"
                    return [m.name, "\(m.count)", RecordsText.number(m.mean), String(format: "%.3f", m.standardDeviation), RecordsText.number(m.minimum),
                            RecordsText.number(m.maximum), limits, RecordsText.number(m.cpk), "\(m.marginal)", "\(m.failed)"]
                })
        }
        return lines.joined(separator: "\n")
    }

}

/// One unit in `records list`: its identities, runs, and its last run's outcome, station and time.
public struct UnitListEntry: Encodable, Sendable {
    public var hardwareID: String
    public var serial: String?
    public var bluetoothAddress: String?
    public var runs: Int
    public var lastOutcome: String?
    public var lastStation: String?
    public var lastStarted: String?

    /// Every unit of `units` (with a run of `station` when given), its runs counted at that station.
    public static func entries(_ units: [UnitRecord], station: String?) -> [UnitListEntry] {
        units.compactMap { unit in
            let runs = unit.runs.filter { station == nil || $0.start.station == station }
            guard station == nil || !runs.isEmpty else { return nil }
            let last = runs.last
            return UnitListEntry(
                hardwareID: unit.hardwareID, serial: unit.identity(.serial), bluetoothAddress: unit.identity(.bluetoothAddress),
                runs: runs.count, lastOutcome: last.map { $0.outcome?.rawValue ?? "open" }, lastStation: last?.start.station,
                lastStarted: last.map { RecordsExport.timestamp($0.start.startedAt) })
        }
    }

    /// The entry's line: its fields, "-" for what it lacks.
    public var line: String {
        [hardwareID, serial ?? "-", bluetoothAddress ?? "-", "\(runs) run\(runs == 1 ? "" : "s")", lastOutcome ?? "-", lastStation ?? "-",
         lastStarted ?? "-"].joined(separator: "  ")
    }
}

extension UnitRecord {
    /// The unit's value of `kind` that is not voided (the reserved or committed one).
    public func identity(_ kind: IdentityKind) -> String? {
        identities.first { $0.kind == kind && $0.state != .voided }?.value
    }
}

/// The records' numbers and tables for people.
public enum RecordsText {
    /// "97.5 %", "-" for none.
    public static func percent(_ value: Double?) -> String { value.map { String(format: "%.1f %%", $0 * 100) } ?? "-" }
    /// Two decimals, "-" for none.
    public static func number(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }

    /// Columns as wide as their widest cell: the first (a name) left-aligned, the rest right-aligned, except the
    /// limits, which read left to right.
    public static func table(_ header: [String], _ rows: [[String]]) -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { c in all.map { $0[c].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { c, cell in
                let pad = String(repeating: " ", count: widths[c] - cell.count)
                return c == 0 || header[c] == "limits" ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }
    }
}

/// `records spc`: the last units' first-pass yield and per measurement its mean, spread and Cpk over the window.
public struct ProcessWindowReport: Encodable, Sendable {
    public var window: Int
    public var units: Int
    public var firstPassYield: Double?
    public var measurements: [WindowFigures]

    /// The figures of the last `size` units of `runs`.
    public init(runs: [RunRecord], size: Int) {
        let processWindow = ProcessWindow.of(runs: runs, size: size)
        (window, units, firstPassYield, measurements) = (size, processWindow.firstPasses.count, processWindow.firstPassYield, processWindow.figures)
    }

    public var text: String {
        var lines = ["Last \(units) unit\(units == 1 ? "" : "s") (window \(window)): first-pass yield \(RecordsText.percent(firstPassYield))"]
        if !measurements.isEmpty {
            lines += [""] + RecordsText.table(
                ["Measurement", "n", "mean", "sigma", "limits", "Cpk"],
                measurements.map { m in
                    let limits = "\(m.low.map { String(format: "%g", $0) } ?? "-inf")...\(m.high.map { String(format: "%g", $0) } ?? "+inf") \(m.unit)"
                    return [m.name, "\(m.count)", RecordsText.number(m.mean), String(format: "%.3f", m.standardDeviation), limits, RecordsText.number(m.cpk)]
                })
        }
        return lines.joined(separator: "\n")
    }
}
