import Foundation
import Recipe
import Records

/// The steps that wait for the operator: the scan that binds a code to the unit, and the recipe's prompts. The
/// answer is checked by the desk (whoever gave it), recorded with the run (who, from where, when) and judged here.
extension UnitRun {
    /// `scan`: waits for a code that matches the recipe's pattern and check digit and (unless the recipe allows it)
    /// is bound to no other unit; records it with the run.
    func scan(_ spec: ProvisioningRecipe.ScanSpec, hardwareID: String, run: RunID, record: inout StepRecord) async throws -> StepOutcome {
        let store = station.store
        let hint = spec.checkDigit.map { "\(spec.pattern), \($0.rawValue) check digit" } ?? spec.pattern
        let reply = try await wait(spec.timeout) {
            try await station.desk.ask(
                slot: slot.name, hardwareID: hardwareID, step: StepName.scan, kind: .scan, text: "Scan the \(spec.label)", image: nil,
                hint: hint, timeout: spec.timeout
            ) { text in
                let checked = OperatorInput.check(text, for: spec)
                guard case .success(.code(let code)) = checked, !spec.allowDuplicates else { return checked }
                do {
                    if let other = try await store.bindings(ofCode: code).first(where: { $0.hardwareID != hardwareID }) {
                        return .failure(OperatorInput.Refusal("\(spec.label) \(code) is bound to unit \(other.hardwareID) already (run \(other.run))"))
                    }
                } catch {
                    return .failure(OperatorInput.Refusal("the records cannot say whether \(code) is bound to another unit: \(describe(error))"))
                }
                return checked
            }
        }
        try await recordAnswer(OperatorAnswer(
            step: StepName.scan, kind: .scan, label: spec.label, value: reply.text, answeredBy: reply.answeredBy, source: reply.source,
            answeredAt: reply.answeredAt), run: run)
        record.message = "\(spec.label) \(reply.text)"
        return .pass
    }

    /// `prompt:NAME`: waits for PASS/FAIL or a value; FAIL, or a value outside the prompt's limits, fails the unit here.
    func ask(_ prompt: ProvisioningRecipe.PromptSpec, hardwareID: String, run: RunID, record: inout StepRecord) async throws -> StepOutcome {
        var hint: String?
        switch prompt.answer {
        case .passFail: hint = "pass or fail"
        case .value:
            let limits = prompt.limits.map { "\(Self.format($0)) \(prompt.unit?.rawValue ?? "")" }
            hint = [prompt.pattern, limits].compactMap { $0 }.joined(separator: ", ")
            if hint?.isEmpty == true { hint = nil }
        }
        let kind: OperatorPrompt.Kind = prompt.answer == .passFail ? .passFail : .value
        let reply = try await wait(prompt.timeout) {
            try await station.desk.ask(
                slot: slot.name, hardwareID: hardwareID, step: prompt.step, kind: kind, text: prompt.text,
                image: prompt.image == nil ? nil : prompt.name, hint: hint, timeout: prompt.timeout
            ) { text in OperatorInput.check(text, for: prompt) }
        }
        let by = reply.answeredBy.isEmpty ? "the operator" : reply.answeredBy
        switch reply.accepted {
        case .passFail(let passed):
            try await recordAnswer(OperatorAnswer(
                step: prompt.step, kind: .passFail, label: prompt.text, value: passed ? "pass" : "fail", answeredBy: reply.answeredBy,
                source: reply.source, answeredAt: reply.answeredAt), run: run)
            guard passed else { throw StepStop(outcome: .fail, message: "\(by) answered FAIL on the \(reply.source): \(prompt.text)") }
            record.message = "PASS (\(by) on the \(reply.source))"
            return .pass
        case .value(let text, let number):
            return try await valueAnswer(prompt, reply: reply, text: text, number: number, by: by, run: run, record: &record)
        case .code(let text):
            return try await valueAnswer(prompt, reply: reply, text: text, number: nil, by: by, run: run, record: &record)
        }
    }

    private func valueAnswer(
        _ prompt: ProvisioningRecipe.PromptSpec, reply: OperatorReply, text: String, number: Double?, by: String, run: RunID,
        record: inout StepRecord
    ) async throws -> StepOutcome {
            try await recordAnswer(OperatorAnswer(
                step: prompt.step, kind: .value, label: prompt.text, value: text, answeredBy: reply.answeredBy, source: reply.source,
                answeredAt: reply.answeredAt), run: run)
            record.message = "\(text) (\(by) on the \(reply.source))"
            guard let limits = prompt.limits, let number = number else { return .pass }
            let passes = limits.contains(number)
            record.measurements.append(Measurement(
                name: prompt.name, value: number, unit: prompt.unit?.rawValue ?? "none", low: limits.low, high: limits.high,
                outcome: passes ? .pass : .fail))
            guard passes else {
                throw StepStop(outcome: .fail, message: "\(prompt.name) \(text) \(prompt.unit?.rawValue ?? "") is outside \(Self.format(limits))")
            }
            return .pass
    }

    /// The operator's time is not the station's (as a device's is not); a prompt's timeout is the step's error.
    private func wait(_ timeout: Duration?, _ body: () async throws -> OperatorReply) async throws -> OperatorReply {
        do {
            return try await time.device { try await body() }
        } catch let timedOut as PromptTimedOut {
            throw StepStop(outcome: .error, message: "no answer from the operator within \(timedOut.after)")
        }
    }

    private func recordAnswer(_ answer: OperatorAnswer, run: RunID) async throws {
        let store = station.store
        // Recorded even while the station stops: an uncancelled task.
        let failed = await Task { () -> (any Error)? in
            do { try await store.recordAnswer(answer, in: run); return nil } catch { return error }
        }.value
        if let failed { throw StepStop(outcome: .error, message: "records: \(describe(failed))") }
    }
}
