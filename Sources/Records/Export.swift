import Foundation
import Support

/// The records written out for other tools: JSON (one object per unit, with its identities and its runs, steps and
/// measurements), CSV (one row per measurement, a step without any on a row of its own), JUnit XML (a test suite per
/// run, a test case per step). docs/records.md shows each.
public enum RecordsExport {
    public enum Format: String, Sendable, CaseIterable {
        case json, csv, junit
    }

    /// `runs` (with steps) of `units` in `format`.
    public static func render(_ format: Format, units: [UnitRecord], runs: [RunRecord]) throws -> String {
        switch format {
        case .json: return try json(units: units, runs: runs)
        case .csv: return csv(units: units, runs: runs)
        case .junit: return junit(units: units, runs: runs)
        }
    }

    /// The encoder of every JSON the records produce: sorted keys, ISO 8601 times with milliseconds.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(timestamp(date))
        }
        return encoder
    }

    /// `2026-11-24T21:04:05.123Z`.
    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// Each unit with its identities and the given runs of it (with steps), as a JSON array.
    public static func json(units: [UnitRecord], runs: [RunRecord]) throws -> String {
        let byUnit = Dictionary(grouping: runs, by: \.start.hardwareID)
        let exported = units.compactMap { unit -> UnitRecord? in
            guard let own = byUnit[unit.hardwareID] else { return nil }
            var copy = unit
            copy.runs = own
            return copy
        }
        return String(decoding: try encoder.encode(exported), as: UTF8.self)
    }

    static let csvHeader = [
        "hardware_id", "serial", "bt_address", "run", "station", "slot", "operator", "run_outcome", "rework", "run_started",
        "step", "step_outcome", "retries", "step_started", "step_ended", "message",
        "measurement", "value", "unit", "low", "high", "marginal_low", "marginal_high", "measurement_outcome",
        "work_order", "lot", "fixture", "metadata", "attachments", "scan", "answers",
    ]

    /// RFC 4180: CRLF line ends, fields with a comma, quote, CR or LF quoted, quotes doubled.
    public static func csv(units: [UnitRecord], runs: [RunRecord]) -> String {
        let identities = Dictionary(uniqueKeysWithValues: units.map { ($0.hardwareID, $0.identities.filter { $0.state != .voided }) })
        func identity(_ hw: String, _ kind: IdentityKind) -> String { identities[hw]?.first { $0.kind == kind }?.value ?? "" }
        func number(_ value: Double?) -> String { value.map { String($0) } ?? "" }
        var rows = [csvHeader]
        for run in runs {
            let hw = run.start.hardwareID
            let head = [hw, identity(hw, .serial), identity(hw, .bluetoothAddress), run.id.description, run.start.station,
                        run.start.slot, run.start.operatorName, run.outcome?.rawValue ?? "open", String(run.reworkCount),
                        timestamp(run.start.startedAt)]
            // Traceability last (columns added in schema v3): metadata as `key=value; ...`, attachments by name.
            let trace = [run.start.workOrder ?? "", run.start.lot ?? "", run.start.fixture ?? "", Traceability.text(run.start.metadata),
                         run.attachments.map(\.name).joined(separator: "; ")]

                + answerFields(run.answers)
            for step in run.steps {
                let stepFields = [step.name, step.outcome.rawValue, String(step.retries), timestamp(step.startedAt),
                                  timestamp(step.endedAt), step.message]
                let measurements: [[String]] = step.measurements.map { m in
                    [m.name, String(m.value), m.unit, number(m.low), number(m.high), number(m.marginalLow), number(m.marginalHigh), m.outcome.rawValue]
                }
                for fields in measurements.isEmpty ? [Array(repeating: "", count: 8)] : measurements {
                    rows.append(head + stepFields + fields + trace)
                }
            }
        }
        return CSV.document(rows)
    }

    /// The CSV's operator answers (schema v5): the scanned codes, and each prompt's answer as `step=value`.
    static func answerFields(_ answers: [OperatorAnswer]) -> [String] {
        let scans: [String] = answers.filter { $0.kind == .scan }.map(\.value)
        let others: [String] = answers.filter { $0.kind != .scan }.map { "\($0.step)=\($0.value)" }
        return [scans.joined(separator: "; "), others.joined(separator: "; ")]
    }

    /// A `<testsuite>` per run (named by the unit's serial or hardware id and the run), a `<testcase>` per step:
    /// `<failure>` for fail, `<error>` for error and aborted, `<skipped>` for skipped; the measurements in
    /// `<system-out>`, one line each.
    public static func junit(units: [UnitRecord], runs: [RunRecord]) -> String {
        let serials = Dictionary(uniqueKeysWithValues: units.map { u in
            (u.hardwareID, u.identities.first { $0.kind == .serial && $0.state != .voided }?.value)
        })
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let failures = runs.flatMap(\.steps).filter { $0.outcome == .fail }.count
        let errors = runs.flatMap(\.steps).filter { $0.outcome == .error || $0.outcome == .aborted }.count
        xml += "<testsuites name=\"tuneup records\" tests=\"\(runs.flatMap(\.steps).count)\" failures=\"\(failures)\" errors=\"\(errors)\">\n"
        for run in runs {
            let hw = run.start.hardwareID
            let unit = serials[hw].flatMap { $0 } ?? hw
            let steps = run.steps
            let time = (run.endedAt ?? steps.last?.endedAt ?? run.start.startedAt).timeIntervalSince(run.start.startedAt)
            xml += "  <testsuite name=\"\(escape("\(unit) run \(run.id)"))\" tests=\"\(steps.count)\""
            xml += " failures=\"\(steps.filter { $0.outcome == .fail }.count)\""
            xml += " errors=\"\(steps.filter { $0.outcome == .error || $0.outcome == .aborted }.count)\""
            xml += " skipped=\"\(steps.filter { $0.outcome == .skipped }.count)\""
            xml += " timestamp=\"\(timestamp(run.start.startedAt))\" time=\"\(seconds(time))\" hostname=\"\(escape(run.start.station))\">\n"
            xml += "    <properties>\n"
            let answered: [(String, String)] = run.answers.map { a in
                (a.kind == .scan ? "scan" : "answer.\(a.step)", "\(a.value) (by \(a.answeredBy) on the \(a.source), \(timestamp(a.answeredAt)))")
            }
            let properties: [(String, String)] = [("hardware-id", hw), ("serial", serials[hw].flatMap { $0 } ?? ""), ("station", run.start.station),
                              ("slot", run.start.slot), ("operator", run.start.operatorName), ("outcome", run.outcome?.rawValue ?? "open"),
                              ("rework", String(run.reworkCount)), ("recipe-hash", run.start.recipeHash), ("tool-version", run.start.toolVersion)]
                + [("work-order", run.start.workOrder), ("lot", run.start.lot), ("fixture", run.start.fixture)].compactMap { name, value in value.map { (name, $0) } }
                + run.start.metadata.sorted { $0.key < $1.key }.map { ("metadata.\($0.key)", $0.value) }
                + run.attachments.map { ("attachment.\($0.name)", "\($0.mediaType), \($0.size) bytes, sha256 \($0.sha256)") }
                + answered
            for (name, value) in properties {
                xml += "      <property name=\"\(name)\" value=\"\(escape(value))\"/>\n"
            }
            xml += "    </properties>\n"
            for step in steps {
                xml += "    <testcase classname=\"\(escape(unit))\" name=\"\(escape(step.name))\" time=\"\(seconds(step.endedAt.timeIntervalSince(step.startedAt)))\">\n"
                switch step.outcome {
                case .fail: xml += "      <failure message=\"\(escape(step.message))\" type=\"fail\"/>\n"
                case .error, .aborted: xml += "      <error message=\"\(escape(step.message))\" type=\"\(step.outcome.rawValue)\"/>\n"
                case .skipped: xml += "      <skipped message=\"\(escape(step.message))\"/>\n"
                case .pass: break
                }
                if !step.measurements.isEmpty {
                    let lines = step.measurements.map { m in
                        "\(m.name) = \(m.value) \(m.unit) [\(m.low.map { String($0) } ?? "")...\(m.high.map { String($0) } ?? "")] \(m.outcome.rawValue)"
                    }
                    xml += "      <system-out>\(escape(lines.joined(separator: "\n")))</system-out>\n"
                }
                xml += "    </testcase>\n"
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }

    static func seconds(_ t: TimeInterval) -> String { String(format: "%.3f", max(0, t)) }

    /// XML text and attribute escaping (`Markup.escape`).
    static func escape(_ text: String) -> String { Markup.escape(text) }
}
