import ArgumentParser
import Foundation
import Records

/// `station run`'s traceability: work order, lot, fixture and metadata recorded with every run (docs/records.md).
struct TraceabilityOptions: ParsableArguments {
    @Option(name: .customLong("work-order"), help: ArgumentHelp("The work order the units are built under (recorded with every run).", valueName: "text"))
    var workOrder: String?

    @Option(help: ArgumentHelp("The production lot (recorded with every run).", valueName: "text"))
    var lot: String?

    @Option(help: ArgumentHelp("The fixture the slots belong to (recorded with every run).", valueName: "text"))
    var fixture: String?

    @Option(name: .customLong("meta"), help: ArgumentHelp(
        "Metadata recorded with every run (repeatable; over the recipe's metadata: of the same key). Keys: A-Z a-z 0-9 _ . -",
        valueName: "key=value"))
    var meta: [String] = []

    func validate() throws {
        for (what, value) in [("--work-order", workOrder), ("--lot", lot), ("--fixture", fixture)] {
            guard let value else { continue }
            if value.isEmpty { throw ValidationError("\(what) must not be empty") }
            if let problem = Traceability.problem(value: value, what: what) { throw ValidationError(problem) }
        }
        _ = try metadata()
    }

    /// `--meta` as a map; a malformed pair, a bad key or value, or a key given twice is a `ValidationError`.
    func metadata() throws -> [String: String] {
        var result: [String: String] = [:]
        for pair in meta {
            guard let equals = pair.firstIndex(of: "=") else { throw ValidationError("--meta takes KEY=VALUE, got '\(pair)'") }
            let key = String(pair[..<equals]), value = String(pair[pair.index(after: equals)...])
            guard Traceability.isKey(key) else {
                throw ValidationError("--meta key '\(key)': use 1...\(Traceability.maxKeyLength) characters of A-Z a-z 0-9 _ . -")
            }
            if let problem = Traceability.problem(value: value, what: "--meta \(key)") { throw ValidationError(problem) }
            guard result.updateValue(value, forKey: key) == nil else { throw ValidationError("--meta \(key) is given twice") }
        }
        guard result.count <= Traceability.maxMetadataEntries else {
            throw ValidationError("--meta: \(result.count) entries; at most \(Traceability.maxMetadataEntries)")
        }
        return result
    }
}

/// Who runs a command, for the records: `--operator`, else `$USER`, else the login name of the process's user.
enum OperatorName {
    static func resolve(_ given: String?) throws -> String {
        if let given {
            guard !given.isEmpty else { throw ValidationError("--operator must not be empty") }
            if let problem = Traceability.problem(value: given, what: "--operator", maxLength: 64) { throw ValidationError(problem) }
            return given
        }
        return fallback()
    }

    /// `$USER`, else the password database's name of the real user id (getpwuid_r), else the uid as text.
    static func fallback() -> String {
        if let user = ProcessInfo.processInfo.environment["USER"], !user.isEmpty,
           Traceability.problem(value: user, what: "", maxLength: 64) == nil { return user }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, let result, let name = result.pointee.pw_name {
            let text = String(cString: name)
            if !text.isEmpty { return text }
        }
        return "uid \(getuid())"
    }
}
