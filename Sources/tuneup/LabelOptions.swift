import ArgumentParser
import Labels
import Support

extension LabelSymbology: ExpressibleByArgument {}

/// Where unit labels go (`station run`, `records label`): a folder, a printer's raw TCP port, or both.
struct LabelOptions: ParsableArguments {
    @Option(name: .customLong("labels"), help: ArgumentHelp("Write each label to this folder: SERIAL.zpl (ZPL II) and its preview SERIAL.png.", valueName: "dir"))
    var folder: String?

    @Option(name: .customLong("label-printer"), help: ArgumentHelp("Send each label (ZPL II) to a printer's raw TCP port: tcp:HOST[:PORT] (port 9100 by default).", valueName: "addr"))
    var printer: String?

    @Option(name: .customLong("label-code"), help: ArgumentHelp("How a label carries the serial and Bluetooth address: code128 (two Code 128 symbols) or datamatrix (one GS1 DataMatrix: AI 21 and AI 91).", valueName: "kind"))
    var code: LabelSymbology = .code128

    var wanted: Bool { folder != nil || printer != nil }

    func validate() throws {
        if let printer {
            do { _ = try PrinterAddress.parse(printer) } catch { throw ValidationError(error.message) }
        }
        if code != .code128, !wanted { throw ValidationError("--label-code needs --labels DIR or --label-printer tcp:HOST[:PORT]") }
    }

    /// The printer these options describe (nil: no labels); the folder is checked (exit 74 when it cannot be used).
    func makePrinter() async throws -> LabelPrinter? {
        guard wanted else { return nil }
        if let folder { try await Blocking.perform("label folder") { try LabelPrinter.checkFolder(folder) } }
        return LabelPrinter(folder: folder, printer: try printer.map { try PrinterAddress.parse($0) }, symbology: code)
    }
}
