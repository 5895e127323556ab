import Foundation
import Recipe
import Records
import Synchronization

/// A question the station waits on (a scan or a recipe prompt), as the page and the terminal show it.
public struct OperatorPrompt: Sendable, Hashable, Encodable {
    public enum Kind: String, Sendable, Hashable, Encodable {
        case scan
        case passFail = "pass-fail"
        case value
    }

    /// Station-wide, from 1: `#N` on the terminal.
    public var id: Int
    public var slot: String
    public var hardwareID: String
    /// `scan` or `prompt:NAME`.
    public var step: String
    public var kind: Kind
    /// What the operator is asked.
    public var text: String
    /// The prompt's name when it has an image (the page serves it as `/image/NAME`).
    public var image: String?
    /// What is expected: the pattern, the limits and unit.
    public var hint: String?
    /// Why the last answer was not taken (shown until the next answer).
    public var refusal: String?
}

/// An accepted answer: what, from where, by whom, when.
public struct OperatorReply: Sendable, Hashable {
    public var accepted: OperatorInput.Accepted
    /// The answer as given (trimmed).
    public var text: String
    /// `page` or `terminal`.
    public var source: String
    public var answeredBy: String
    public var answeredAt: Date
}

/// What became of an answer handed to the desk.
public enum AnswerOutcome: Sendable, Hashable {
    case accepted(promptID: Int)
    /// Not taken: the prompt goes on waiting, with this reason shown.
    case refused(promptID: Int, reason: String)
    /// No prompt waits (or not that one: answered meanwhile, or the unit ended).
    case noPrompt(String)
}

/// No answer came within the prompt's `timeout:`.
public struct PromptTimedOut: Error, Sendable {
    public var after: Duration
}

/// Where the station's questions wait for the operator. The station asks (`ask`) and waits; the page and the
/// terminal answer (`answer`), each answer checked here with the prompt's own check (pattern, check digit, a code
/// bound to another unit) whoever sent it. A refused answer leaves the prompt waiting with the reason shown. No
/// timeout unless the recipe gives one; a cancelled wait (Ctrl-C, the unit's task) ends at once.
public final class OperatorDesk: Sendable {
    /// The check of an answer: accepted, or why not (it may look in the records: a code bound to another unit).
    public typealias Check = @Sendable (String) async -> Result<OperatorInput.Accepted, OperatorInput.Refusal>

    private struct Waiting {
        var prompt: OperatorPrompt
        var check: Check
        var continuation: CheckedContinuation<OperatorReply, any Error>?
        /// An answer is being checked (async: a records lookup): a second one waits its turn by being refused.
        var checking = false
    }

    private struct State {
        var next = 1
        var waiting: [Int: Waiting] = [:]
        var emit: (@Sendable (StationEvent) -> Void)?
    }

    private let state = Mutex(State())
    private let sleep: @Sendable (Duration) async throws -> Void
    /// Who answers, unless the answer says (the station's operator).
    let operatorName: Mutex<String>
    /// Who signed in on the operator page (nil: nobody did; the station's operator runs it).
    private let signedIn = Mutex<String?>(nil)

    /// - Parameter clock: the clock of prompt timeouts (a test's manual clock).
    public init<C: Clock>(clock: C = ContinuousClock()) where C.Duration == Duration {
        sleep = { try await clock.sleep(for: $0) }
        operatorName = Mutex("")
    }

    /// Events go to the station's listeners (set by the station).
    func attach(_ emit: @escaping @Sendable (StationEvent) -> Void, operatorName: String) {
        state.withLock { $0.emit = emit }
        self.operatorName.withLock { $0 = operatorName }
    }

    /// Signs `name` in as the station's operator (from the operator page): runs started from now on record it, and
    /// it gives the answers; nil signs out (back to the station's own operator, `--operator`). Returns why a name is
    /// refused (nothing changes then): empty, longer than 64 characters, or not one line.
    @discardableResult
    public func signIn(_ name: String?) -> String? {
        guard let name else {
            signedIn.withLock { $0 = nil }
            return nil
        }
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return "type a name to sign in" }
        if let problem = Traceability.problem(value: trimmed, what: "the operator's name", maxLength: 64) { return problem }
        signedIn.withLock { $0 = trimmed }
        return nil
    }

    /// Who signed in on the page (nil: nobody).
    public var signedInOperator: String? { signedIn.withLock { $0 } }

    /// Who operates the station now: who signed in on the page, else the station's operator.
    public var currentOperator: String { signedIn.withLock { $0 } ?? operatorName.withLock { $0 } }

    /// The prompts waiting now, oldest first.
    public var waiting: [OperatorPrompt] {
        state.withLock { $0.waiting.values.map(\.prompt).sorted { $0.id < $1.id } }
    }

    /// Asks and waits for an accepted answer (throws `CancellationError` when cancelled, `PromptTimedOut` after
    /// `timeout`).
    public func ask(
        slot: String, hardwareID: String, step: String, kind: OperatorPrompt.Kind, text: String, image: String?, hint: String?,
        timeout: Duration?, check: @escaping Check
    ) async throws -> OperatorReply {
        let id = state.withLock { s -> Int in
            defer { s.next += 1 }
            return s.next
        }
        let prompt = OperatorPrompt(id: id, slot: slot, hardwareID: hardwareID, step: step, kind: kind, text: text, image: image, hint: hint)
        let timer = timeout.map { limit in
            Task { [sleep] in
                try await sleep(limit)
                self.end(id, with: PromptTimedOut(after: limit))
            }
        }
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<OperatorReply, any Error>) in
                let (emit, cancelled) = state.withLock { s -> ((@Sendable (StationEvent) -> Void)?, Bool) in
                    if Task.isCancelled { return (nil, true) }
                    s.waiting[id] = Waiting(prompt: prompt, check: check, continuation: continuation)
                    return (s.emit, false)
                }
                if cancelled { continuation.resume(throwing: CancellationError()); return }
                emit?(.prompt(prompt))
            }
        } onCancel: {
            self.end(id, with: CancellationError())
        }
    }

    /// Ends a waiting prompt with an error (cancelled, timed out).
    private func end(_ id: Int, with error: any Error) {
        let (found, emit) = state.withLock { s in (s.waiting.removeValue(forKey: id), s.emit) }
        guard let found else { return }
        found.continuation?.resume(throwing: error)
        emit?(.promptEnded(slot: found.prompt.slot, id: id, step: found.prompt.step, answer: nil, source: nil))
    }

    /// Answers prompt `id` (nil: the oldest waiting one) with `text` from `source` (`page`, `terminal`).
    @discardableResult
    public func answer(_ text: String, to id: Int? = nil, source: String, by answeredBy: String? = nil) async -> AnswerOutcome {
        let taken = state.withLock { s -> (Int, Check?)? in
            guard let key = id ?? s.waiting.keys.min(), var entry = s.waiting[key] else { return nil }
            if entry.checking { return (key, nil) }
            entry.checking = true
            s.waiting[key] = entry
            return (key, entry.check)
        }
        guard let (key, found) = taken else {
            return .noPrompt(id.map { "no prompt #\($0) waits" } ?? "no prompt waits")
        }
        // Another answer to it is being checked (the page and the terminal at once): this one is not taken.
        guard let check = found else { return .refused(promptID: key, reason: "another answer to #\(key) is being checked") }
        let result = await check(text)
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let by = answeredBy ?? currentOperator
        let (outcome, event, resume): (AnswerOutcome, StationEvent?, (CheckedContinuation<OperatorReply, any Error>, OperatorReply)?) = state.withLock { s in
            guard var entry = s.waiting[key] else { return (.noPrompt("prompt #\(key) was answered meanwhile"), nil, nil) }
            switch result {
            case .success(let accepted):
                s.waiting[key] = nil
                let reply = OperatorReply(accepted: accepted, text: trimmed, source: source, answeredBy: by, answeredAt: Date())
                return (.accepted(promptID: key),
                        .promptEnded(slot: entry.prompt.slot, id: key, step: entry.prompt.step, answer: trimmed, source: source),
                        entry.continuation.map { ($0, reply) })
            case .failure(let refusal):
                entry.checking = false
                entry.prompt.refusal = refusal.message
                s.waiting[key] = entry
                return (.refused(promptID: key, reason: refusal.message), .prompt(entry.prompt), nil)
            }
        }
        let emit = state.withLock { $0.emit }
        resume.map { $0.0.resume(returning: $0.1) }
        if let event { emit?(event) }
        return outcome
    }
}

/// Answers typed on the station's terminal (or a barcode scanner's keystrokes and Enter): a line answers the oldest
/// waiting prompt; `#N TEXT` answers prompt N (when several slots wait at once).
public enum TerminalAnswers {
    /// Reads `lines` until they end, handing each to the desk; `report` gets one line for each answer not taken.
    public static func serve(_ lines: AsyncStream<String>, desk: OperatorDesk, report: @escaping @Sendable (String) -> Void) async {
        for await line in lines {
            let (id, text) = parse(line)
            if text.isEmpty && id == nil { continue }
            switch await desk.answer(text, to: id, source: "terminal") {
            case .accepted: break
            case let .refused(promptID, reason): report("#\(promptID): \(reason)")
            case let .noPrompt(why): report(why)
            }
        }
    }

    /// `#12 PASS` → (12, "PASS"); anything else → (nil, line).
    static func parse(_ line: String) -> (Int?, String) {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("#") else { return (nil, trimmed) }
        let rest = trimmed.dropFirst()
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let id = Int(digits) else { return (nil, trimmed) }
        return (id, rest.dropFirst(digits.count).trimmingCharacters(in: .whitespaces))
    }
}
