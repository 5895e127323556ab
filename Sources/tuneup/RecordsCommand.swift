import ArgumentParser
import Foundation
import Records
import Support
import Terminal

/// `tuneup records`: the unit records of provisioning, listed, shown, exported and summed up.
struct RecordsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "records",
        abstract: "List, show, export and report the unit records of provisioning (tuneup station run).",
        discussion: """
            Reads the records a station wrote (--db: the SQLite file, default records.sqlite here); nothing is \
            changed (`records label` prints a label again; `records release` records a quarantined unit's release). docs/records.md defines the report's figures and the export formats.

            Exit codes: 0 success, 64 bad arguments, 66 no such unit, 74 the records cannot be read or the output \
            cannot be written.

            Examples:
              tuneup records list --db recipes/records.sqlite
              tuneup records report --db recipes/records.sqlite
              tuneup records export --format csv --output /tmp/units.csv --db recipes/records.sqlite
            """,
        subcommands: [List.self, Show.self, Export.self, Report.self, Label.self, SPC.self, AttachmentFile.self, ReleaseUnit.self])

    /// Where the records are.
    struct Source: ParsableArguments {
        @Option(help: ArgumentHelp("The records database: a SQLite file, or postgres://USER@HOST[:PORT]/DB (a line's).", valueName: "location"))
        var db: String = "records.sqlite"

        func validate() throws {
            do { try RecordStores.check(db) } catch { throw ValidationError(error.message) }
        }

        /// Opens the records for reading: nothing is created or written (a file the user may only read will do).
        func open() async throws -> any RecordStore {
            if RecordStores.isServer(db) { return try await PostgresRecordStore.open(url: db) }
            guard await RecordStores.fileExists(db) else {
                throw CommandFailure(message: "no records database at \(db) (name it with --db FILE)", code: Exit.localIO)
            }
            return try await SQLiteRecordStore.openForReading(path: db)
        }
    }

    /// Which runs count.
    struct Filters: ParsableArguments {
        @Option(help: ArgumentHelp("Only the runs of this station.", valueName: "name"))
        var station: String?

        @Option(help: ArgumentHelp("Only the runs of this unit (hardware id).", valueName: "hwid"))
        var unit: String?

        @Option(help: ArgumentHelp("Only runs that ended so: pass, fail, error, aborted.", valueName: "outcome"))
        var outcome: String?

        @Option(help: ArgumentHelp("Only runs started at or after this time (2026-11-24 or 2026-11-24T08:00:00Z).", valueName: "time"))
        var since: String?

        @Option(help: ArgumentHelp("Only runs started before this time; a date alone (2026-11-24) takes in that whole day (UTC).", valueName: "time"))
        var until: String?

        func validate() throws { _ = try filter() }

        func filter() throws -> RecordsFilter {
            var outcomeValue: RunOutcome?
            if let outcome {
                guard let parsed = RunOutcome(rawValue: outcome) else {
                    throw ValidationError("--outcome takes pass, fail, error or aborted, got '\(outcome)'")
                }
                outcomeValue = parsed
            }
            return RecordsFilter(station: station, hardwareID: unit, outcome: outcomeValue,
                                 since: try since.map { try Self.time($0, "--since") }, until: try until.map { try Self.time($0, "--until", endOfDay: true) })
        }

        /// A UTC time, or a date: its start, or with `endOfDay` the start of the next day (so `--until D` keeps D).
        static func time(_ text: String, _ option: String, endOfDay: Bool = false) throws -> Date {
            let full = ISO8601DateFormatter()
            if let date = full.date(from: text) { return date }
            let day = ISO8601DateFormatter()
            day.formatOptions = [.withFullDate]
            if let date = day.date(from: text) { return endOfDay ? date.addingTimeInterval(86_400) : date }
            throw ValidationError("\(option) takes a date (2026-11-24) or a UTC time (2026-11-24T08:00:00Z), got '\(text)'")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "One line per unit: hardware id, serial, Bluetooth address, runs, last outcome, station and time.")
        @OptionGroup var source: Source
        @Option(help: ArgumentHelp("Only units with a run of this station.", valueName: "name"))
        var station: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let entries: [UnitListEntry]
            do {
                let store = try await source.open()
                entries = UnitListEntry.entries(try await store.units(), station: station)
            } catch {
                throw failureExit(error)
            }
            if output.json {
                Output.line(String(decoding: try RecordsExport.encoder.encode(["units": entries]), as: UTF8.self))
                return
            }
            guard !entries.isEmpty else { Output.line("No units recorded."); return }
            for e in entries { Output.line(e.line) }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "One unit (by hardware id or serial) with its identities, runs, steps and measurements.")
        @Argument(help: ArgumentHelp("The unit's hardware id or serial number.", valueName: "unit"))
        var unit: String
        @OptionGroup var source: Source
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let record: UnitRecord
            do {
                let store = try await source.open()
                var unitRecord = try await RecordsCommand.findUnit(unit, in: store, db: source.db)
                var runs: [RunRecord] = []
                for run in unitRecord.runs { if let full = try await store.run(run.id) { runs.append(full) } }
                unitRecord.runs = runs
                record = unitRecord
            } catch {
                throw failureExit(error)
            }
            if output.json {
                Output.line(String(decoding: try RecordsExport.encoder.encode(record), as: UTF8.self))
                return
            }
            Output.line(record.text)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write the records as JSON (per unit), CSV (per measurement) or JUnit XML (per run and step).",
            discussion: """
                Examples:
                  tuneup records export --format junit --output /tmp/units.xml --db recipes/records.sqlite
                  tuneup records export --format json --outcome fail --db recipes/records.sqlite
                """)
        @Option(help: ArgumentHelp("json, csv or junit.", valueName: "format"))
        var format: String = "json"
        @Option(name: .shortAndLong, help: ArgumentHelp(
            "Write to this file (replaced whole, never half-written; a link's target is written; a device, FIFO or directory is refused) instead of stdout.",
            valueName: "file"))
        var output: String?
        @OptionGroup var source: Source
        @OptionGroup var filters: Filters

        func validate() throws {
            guard RecordsExport.Format(rawValue: format) != nil else {
                throw ValidationError("--format takes json, csv or junit, got '\(format)'")
            }
        }

        func run() async throws {
            let text: String
            do {
                let store = try await source.open()
                let runs = try await store.runsWithSteps(try filters.filter())
                text = try RecordsExport.render(RecordsExport.Format(rawValue: format)!, units: try await store.units(), runs: runs)
            } catch {
                throw failureExit(error)
            }
            guard let output else {
                Console.out(text.hasSuffix("\n") ? text : text + "\n")
                return
            }
            do {
                // Replaced whole; a symbolic link, device, FIFO or directory is refused (exit 74).
                try await Blocking.perform("write \(output)") { try SafeOutput.write(text, to: output) }
            } catch {
                throw failureExit(error)
            }
        }
    }

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract: "Yields, units per hour, yield per step, the failure Pareto, and per measurement mean, spread and Cpk.")
        @OptionGroup var source: Source
        @OptionGroup var filters: Filters
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let report: RecordsReport
            do {
                let store = try await source.open()
                report = RecordsReport(runs: try await store.runsWithSteps(try filters.filter()))
            } catch {
                throw failureExit(error)
            }
            if output.json {
                Output.line(String(decoding: try RecordsExport.encoder.encode(report), as: UTF8.self))
                return
            }
            Output.line(report.text)
        }
    }
}
