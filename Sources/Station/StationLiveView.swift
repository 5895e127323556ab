import Foundation

/// A station's live view on a terminal: one line per slot (slot, unit, step with its progress, last result) under
/// the running totals, laid out for the terminal's width. It keeps the state the events give; drawing (and cutting
/// each line to the screen, `LiveRegion`) is the caller's.
///
/// On a narrow terminal the step, its progress and the result are what the operator needs: they are kept, and the
/// slot and the unit give way (each shortened to its end, `…:4300`; the unit left out when there is no room).
public struct StationLiveView: Sendable {
    /// What one slot's line shows.
    public struct SlotLine: Sendable, Hashable {
        public var unit = ""
        public var step = "waiting"
        public var fraction: Double?
        public var result = ""

        public init(unit: String = "", step: String = "waiting", fraction: Double? = nil, result: String = "") {
            (self.unit, self.step, self.fraction, self.result) = (unit, step, fraction, result)
        }
    }

    /// The slots in the order they were first named.
    public private(set) var order: [String] = []
    public private(set) var slots: [String: SlotLine] = [:]
    public private(set) var totals = StationTotals()

    public init() {}

    /// Takes a station event into the lines.
    public mutating func apply(_ event: StationEvent) {
        switch event {
        case let .started(slots, _, _, _):
            for slot in slots where self.slots[slot] == nil { order.append(slot); self.slots[slot] = SlotLine() }
        case let .waiting(slot):
            update(slot) { $0 = SlotLine(result: $0.result) }
        case let .arrived(slot, hardwareID):
            update(slot) { $0.unit = hardwareID; $0.step = StepName.identify; $0.fraction = nil }
        case let .stepStarted(slot, _, step):
            update(slot) { $0.step = step; $0.fraction = nil }
        case let .progress(slot, _, _, fraction):
            update(slot) { $0.fraction = fraction }
        case let .finished(unit):
            let text = Self.resultText(unit)
            update(unit.slot) { $0.step = "done"; $0.fraction = nil; $0.result = text }
        case let .left(slot):
            update(slot) { $0.unit = ""; $0.step = "waiting" }
        case let .totals(totals):
            self.totals = totals
        case let .prompt(prompt):
            update(prompt.slot) { $0.step = "\(prompt.step): answer #\(prompt.id)"; $0.fraction = nil }
        case let .promptEnded(slot, _, step, _, _):
            update(slot) { $0.step = step }
        case .recovered, .runStarted, .identified, .stepEnded, .stopping, .quarantined, .alarm:
            return
        }
    }

    /// The totals shown (the final ones at the end).
    public mutating func set(_ totals: StationTotals) { self.totals = totals }

    private mutating func update(_ slot: String, _ change: (inout SlotLine) -> Void) {
        if slots[slot] == nil { order.append(slot); slots[slot] = SlotLine() }
        change(&slots[slot]!)
    }

    /// The lines for a terminal `columns` wide (nil: unknown, 80 assumed): one per slot, cut to the width (one column
    /// is left free, as `LiveRegion` leaves it: a long result loses its end), then the totals.
    public func lines(columns: Int?) -> [String] {
        let width = max(8, (columns.flatMap { $0 >= 2 ? $0 : nil } ?? 80) - 1)
        let slotWidth = max(8, order.map(\.count).max() ?? 0)
        return order.map { String(Self.line(slot: $0, slotWidth: slotWidth, slots[$0] ?? SlotLine(), width: width).prefix(width)) }
            + [Self.totalsText(totals)]
    }

    /// One slot's line: the wide layout in columns when its slot, unit and step fit `width`, else the narrow one.
    static func line(slot: String, slotWidth: Int, _ line: SlotLine, width: Int) -> String {
        var step = line.step
        if let f = line.fraction { step += String(format: " %3d%%", Int(f * 100)) }
        // Wide: columns, when slot, unit and step fit (a long result is cut at its end, as ever).
        let head = pad(slot, slotWidth) + "  " + pad(line.unit, 16) + "  " + step
        if head.count <= width {
            let wide = pad(slot, slotWidth) + "  " + pad(line.unit, 16) + "  " + pad(step, 26) + "  " + line.result
            return String(wide.reversed().drop { $0 == " " }.reversed())
        }
        // Narrow: step, progress and result first; the slot (at least its last 6 characters) and the unit share
        // what is left. A result longer than the rest of the line is cut at its end.
        let step1 = step.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "  ", with: " ")
        var room = width - step1.count - (line.result.isEmpty ? 0 : 1 + line.result.count) - 1
        let slotWidth = min(slot.count, max(6, room / 2))
        room -= slotWidth
        let unitWidth = room - 1 >= 4 ? min(line.unit.count, room - 1) : 0
        var text = tail(slot, slotWidth) + " "
        if unitWidth > 0, !line.unit.isEmpty { text += tail(line.unit, unitWidth) + " " }
        text += step1
        if !line.result.isEmpty { text += " " + line.result }
        return text
    }

    /// The last `n` characters of `text`, with "…" for what was left out.
    static func tail(_ text: String, _ n: Int) -> String {
        guard text.count > n else { return text }
        guard n > 1 else { return String(text.suffix(max(0, n))) }
        return "…" + text.suffix(n - 1)
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// A finished unit's result, as its line and the plain output say it.
    public static func resultText(_ unit: UnitResult) -> String {
        switch unit.outcome {
        case .pass:
            return "PASS \(unit.serial ?? "") in \(String(format: "%.1f", unit.seconds)) s: take it out"
        case .fail, .error:
            return "\(unit.outcome.rawValue.uppercased()) at \(unit.failedStep ?? "?"): \(unit.message ?? "")"
        case .aborted:
            return "ABORTED at \(unit.failedStep ?? "?")"
        case .quarantined:
            return "QUARANTINED: \(unit.message ?? "release it with 'tuneup records release'")"
        }
    }

    /// The running totals in one line (`-` units/h before the station has run a minute).
    public static func totalsText(_ t: StationTotals) -> String {
        var text = "passed \(t.passed), failed \(t.failed), errors \(t.errors)"
        if t.aborted > 0 { text += ", aborted \(t.aborted)" }
        if t.quarantined > 0 { text += ", quarantined \(t.quarantined)" }
        text += ", \(t.unitsPerHour.map { String(format: "%.0f", $0) } ?? "-") units/h"
        if let fpy = t.firstPassYield { text += String(format: ", first-pass yield %.1f %%", fpy * 100) }
        if let mean = t.stationShareMean, let max = t.stationShareMax {
            text += String(format: ", station time %.1f %% of unit time (max %.1f %%)", mean * 100, max * 100)
        }
        return text
    }
}
