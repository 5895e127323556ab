import Failure
import Foundation

/// A serial-number pattern or a Bluetooth-name template: literal text with fields in braces.
///
/// The template language (docs/recipe.md):
///
/// | field | gives |
/// |---|---|
/// | `{counter:N}` | the unit's counter, zero-padded to N digits (1...12); a counter that needs more digits is an error, never a wider serial. `{counter:06}` = `{counter:6}`. A serial pattern holds it exactly once. |
/// | `{counter}` | the counter without padding (name templates only) |
/// | `{yyyy}` `{yy}` | calendar year, 4 or 2 digits |
/// | `{gggg}` `{gg}` | ISO 8601 week-based year (the year `{ww}` belongs to), 4 or 2 digits |
/// | `{ww}` | ISO 8601 week, 01...53 |
/// | `{mm}` `{dd}` | month 01...12, day of month 01...31 |
/// | `{serial}` `{serial[a:b]}` | the unit's serial, or a slice with Python's rules (`[-4:]` = the last four characters) (name templates only) |
/// | `{model}` | the recipe's model (name templates only) |
/// | `{{` `}}` | a literal brace |
///
/// Dates are taken in UTC.
public struct IdentityTemplate: Sendable, Hashable, CustomStringConvertible {
    /// A date field.
    public enum DateField: String, Sendable, Hashable, CaseIterable {
        case yyyy, yy, gggg, gg, ww, mm, dd
    }

    /// One piece of a template.
    public enum Part: Sendable, Hashable {
        case literal(String)
        case date(DateField)
        /// The counter, zero-padded to `width` digits, or unpadded when nil.
        case counter(width: Int?)
        /// The serial, or a slice of it (Python's rules, nil = open end).
        case serial(from: Int?, to: Int?)
        case model
    }

    /// Which kind of template: what fields it may use.
    public enum Kind: Sendable {
        /// A serial pattern: literal characters from `A-Z a-z 0-9 - _ . /`, date fields, exactly one `{counter:N}`.
        case serial
        /// A name template: any text, every field.
        case name
    }

    /// The template as written.
    public let text: String
    /// Its parsed pieces.
    public let parts: [Part]

    public var description: String { text }

    /// Parses a template; the error says what is wrong and where in the text (a character offset from 1).
    public init(parsing text: String, kind: Kind) throws(TemplateError) {
        self.text = text
        var parts: [Part] = []
        var literal = ""
        var i = text.startIndex
        func offset(_ index: String.Index) -> Int { text.distance(from: text.startIndex, to: index) + 1 }
        while i < text.endIndex {
            let c = text[i]
            let next = text.index(after: i)
            if c == "}" {
                guard next < text.endIndex, text[next] == "}" else { throw TemplateError(.badTemplate, "a lone '}' at character \(offset(i)) (write '}}' for a brace)") }
                literal.append("}")
                i = text.index(after: next)
                continue
            }
            guard c == "{" else {
                if kind == .serial, !(c.isASCII && (c.isLetter || c.isNumber || "-_./".contains(c))) {
                    throw TemplateError(.badTemplate, "'\(c)' at character \(offset(i)) cannot be in a serial (use A-Z a-z 0-9 - _ . /)")
                }
                literal.append(c)
                i = next
                continue
            }
            if next < text.endIndex, text[next] == "{" {
                if kind == .serial { throw TemplateError(.badTemplate, "'{' cannot be in a serial") }
                literal.append("{")
                i = text.index(after: next)
                continue
            }
            guard let close = text[next...].firstIndex(of: "}") else { throw TemplateError(.badTemplate, "the field at character \(offset(i)) has no closing '}'") }
            let field = String(text[next..<close])
            if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
            parts.append(try Self.field(field, kind: kind, at: offset(i)))
            i = text.index(after: close)
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        if kind == .serial {
            let counters = parts.filter { if case .counter = $0 { return true } else { return false } }.count
            guard counters == 1 else {
                throw TemplateError(.badTemplate, counters == 0
                    ? "a serial pattern needs a counter field such as {counter:06}, or every unit gets the same serial"
                    : "a serial pattern holds one counter field, not \(counters)")
            }
        }
        guard !parts.isEmpty else { throw TemplateError(.badTemplate, "is empty") }
        self.parts = parts
    }

    private static func field(_ field: String, kind: Kind, at offset: Int) throws(TemplateError) -> Part {
        if let date = DateField(rawValue: field) { return .date(date) }
        if field == "counter" {
            guard kind == .name else { throw TemplateError(.badTemplate, "{counter} at character \(offset) needs a width in a serial, e.g. {counter:06}") }
            return .counter(width: nil)
        }
        if field.hasPrefix("counter:") {
            let digits = field.dropFirst("counter:".count)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let width = Int(digits), (1...12).contains(width) else {
                throw TemplateError(.badTemplate, "{\(field)} at character \(offset): the counter width must be 1...12 digits")
            }
            return .counter(width: width)
        }
        if kind == .name {
            if field == "model" { return .model }
            if field == "serial" { return .serial(from: nil, to: nil) }
            if field.hasPrefix("serial["), field.hasSuffix("]") {
                let inner = field.dropFirst("serial[".count).dropLast()
                let bounds = inner.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                guard bounds.count == 2 else { throw TemplateError(.badTemplate, "{\(field)} at character \(offset): a slice is [from:to], e.g. [-4:]") }
                func bound(_ s: Substring) throws(TemplateError) -> Int? {
                    if s.isEmpty { return nil }
                    guard let n = Int(s), abs(n) <= 64 else { throw TemplateError(.badTemplate, "{\(field)} at character \(offset): '\(s)' is not a slice bound") }
                    return n
                }
                return .serial(from: try bound(bounds[0]), to: try bound(bounds[1]))
            }
        }
        let known = kind == .serial
            ? "counter:N, " + DateField.allCases.map(\.rawValue).joined(separator: ", ")
            : "counter, counter:N, serial, serial[a:b], model, " + DateField.allCases.map(\.rawValue).joined(separator: ", ")
        throw TemplateError(.badTemplate, "{\(field)} at character \(offset) is not a field (known: \(known))")
    }

    /// Whether a name made with this template is different for every unit: it holds the counter or the whole serial
    /// (`{serial}`, `{serial[0:]}`), which are the unit's alone. A slice (`{serial[-4:]}`) repeats by design.
    public var namesEveryUnitApart: Bool {
        parts.contains { part in
            switch part {
            case .counter: return true
            case let .serial(from, to): return (from == nil || from == 0) && to == nil
            default: return false
            }
        }
    }

    /// The widest counter the template can show: 10^width - 1 for a padded counter, nil without a width.
    public var counterCapacity: Int? {
        for case let .counter(width?) in parts { return Int(pow(10, Double(width))) - 1 }
        return nil
    }

    /// The template filled in. Throws `.identityExhausted` when the counter needs more digits than its width.
    public func render(counter: Int, date: Date, serial: String = "", model: String = "") throws(RecipeError) -> String {
        let utc = DateFields(date)
        var out = ""
        for part in parts {
            switch part {
            case let .literal(text): out += text
            case let .date(field): out += utc.text(field)
            case .counter(nil): out += String(counter)
            case let .counter(width?):
                let digits = String(counter)
                guard counter >= 0, digits.count <= width else {
                    throw RecipeError(.identityExhausted, "counter \(counter) does not fit the \(width) digits of '\(text)'")
                }
                out += String(repeating: "0", count: width - digits.count) + digits
            case let .serial(from, to):
                let chars = Array(serial)
                func resolve(_ b: Int?, _ open: Int) -> Int {
                    guard let b else { return open }
                    return Swift.min(Swift.max(b < 0 ? chars.count + b : b, 0), chars.count)
                }
                let lo = resolve(from, 0), hi = resolve(to, chars.count)
                if lo < hi { out += String(chars[lo..<hi]) }
            case .model: out += model
            }
        }
        return out
    }
}

/// What is wrong with a template (one line, without the file position: the recipe parser adds it).
public typealias TemplateError = CodedFailure<TemplateErrors>

public enum TemplateErrors: ErrorDomain {
    /// A template is part of a recipe: a wrong one is a bad recipe (64).
    public static func category(of code: TemplateError.Code) -> FailureCategory { .usage }
}

extension ErrorCodeIn where Domain == TemplateError {
    /// The template cannot be parsed, or uses a field its kind does not allow.
    public static let badTemplate = Self(rawValue: "bad-template")
}

/// The date fields of one instant in UTC (ISO 8601 weeks: Monday first, week 1 holds the first Thursday).
struct DateFields {
    let year: Int, weekYear: Int, week: Int, month: Int, day: Int

    init(_ date: Date) {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .weekOfYear, .yearForWeekOfYear], from: date)
        year = c.year ?? 0
        weekYear = c.yearForWeekOfYear ?? 0
        week = c.weekOfYear ?? 0
        month = c.month ?? 0
        day = c.day ?? 0
    }

    func text(_ field: IdentityTemplate.DateField) -> String {
        func pad(_ n: Int, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: Swift.max(0, width - s.count)) + s
        }
        switch field {
        case .yyyy: return pad(year, 4)
        case .yy: return pad(year % 100, 2)
        case .gggg: return pad(weekYear, 4)
        case .gg: return pad(weekYear % 100, 2)
        case .ww: return pad(week, 2)
        case .mm: return pad(month, 2)
        case .dd: return pad(day, 2)
        }
    }
}

extension Character {
    /// 0-9 only.
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
