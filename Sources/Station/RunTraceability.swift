import Failure
import Foundation
import Records

extension ErrorCodeIn where Domain == StationSetupError {
    /// An operator name or a traceability value (--operator, --meta) the records refuse.
    public static let badTraceability = Self(rawValue: "bad-traceability")
}

/// What a station (or a records command) records of who runs it and under what: the operator (the name given, else
/// `$USER`, else the login name of the process's user) and the run metadata given on the command line.
public enum RunTraceability {
    /// `given` when it is a name the records take (1...64 characters, one line), else the process's user.
    /// - Throws: `StationSetupError(.badTraceability)` for an empty or unrecordable name (a usage error).
    public static func operatorName(_ given: String?) throws(StationSetupError) -> String {
        if let given {
            guard !given.isEmpty else { throw StationSetupError(.badTraceability, "--operator must not be empty") }
            if let problem = Traceability.problem(value: given, what: "--operator", maxLength: 64) {
                throw StationSetupError(.badTraceability, problem)
            }
            return given
        }
        return defaultOperator()
    }

    /// `$USER`, else the password database's name of the real user id (getpwuid_r), else the uid as text.
    public static func defaultOperator() -> String {
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

    /// `--meta KEY=VALUE` pairs as a map: each key of A-Z a-z 0-9 _ . - given once, each value one the records take, at
    /// most `Traceability.maxMetadataEntries`.
    /// - Throws: `StationSetupError(.badTraceability)` naming the pair at fault.
    public static func metadata(_ pairs: [String]) throws(StationSetupError) -> [String: String] {
        var result: [String: String] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "=") else { throw StationSetupError(.badTraceability, "--meta takes KEY=VALUE, got '\(pair)'") }
            let key = String(pair[..<equals]), value = String(pair[pair.index(after: equals)...])
            guard Traceability.isKey(key) else {
                throw StationSetupError(.badTraceability, "--meta key '\(key)': use 1...\(Traceability.maxKeyLength) characters of A-Z a-z 0-9 _ . -")
            }
            if let problem = Traceability.problem(value: value, what: "--meta \(key)") { throw StationSetupError(.badTraceability, problem) }
            guard result.updateValue(value, forKey: key) == nil else { throw StationSetupError(.badTraceability, "--meta \(key) is given twice") }
        }
        guard result.count <= Traceability.maxMetadataEntries else {
            throw StationSetupError(.badTraceability, "--meta: \(result.count) entries; at most \(Traceability.maxMetadataEntries)")
        }
        return result
    }
}
