import ArgumentParser
import Foundation
import Records
import Station

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

    /// `--meta` as a map (`RunTraceability.metadata`); a malformed pair, a bad key or value, or a key given twice is one line.
    func metadata() throws -> [String: String] {
        do { return try RunTraceability.metadata(meta) } catch { throw ValidationError(error.message) }
    }
}

/// Who runs a command, for the records (`RunTraceability.operatorName`: --operator, else $USER, else the login name); a bad
/// name is one line (64).
func resolveOperator(_ given: String?) throws -> String {
    do { return try RunTraceability.operatorName(given) } catch { throw ValidationError(error.message) }
}
