import Foundation
import Labels
import Progress
import Station
import Synchronization

/// Shows a station's events: on a terminal one live line per slot (slot, unit, step, progress, last result) under
/// the running totals, redrawn in place; otherwise one line per unit and per stop; with --format json every event
/// as a JSON Lines object.
public final class StationView: Sendable {
    private let json: Bool
    private let live: Bool
    /// The slots' lines and the totals (StationLiveView lays them out for the terminal's width).
    private let state = Mutex(StationLiveView())
    /// The live block on the terminal (`LiveScreen`: cut to its width and height).
    private let display = LiveDisplay()

    /// `live`: the live block on stdout (a terminal); `json`: every event as JSON Lines instead.
    public init(json: Bool, live: Bool) {
        (self.json, self.live) = (json, live)
    }

    public func show(_ event: StationEvent) {
        if json {
            if let line = try? Output.jsonLine(event) { Output.line(line) }
            return
        }
        let plain: String? = state.withLock { s in
            s.apply(event)
            switch event {
            case let .started(slots, recipe, _, station):
                return live ? nil : "station \(station): recipe \(recipe), \(slots.count) slot\(slots.count == 1 ? "" : "s")"
            case let .recovered(runs):
                return "closed \(runs.count) run\(runs.count == 1 ? "" : "s") a killed station left open (recorded as aborted)"
            case let .stepEnded(slot, hardwareID, step, outcome, message):
                guard !live, ["fail", "error"].contains(outcome) else { return nil }
                return "\(slot)  \(hardwareID)  \(step) \(outcome.uppercased()): \(message ?? "")"
            case let .finished(unit):
                return live ? nil : "\(unit.slot)  \(unit.hardwareID ?? "-")  \(StationLiveView.resultText(unit))"
            case let .stopping(reason):
                return "stopping: \(reason)"
            case let .prompt(prompt):
                // The operator answers on the terminal: a line answers the oldest prompt, `#N TEXT` prompt N.
                if let refusal = prompt.refusal { return "#\(prompt.id) not taken: \(refusal)" }
                return "#\(prompt.id) \(prompt.slot) (unit \(prompt.hardwareID)): \(prompt.text)" + (prompt.hint.map { " [\($0)]" } ?? "")
            case let .promptEnded(_, id, _, answer, source):
                return answer.map { "#\(id) answered on the \(source ?? "?"): \($0)" }
            case .waiting, .arrived, .runStarted, .identified, .stepStarted, .progress, .left, .totals:
                return nil
            case .quarantined:
                // Its `finished` (QUARANTINED ...) is the one line.
                return nil
            case .alarm:
                // Its `stopping` says why, in one line.
                return nil
            }
        }
        if let plain {
            if live { display.clear() }
            Output.line(plain)
        }
        if live { redraw(force: plain != nil) }
    }

    /// The line's database lost or regained (an outage): a line, or with --format json a `records` event
    /// (`status`: `lost` or `held`, `message`: the line), so a JSON reader learns of the outage too.
    public func records(_ status: String, _ text: String) {
        if json {
            struct Event: Encodable { var event = "records", status: String, message: String }
            if let line = try? Output.jsonLine(Event(status: status, message: text)) { Output.line(line) }
            return
        }
        note(text)
    }

    public func note(_ text: String) {
        if json { return }
        if live { display.clear() }
        Output.line(text)
    }

    /// A label printed, or not, for a unit that passed: a JSON `label` / `label-failed` event; otherwise a line for a
    /// failure, a missing preview, and (without the live view) every label.
    public func label(_ result: Result<PrintedLabel, LabelError>, slot: String, serial: String) {
        struct Event: Encodable {
            var event: String
            var slot: String
            var serial: String
            var files: [String]?
            var printer: PrinterAddress?
            var note: String?
            var message: String?
        }
        switch result {
        case .success(let printed):
            if json {
                let event = Event(event: "label", slot: slot, serial: serial, files: printed.files, printer: printed.printer, note: printed.previewProblem)
                if let line = try? Output.jsonLine(event) { Output.line(line) }
                return
            }
            if let problem = printed.previewProblem { note("label \(serial): \(problem)") }
            if !live {
                let places = printed.files.filter { $0.hasSuffix(".zpl") } + (printed.printer.map { [$0.description] } ?? [])
                note("label \(serial): \(places.joined(separator: ", "))")
            }
        case .failure(let error):
            if json {
                let event = Event(event: "label-failed", slot: slot, serial: serial, message: error.message)
                if let line = try? Output.jsonLine(event) { Output.line(line) }
                return
            }
            note("label \(serial) not printed: \(error.message)")
        }
    }

    /// The totals at the end (a last JSON event is the station's own `totals`). On a terminal the last frame of the
    /// live block ends with them, so they are printed once.
    public func summary(_ totals: StationTotals, stopReason: String?) {
        if json {
            if let line = try? Output.jsonLine(StationEvent.totals(totals)) { Output.line(line) }
            return
        }
        if live {
            state.withLock { $0.set(totals) }
            redraw(force: true)
        } else {
            Output.line(StationLiveView.totalsText(totals))
        }
    }

    /// Redraws at most 10 times a second (always when forced).
    private func redraw(force: Bool) {
        let columns = Console.columns()
        display.draw(force: force) { state.withLock { $0.lines(columns: columns) } }
    }
}
