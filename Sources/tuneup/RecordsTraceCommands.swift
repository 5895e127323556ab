import ArgumentParser
import Foundation
import Records
import Support
import Terminal

/// `tuneup records release | attachment | spc`: the quarantine's release (the one records command that writes), a
/// run's attachments, and the process control figures.
extension RecordsCommand {
    struct ReleaseUnit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "release",
            abstract: "Let a quarantined unit back onto the line: records who released it, when and why.",
            discussion: """
                A recipe's max-rework quarantines a unit that failed (or erred) that many times since its last \
                release: stations refuse it until it is released here. The release is kept for good (shown by \
                'records show', in the JSON export) with the failed runs it released. On a line, release it on the \
                line's database (--db postgres://...).

                Exit codes: 0 released, 1 the unit has no failed run since its last release (nothing to release), \
                64 bad arguments, 66 no such unit, 69 the database server cannot be reached, 74 the records cannot \
                be opened or written.

                Examples:
                  tuneup records release 9c1e44a2d0f1a3b7 --reason "mic replaced" --db recipes/records.sqlite
                  tuneup records release TS1-202648-000042 --operator alice --db postgres://line@db.local/line
                """)
        @Argument(help: ArgumentHelp("The unit's hardware id or serial number.", valueName: "unit"))
        var unit: String
        @Option(help: ArgumentHelp("Why it may come back (one line, at most 256 characters).", valueName: "text"))
        var reason: String = ""
        @Option(name: .customLong("operator"), help: ArgumentHelp("Who releases it (default: $USER, else the login name).", valueName: "name"))
        var operatorName: String?
        @Option(help: ArgumentHelp("The records database: a SQLite file, or postgres://USER@HOST[:PORT]/DB (a line's).", valueName: "location"))
        var db: String = "records.sqlite"
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let problem = Traceability.problem(value: reason, what: "--reason") { throw ValidationError(problem) }
            do { try RecordStores.check(db) } catch { throw ValidationError(error.message) }
            _ = try resolveOperator(operatorName)
        }

        func run() async throws {
            let release: Release
            do {
                let store: any RecordStore
                if RecordStores.isServer(db) {
                    store = try await PostgresRecordStore.open(url: db)
                } else {
                    // Written, so opened for writing; but never created: a release on a missing file is a typo.
                    guard await RecordStores.fileExists(db) else {
                        throw CommandFailure(message: "no records database at \(db) (name it with --db FILE)", code: Exit.localIO)
                    }
                    store = try await SQLiteRecordStore.open(path: db)
                }
                let hardwareID = try await RecordsCommand.hardwareID(of: unit, in: store, db: db)
                do {
                    release = try await store.release(hardwareID, by: try resolveOperator(operatorName), reason: reason, at: Date())
                } catch let error as RecordsError where error.code == .invalidTransition {
                    throw CommandFailure(message: error.message, code: 1)
                }
            } catch {
                throw failureExit(error)
            }
            if output.json {
                Output.line(String(decoding: try RecordsExport.encoder.encode(release), as: UTF8.self))
                return
            }
            Output.line("Released \(release.hardwareID) (\(release.failures) failed run\(release.failures == 1 ? "" : "s")) by \(release.releasedBy) at \(RecordsExport.timestamp(release.releasedAt))"
                        + (release.reason.isEmpty ? "" : ": \(release.reason)"))
        }
    }

    struct AttachmentFile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "attachment",
            abstract: "Write a file a run's step attached (a log, a measured curve) to a file or standard output.",
            discussion: """
                'records show UNIT' lists each run's attachments with their names, media types, sizes and SHA-256.

                Exit codes: 0 written, 64 bad arguments, 66 no such run or attachment, 74 the records cannot be read \
                or the output cannot be written.

                Examples:
                  tuneup records attachment 12 mic-sensitivity-left-readings.csv --db recipes/records.sqlite
                  tuneup records attachment 12 anc-attenuation-file.log -o /tmp/anc.log --db recipes/records.sqlite
                """)
        @Argument(help: ArgumentHelp("The run's id (records show lists them).", valueName: "run"))
        var run: Int64
        @Argument(help: ArgumentHelp("The attachment's name.", valueName: "name"))
        var name: String
        @Option(name: .shortAndLong, help: ArgumentHelp(
            "Write to this file (replaced whole; a link's target is written; a device, FIFO or directory is refused) instead of stdout.",
            valueName: "file"))
        var output: String?
        @OptionGroup var source: Source

        func run() async throws {
            let found: Attachment
            do {
                let store = try await source.open()
                guard try await store.run(RunID(run)) != nil else {
                    throw CommandFailure(message: "no run \(run) in \(source.db)", code: 66)
                }
                guard let attachment = try await store.attachment(run: RunID(run), name: name) else {
                    throw CommandFailure(message: "run \(run) has no attachment named '\(name)' (records show lists them)", code: 66)
                }
                found = attachment
            } catch {
                throw failureExit(error)
            }
            let bytes = [UInt8](found.content ?? Data())
            do {
                if let output {
                    try await Blocking.perform("write \(output)") { try SafeOutput.write(bytes, to: output) }
                } else {
                    Console.flush()
                    try await Blocking.perform("write stdout") { try SafeOutput.writeAll(bytes, to: STDOUT_FILENO, path: "standard output") }
                }
            } catch {
                throw failureExit(error)
            }
        }
    }

    struct SPC: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "spc",
            abstract: "Process control figures over the last units: each measurement's Cpk and the first-pass yield.",
            discussion: """
                Over the runs the filters admit (finished runs, in start order): the first-pass yield of the last \
                --window units and, per measurement, the mean, σ and Cpk of its last --window values against the \
                newest limits — the figures a recipe's spc: limits judge (docs/recipe.md).

                Examples:
                  tuneup records spc --window 20 --db recipes/records.sqlite
                  tuneup records spc --window 5 --outcome pass --format json --db recipes/records.sqlite
                """)
        @Option(parsing: .unconditional, help: ArgumentHelp("How many of the latest units (2...10000).", valueName: "count"))
        var window: Int = 20
        @OptionGroup var source: Source
        @OptionGroup var filters: Filters
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if !(2...10_000).contains(window) { throw ValidationError("--window must be 2...10000, got \(window)") }
        }

        func run() async throws {
            let figures: ProcessWindowReport
            do {
                let store = try await source.open()
                figures = ProcessWindowReport(runs: try await store.runsWithSteps(try filters.filter()), size: window)
            } catch {
                throw failureExit(error)
            }
            if output.json {
                Output.line(String(decoding: try RecordsExport.encoder.encode(figures), as: UTF8.self))
                return
            }
            Output.line(figures.text)
        }
    }

    /// The hardware id of a unit named by hardware id or serial; `CommandFailure` 66 when there is none.
    static func hardwareID(of unit: String, in store: any RecordStore, db: String) async throws -> String {
        if try await store.unit(unit) != nil { return unit }
        if let bySerial = try await store.units().first(where: { $0.identities.contains { $0.kind == .serial && $0.value == unit } }) {
            return bySerial.hardwareID
        }
        throw CommandFailure(message: "no unit with hardware id or serial '\(unit)' in \(db)", code: 66)
    }
}
