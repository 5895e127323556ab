import Foundation

// Operator prompts and scan to bind (docs/recipe.md, "Operator prompts and scans"): what a recipe asks of the person
// at the station, and the pure checks of what they answer. The station waits for the answers; the page and the
// terminal only pass them on, so both are checked here, the same way.

extension ProvisioningRecipe {
    /// A step that asks the operator: a text (and an image from the recipe's folder) answered with PASS/FAIL or a
    /// value. Written as `- prompt: {...}` among `tests:`, where it runs in its place.
    public struct PromptSpec: Sendable, Hashable, Encodable {
        public enum Answer: String, Sendable, Hashable, Encodable, CaseIterable {
            /// PASS or FAIL: FAIL fails the unit at this step.
            case passFail = "pass-fail"
            /// A value typed (or scanned): checked against `pattern` and, with `limits`, a number judged as a measurement.
            case value
        }

        /// Unique among the recipe's tests and prompts: `a-z 0-9 - _ .`. The step is `prompt:NAME`.
        public var name: String
        /// What the operator is asked, one line of at most 256 characters.
        public var text: String
        /// An image shown with it: a path relative to the recipe's directory (checked to exist by `load(path:)`).
        public var image: String?
        public var answer: Answer
        /// `value`: a regular expression the whole answer must match.
        public var pattern: String?
        /// `value` with limits: the answer is a number in this unit, recorded as a measurement named `name`.
        public var unit: MeasurementUnit?
        public var limits: Limits?
        /// How long the station waits for the answer (nil: as long as it takes; the unit errs when it runs out).
        public var timeout: Duration?
        /// Its place: the number of measurement tests before it in `tests:`.
        public var position: Int

        public init(
            name: String, text: String, image: String? = nil, answer: Answer, pattern: String? = nil, unit: MeasurementUnit? = nil,
            limits: Limits? = nil, timeout: Duration? = nil, position: Int
        ) {
            (self.name, self.text, self.image, self.answer, self.pattern, self.unit, self.limits, self.timeout, self.position) =
                (name, text, image, answer, pattern, unit, limits, timeout, position)
        }

        /// The image files a prompt may show, by extension, with their media types.
        public static let imageTypes = [
            "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml", "webp": "image/webp",
        ]

        /// The step's name in records and events.
        public var step: String { "prompt:\(name)" }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(name, forKey: .name)
            try c.encode(text, forKey: .text)
            try c.encodeIfPresent(image, forKey: .image)
            try c.encode(answer, forKey: .answer)
            try c.encodeIfPresent(pattern, forKey: .pattern)
            try c.encodeIfPresent(unit, forKey: .unit)
            try c.encodeIfPresent(limits, forKey: .limits)
            try c.encodeIfPresent(timeout.map(OperatorInput.nanoseconds), forKey: .timeoutNanoseconds)
            try c.encode(position, forKey: .position)
        }
        private enum Keys: String, CodingKey { case name, text, image, answer, pattern, unit, limits, timeoutNanoseconds, position }
    }

    /// A code scanned (or typed) per unit and bound to it: a PCB or label serial.
    public struct ScanSpec: Sendable, Hashable, Encodable {
        /// What to scan, shown to the operator (e.g. `PCB serial`), 1...64 characters.
        public var label: String
        /// A regular expression the whole code must match.
        public var pattern: String
        /// The code's check digit, when it has one.
        public var checkDigit: CheckDigit?
        /// Whether one code may be bound to two units (default false: a second unit's scan is refused).
        public var allowDuplicates: Bool
        /// How long the station waits for the scan (nil: as long as it takes).
        public var timeout: Duration?

        public init(label: String, pattern: String, checkDigit: CheckDigit? = nil, allowDuplicates: Bool = false, timeout: Duration? = nil) {
            (self.label, self.pattern, self.checkDigit, self.allowDuplicates, self.timeout) = (label, pattern, checkDigit, allowDuplicates, timeout)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(label, forKey: .label)
            try c.encode(pattern, forKey: .pattern)
            try c.encodeIfPresent(checkDigit, forKey: .checkDigit)
            try c.encode(allowDuplicates, forKey: .allowDuplicates)
            try c.encodeIfPresent(timeout.map(OperatorInput.nanoseconds), forKey: .timeoutNanoseconds)
        }
        private enum Keys: String, CodingKey { case label, pattern, checkDigit, allowDuplicates, timeoutNanoseconds }
    }

    /// Check-digit schemes of scanned codes. Each is computed over the code's digits (other characters, such as a
    /// `PCB-` prefix or separators, are left out; `mod11` also takes a final `X`), the last one being the check digit.
    public enum CheckDigit: String, Sendable, Hashable, Encodable, CaseIterable {
        /// GS1 (GTIN-8/12/13/14, SSCC, GLN): weights 3 and 1 alternating from the right of the payload, mod 10.
        case gs1
        /// Luhn (IMEI, card numbers): every second digit from the right doubled, mod 10.
        case luhn
        /// Mod 11 as ISBN-10: weights 2, 3, ... from the right of the payload; 10 is written X.
        case mod11

        /// Whether `code`'s check digit is right.
        public func isValid(_ code: String) -> Bool {
            var digits = code.unicodeScalars.compactMap { $0.properties.numericType != nil && $0.isASCII ? Int($0.value) - 48 : nil }
            let last = code.unicodeScalars.last
            if self == .mod11, let last, last == "X" || last == "x" { digits.append(10) }
            guard digits.count >= 2, let check = digits.last else { return false }
            let payload = digits.dropLast()
            switch self {
            case .gs1:
                var sum = 0
                for (i, d) in payload.reversed().enumerated() { sum += d * (i % 2 == 0 ? 3 : 1) }
                return check < 10 && (10 - sum % 10) % 10 == check
            case .luhn:
                var sum = 0
                for (i, d) in payload.reversed().enumerated() {
                    if i % 2 == 0 { let doubled = d * 2; sum += doubled > 9 ? doubled - 9 : doubled } else { sum += d }
                }
                return check < 10 && (10 - sum % 10) % 10 == check
            case .mod11:
                guard !payload.contains(10) else { return false }
                var sum = 0
                for (i, d) in payload.reversed().enumerated() { sum += d * (i + 2) }
                return (11 - sum % 11) % 11 == check
            }
        }
    }
}

/// The pure checks of an operator's answers, shared by the page and the terminal.
public enum OperatorInput {
    /// An answer that passed its checks.
    public enum Accepted: Sendable, Hashable {
        /// PASS (true) or FAIL (false).
        case passFail(Bool)
        /// A value (text as given, trimmed); with limits, its number.
        case value(String, number: Double?)
        /// A scanned code.
        case code(String)
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (s, a) = d.components
        return s * 1_000_000_000 + a / 1_000_000_000
    }

    /// Whether the whole of `text` matches the regular expression `pattern` (false when the pattern does not parse).
    public static func matches(_ text: String, pattern: String) -> Bool {
        guard let regex = try? Regex(pattern) else { return false }
        return (try? regex.wholeMatch(in: text)) != nil
    }

    /// Why `pattern` is not a regular expression (nil when it is).
    public static func patternProblem(_ pattern: String) -> String? {
        do { _ = try Regex(pattern); return nil } catch { return String(describing: error).split(separator: "\n").first.map(String.init) ?? "does not parse" }
    }

    /// An answer to a prompt: accepted, or why not (one line, shown to the operator, who answers again).
    public static func check(_ raw: String, for prompt: ProvisioningRecipe.PromptSpec) -> Result<Accepted, Refusal> {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        switch prompt.answer {
        case .passFail:
            switch text.lowercased() {
            case "pass", "p", "ok", "y", "yes": return .success(.passFail(true))
            case "fail", "f", "n", "no": return .success(.passFail(false))
            default: return .failure(Refusal("answer pass or fail"))
            }
        case .value:
            guard !text.isEmpty else { return .failure(Refusal("enter a value")) }
            guard text.count <= 256, !text.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
                return .failure(Refusal("a value is one line of at most 256 characters"))
            }
            if let pattern = prompt.pattern, !matches(text, pattern: pattern) {
                return .failure(Refusal("'\(text)' does not match the pattern \(pattern)"))
            }
            if prompt.limits != nil {
                guard let number = Double(text), number.isFinite else { return .failure(Refusal("'\(text)' is not a number")) }
                return .success(.value(text, number: number))
            }
            return .success(.value(text, number: nil))
        }
    }

    /// A scanned code: accepted, or why not (pattern, check digit). Whether another unit holds it is the station's
    /// check (it needs the records).
    public static func check(_ raw: String, for scan: ProvisioningRecipe.ScanSpec) -> Result<Accepted, Refusal> {
        let code = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !code.isEmpty else { return .failure(Refusal("scan the \(scan.label)")) }
        guard code.count <= 128, !code.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
            return .failure(Refusal("a code is one line of at most 128 characters"))
        }
        guard matches(code, pattern: scan.pattern) else {
            return .failure(Refusal("'\(code)' is not a \(scan.label): it does not match \(scan.pattern)"))
        }
        if let digit = scan.checkDigit, !digit.isValid(code) {
            return .failure(Refusal("'\(code)': wrong \(digit.rawValue) check digit (a misread? scan it again)"))
        }
        return .success(.code(code))
    }

    /// Why an answer was not taken: one line.
    public struct Refusal: Error, Sendable, Hashable {
        public var message: String
        public init(_ message: String) { self.message = message }
    }
}
