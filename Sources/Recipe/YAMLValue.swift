import Yams

/// A node of the recipe's YAML with its dotted key path and file, so every check can say `file:line:column: key:`.
struct YAMLValue {
    let node: Node
    let path: String
    let file: String
    /// Where the key that holds this value starts (better than the value's own mark for "missing"/"unknown").
    let keyMark: Mark?

    /// The resolved tag (`.int`, `.str`, `.bool`, ...).
    var tagName: Tag.Name { Tag.Name(rawValue: node.tag.rawValue) }

    var location: SourceLocation? {
        guard let mark = node.mark ?? keyMark else { return nil }
        return SourceLocation(file: file, line: mark.line, column: mark.column)
    }

    func error(_ code: RecipeError.Code, _ text: String) -> RecipeError {
        RecipeError(code, text, at: location, key: path)
    }

    /// Parses `text` into the root value; YAML errors become `.syntax` with the parser's position.
    static func root(yaml text: String, file: String) throws(RecipeError) -> YAMLValue {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw syntaxError(error, file: file)
        } catch {
            throw RecipeError(.syntax, "\(error)", at: SourceLocation(file: file, line: 1, column: 1), key: nil)
        }
        guard let node else {
            throw RecipeError(.syntax, "the recipe is empty", at: SourceLocation(file: file, line: 1, column: 1), key: nil)
        }
        return YAMLValue(node: node, path: "", file: file, keyMark: nil)
    }

    private static func syntaxError(_ error: YamlError, file: String) -> RecipeError {
        func at(_ mark: Mark) -> SourceLocation { SourceLocation(file: file, line: mark.line, column: mark.column) }
        func oneLine(_ context: YamlError.Context?, _ problem: String) -> String {
            guard let context else { return problem }
            return "\(problem) (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
        }
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
            return RecipeError(.syntax, oneLine(context, problem), at: at(mark), key: nil)
        case let .duplicatedKeysInMapping(duplicates, context):
            let key = duplicates.first ?? "?"
            return RecipeError(.syntax, "duplicated key", at: at(context.mark), key: key)
        case let .reader(problem, offset, _, _):
            return RecipeError(.syntax, "\(problem)\(offset.map { " at byte \($0)" } ?? "")", at: SourceLocation(file: file, line: 1, column: 1), key: nil)
        default:
            return RecipeError(.syntax, "\(error)".split(separator: "\n").joined(separator: " "), at: SourceLocation(file: file, line: 1, column: 1), key: nil)
        }
    }

    // MARK: typed access

    /// A mapping whose keys must all be in `allowed`; an unknown key is an error naming it, with the closest allowed
    /// key as a suggestion.
    func fields(_ allowed: [String]) throws(RecipeError) -> Fields {
        guard case let .mapping(mapping) = node else { throw error(.wrongType, "expected a mapping, got \(describe())") }
        var values: [String: YAMLValue] = [:]
        for (keyNode, valueNode) in mapping {
            guard case .scalar = keyNode, let key = keyNode.string else {
                let at = keyNode.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
                throw RecipeError(.wrongType, "keys must be plain names", at: at, key: path)
            }
            let childPath = path.isEmpty ? key : "\(path).\(key)"
            guard allowed.contains(key) else {
                let at = keyNode.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
                var text = "unknown key"
                if let near = Spelling.closest(to: key, in: allowed) { text += "; did you mean '\(near)'?" }
                else { text += " (known here: \(allowed.joined(separator: ", ")))" }
                throw RecipeError(.unknownKey, text, at: at, key: childPath)
            }
            values[key] = YAMLValue(node: valueNode, path: childPath, file: file, keyMark: keyNode.mark)
        }
        return Fields(owner: self, values: values)
    }

    func describe() -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar:
            switch tagName {
            case .null: return "nothing (null)"
            case .bool: return "a boolean"
            case .int: return "an integer"
            case .float: return "a number"
            default: return "the text '\(node.string ?? "")'"
            }
        }
    }

    /// Any non-null scalar, as written.
    func string() throws(RecipeError) -> String {
        guard case .scalar = node, tagName != .null, let text = node.string else {
            throw error(.wrongType, "expected a text, got \(describe())")
        }
        return text
    }

    /// A non-empty text of at most `maxLength` characters.
    func text(maxLength: Int = 256) throws(RecipeError) -> String {
        let text = try string()
        guard !text.isEmpty else { throw error(.outOfRange, "must not be empty") }
        guard text.count <= maxLength else { throw error(.outOfRange, "is longer than \(maxLength) characters") }
        return text
    }

    func bool() throws(RecipeError) -> Bool {
        // YAML 1.1's yes/no/on/off read as booleans by the parser, but YAML 1.2 (and a person reading `off`) does not:
        // only true and false are booleans here.
        guard tagName == .bool, let value = node.bool, ["true", "false"].contains(node.scalar?.string.lowercased() ?? "") else {
            throw error(.wrongType, "expected true or false, got \(describe())")
        }
        return value
    }

    func int(in range: ClosedRange<Int>) throws(RecipeError) -> Int {
        guard tagName == .int, let value = node.int else { throw error(.wrongType, "expected an integer, got \(describe())") }
        guard range.contains(value) else { throw error(.outOfRange, "\(value) is out of range \(range.lowerBound)...\(range.upperBound)") }
        return value
    }

    func number(in range: ClosedRange<Double>? = nil) throws(RecipeError) -> Double {
        guard tagName == .int || tagName == .float, let value = node.float, value.isFinite else {
            throw error(.wrongType, "expected a number, got \(describe())")
        }
        if let range, !range.contains(value) {
            throw error(.outOfRange, "\(Self.format(value)) is out of range \(Self.format(range.lowerBound))...\(Self.format(range.upperBound))")
        }
        return value
    }

    /// One of `choices` (case-insensitive), with a suggestion when it is close to one.
    func choice(_ choices: [String]) throws(RecipeError) -> String {
        let text = try string()
        if let match = choices.first(where: { $0.caseInsensitiveCompare(text) == .orderedSame }) { return match }
        var message = "'\(text)' is not one of \(choices.joined(separator: ", "))"
        if let near = Spelling.closest(to: text, in: choices) { message += "; did you mean '\(near)'?" }
        throw error(.outOfRange, message)
    }

    /// A mapping's entries in file order, any keys (for maps of names the format does not fix, such as metadata).
    func entries() throws(RecipeError) -> [(key: String, value: YAMLValue)] {
        guard case let .mapping(mapping) = node else { throw error(.wrongType, "expected a mapping, got \(describe())") }
        var result: [(key: String, value: YAMLValue)] = []
        for (keyNode, valueNode) in mapping {
            guard case .scalar = keyNode, let key = keyNode.string else {
                let at = keyNode.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
                throw RecipeError(.wrongType, "keys must be plain names", at: at, key: path)
            }
            result.append((key, YAMLValue(node: valueNode, path: path.isEmpty ? key : "\(path).\(key)", file: file, keyMark: keyNode.mark)))
        }
        return result
    }

    func list() throws(RecipeError) -> [YAMLValue] {
        guard case let .sequence(sequence) = node else { throw error(.wrongType, "expected a list, got \(describe())") }
        return sequence.enumerated().map { YAMLValue(node: $1, path: "\(path)[\($0)]", file: file, keyMark: $1.mark) }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}

/// The values of one mapping, by key.
struct Fields {
    let owner: YAMLValue
    let values: [String: YAMLValue]

    subscript(_ key: String) -> YAMLValue? {
        guard let value = values[key] else { return nil }
        if case .scalar = value.node, value.tagName == .null { return nil }
        return value
    }

    func required(_ key: String) throws(RecipeError) -> YAMLValue {
        guard let value = self[key] else {
            let path = owner.path.isEmpty ? key : "\(owner.path).\(key)"
            throw RecipeError(.missingKey, "is required", at: owner.location, key: path)
        }
        return value
    }
}

/// "Did you mean": the closest known name within a small edit distance.
enum Spelling {
    static func closest(to word: String, in names: [String]) -> String? {
        let lower = word.lowercased()
        let scored = names.map { ($0, distance(lower, $0.lowercased())) }.min { $0.1 < $1.1 }
        guard let best = scored, best.1 <= max(2, word.count / 3) else { return nil }
        return best.0
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
