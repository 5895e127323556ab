import ArgumentParser
import Labels
import Records
import Station
import Terminal

extension RecordsCommand {
    /// The unit a hardware id or serial names (exit 66 when there is none).
    static func findUnit(_ unit: String, in store: any RecordStore, db: String) async throws -> UnitRecord {
        if let byID = try await store.unit(unit) { return byID }
        if let bySerial = try await store.units().first(where: { $0.identities.contains { $0.kind == .serial && $0.value == unit } }) {
            return bySerial
        }
        throw CommandFailure(message: "no unit with hardware id or serial '\(unit)' in \(db)", code: 66)
    }

    /// `tuneup records label`: a passed unit's label printed again (a jammed printer, a label torn off).
    struct Label: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "label",
            abstract: "Print a unit's label again, from its records (its serial and Bluetooth address).",
            discussion: """
                The label is the one `tuneup station run --labels/--label-printer` prints when the unit passes: the \
                product name, and the unit's committed serial and Bluetooth address as barcodes. Only a unit whose \
                last run passed gets a label.

                Exit codes: 0 printed, 1 the unit has not passed or has no committed serial, 64 bad arguments, \
                66 no such unit, 69 the printer cannot be reached, 74 the records or the label folder cannot be \
                read or written.

                Examples:
                  tuneup records label TS1-202653-000042 --product "Tuneup TS-1" --labels /srv/labels --db line.sqlite
                  tuneup records label 0123456789ABCDEF --product "Tuneup TS-1" --label-printer tcp:10.0.0.40:9100
                """)

        @Argument(help: ArgumentHelp("The unit's hardware id or serial number.", valueName: "unit"))
        var unit: String

        @Option(help: ArgumentHelp("The product name printed on the label (the recipe's product name).", valueName: "name"))
        var product: String

        @OptionGroup var source: Source

        @OptionGroup(title: "Labels") var labels: LabelOptions

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if !labels.wanted { throw ValidationError("name where the label goes: --labels DIR, --label-printer tcp:HOST[:PORT], or both") }
            if product.isEmpty || product.contains("\n") { throw ValidationError("--product must be one non-empty line") }
        }

        func run() async throws {
            let printed: PrintedLabel
            do {
                let store = try await source.open()
                let record = try await RecordsCommand.findUnit(unit, in: store, db: source.db)
                let content: LabelContent
                do { content = try LabelContent(reprinting: record, product: product) } catch { throw CommandFailure(message: error.message, code: 1) }
                guard let printer = try await labels.makePrinter() else { return }
                printed = try await printer.print(content)
            } catch {
                throw failureExit(error)
            }
            if output.json {
                Output.line(try Output.jsonLine(printed))
                return
            }
            if let problem = printed.previewProblem { printError(problem) }
            Output.line("label \(printed.serial): " + (printed.files + (printed.printer.map { [$0.description] } ?? [])).joined(separator: ", "))
        }
    }
}
