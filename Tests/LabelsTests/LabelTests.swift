import Foundation
import Labels
import Spawn
import Support
import TestSupport
import Testing
import Transport

/// Labels: the ZPL a printer gets, the preview drawn from libzint's symbols and read back by real barcode readers
/// (zbarimg for Code 128, dmtxread for DataMatrix: Debian's zbar-tools and dmtx-utils, installed by
/// tools/install-deps.sh — the tests fail, not skip, without them), the folder and the printer port.
@Suite("Labels")
struct LabelTests {
    let unit = LabelContent(product: "Tuneup TS-1 Headset", serial: "TS1-202653-000042", bluetoothAddress: "00:1A:7D:DA:71:13")

    static func tool(_ name: String) throws -> String {
        for dir in ["/usr/bin", "/usr/local/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        throw TestFailure("\(name) is not installed: the label tests decode their previews with it (tools/install-deps.sh installs it)")
    }

    static func temporaryDirectory() throws -> String {
        try TemporaryDirectory.make("labels")
    }

    /// The symbols a reader finds in a PNG, one string per symbol.
    static func decode(_ png: [UInt8], with reader: String, _ arguments: [String]) async throws -> [String] {
        try await offThePool {
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/label.png"
            try Data(png).write(to: URL(fileURLWithPath: path))
            let process = try ChildProcess(reader, arguments + [path], stderr: .null)
            process.waitUntilExit(within: 60)
            return process.output!.textBlocking(timeout: 10).split(separator: "\n").map(String.init)
        }
    }

    static func preview(_ design: LabelDesign) async throws -> [UInt8] {
        let svg = design.svg
        guard let png = try await offThePool({ SVGRasterizer.png(of: svg, zoom: 2) }) else {
            throw TestFailure("rsvg-convert made no PNG (tools/install-deps.sh installs librsvg2-bin)")
        }
        return png
    }

    @Test func code128PreviewReadsBackAsTheSerialAndTheAddress() async throws {
        let zbarimg = try Self.tool("zbarimg")
        let design = try LabelDesign(unit, symbology: .code128)
        let png = try await Self.preview(design)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        let read = try await Self.decode(png, with: zbarimg, ["--quiet", "--raw", "-Sdisable", "-Scode128.enable"])
        #expect(read.sorted() == [unit.serial, unit.bluetoothAddress!].sorted())
    }

    @Test func dataMatrixPreviewReadsBackAsTheGS1ElementString() async throws {
        let dmtxread = try Self.tool("dmtxread")
        let design = try LabelDesign(unit, symbology: .datamatrix)
        let png = try await Self.preview(design)
        let read = try await Self.decode(png, with: dmtxread, ["--stop-after=1", "--milliseconds=20000"])
        // FNC1 reads as the GS1 group separator between the variable-length serial and the next AI.
        let text = read.joined(separator: "\n")
        #expect(text.contains("21\(unit.serial)") && text.hasSuffix("91\(unit.bluetoothAddress!)"), "read: \(read)")
    }

    @Test func aLabelWithoutAnAddressCarriesTheSerialOnly() async throws {
        let zbarimg = try Self.tool("zbarimg")
        let serialOnly = LabelContent(product: "TS-1", serial: "TS1-000001", bluetoothAddress: nil)
        let design = try LabelDesign(serialOnly)
        #expect(design.zpl.components(separatedBy: "^BC").count == 2, "one Code 128 field")
        let read = try await Self.decode(try await Self.preview(design), with: zbarimg, ["--quiet", "--raw"])
        #expect(read == ["TS1-000001"])
    }

    @Test func zplHasTheFieldsAndEscapesTheProductName() throws {
        let odd = LabelContent(product: "Caf\u{E9} ^XZ ~JA \\ 1", serial: "S_1/2", bluetoothAddress: "00:1A:7D:DA:71:13")
        let zpl = try LabelDesign(odd).zpl
        let lines = zpl.split(separator: "\n").map(String.init)
        #expect(lines.first == "^XA" && lines.last == "^XZ" && lines.contains("^CI28"))
        #expect(zpl.components(separatedBy: "^XZ").count == 2, "a product name cannot end the label early")
        #expect(lines.contains { $0.hasSuffix("^FH\\^FDCaf\\C3\\A9 \\5EXZ \\7EJA \\5C 1^FS") }, "\(lines)")
        #expect(lines.contains { $0.contains("^BCN,70,Y,N,N,A^FDS_1/2^FS") })
        #expect(lines.contains { $0.contains("^BCN,70,Y,N,N,A^FD00:1A:7D:DA:71:13^FS") })

        let matrix = try LabelDesign(odd, symbology: .datamatrix).zpl
        #expect(matrix.contains("^BXN,6,200,,,,_^FD_121S__1/2_19100:1A:7D:DA:71:13^FS"), "FNC1 as _1, _ doubled")
    }

    @Test func valuesNoBarcodeCanCarryAreRefusedBeforeAnythingIsWritten() throws {
        for serial in ["", "TS1 000001", "TS1^XZ", "TS1~", "S\u{E9}rie", String(repeating: "9", count: 33)] {
            #expect(throws: LabelError.self, "serial \(serial)") {
                try LabelDesign(LabelContent(product: "TS-1", serial: serial, bluetoothAddress: nil))
            }
        }
        do {
            _ = try LabelDesign(LabelContent(product: "TS-1", serial: "TS1>1", bluetoothAddress: nil))
            Issue.record("a ZPL code-set character was accepted")
        } catch {
            #expect(error.code == .unprintable && !error.message.contains("\n"))
        }
    }

    @Test func printerAddresses() throws {
        #expect(try PrinterAddress.parse("tcp:10.0.0.7:9100") == PrinterAddress(host: "10.0.0.7", port: 9100))
        #expect(try PrinterAddress.parse("tcp:printer.local") == PrinterAddress(host: "printer.local", port: 9100))
        #expect(try PrinterAddress.parse("tcp:[::1]:6101") == PrinterAddress(host: "::1", port: 6101))
        for bad in ["10.0.0.7:9100", "tcp:", "tcp::9100", "tcp:host:0", "tcp:host:70000", "tcp:host:x", "usb:1-2", "tcp:[::1"] {
            #expect(throws: LabelError.self, "\(bad)") { try PrinterAddress.parse(bad) }
        }
    }

    @Test func theFolderGetsTheZPLAndAPreviewAndAPrinterPortGetsTheZPL() async throws {
        let folder = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let listener = try await TCPListener.bind()
        defer { listener.close() }
        guard case .tcp(_, let port) = listener.boundAddress else { throw TestFailure("not a TCP address") }
        let received = Task { () -> [UInt8] in
            let link = try await listener.accept()
            var bytes: [UInt8] = []
            while let chunk = try? await link.receive(), !chunk.isEmpty { bytes += chunk }
            await link.close()
            return bytes
        }
        let printer = LabelPrinter(folder: folder, printer: PrinterAddress(host: "127.0.0.1", port: port))
        let printed = try await printer.print(unit)
        let zpl = try LabelDesign(unit).zpl
        #expect(try await received.value == Array(zpl.utf8), "the printer got the label's ZPL, whole")
        #expect(printed.files == ["\(folder)/\(unit.serial).zpl", "\(folder)/\(unit.serial).png"] && printed.previewProblem == nil)
        #expect(FileManager.default.contents(atPath: "\(folder)/\(unit.serial).zpl") == Data(zpl.utf8))
        let png = [UInt8](FileManager.default.contents(atPath: "\(folder)/\(unit.serial).png") ?? Data())
        let read = try await Self.decode(png, with: try Self.tool("zbarimg"), ["--quiet", "--raw"])
        #expect(read.sorted() == [unit.serial, unit.bluetoothAddress!].sorted())
    }

    @Test func aPrinterThatIsNotThereIsOneLineAndAFolderThatIsNotOneIsRefused() async throws {
        // A port nothing listens on: bound, then closed.
        let listener = try await TCPListener.bind()
        guard case .tcp(_, let port) = listener.boundAddress else { throw TestFailure("not a TCP address") }
        listener.close()
        let printer = LabelPrinter(folder: nil, printer: PrinterAddress(host: "127.0.0.1", port: port), timeout: .seconds(30))
        do {
            _ = try await printer.print(unit)
            Issue.record("a label went to a port nothing listens on")
        } catch {
            #expect(error.code == .printer && error.message.contains("cannot be reached") && !error.message.contains("\n"), "\(error.message)")
        }
        let file = try TemporaryDirectory.make("labels-file") + "/labels"
        FileManager.default.createFile(atPath: file, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: file) }
        for path in [file, "/nonexistent/labels"] {
            #expect(throws: LabelError.self) { try LabelPrinter.checkFolder(path) }
        }
    }

    @Test func serialsBecomeFileNamesInsideTheFolder() async throws {
        let folder = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let printed = try await LabelPrinter(folder: folder, printer: nil).print(
            LabelContent(product: "TS-1", serial: "../A/B", bluetoothAddress: nil))
        #expect(printed.files.allSatisfy { $0.hasPrefix(folder + "/") && !$0.dropFirst(folder.count + 1).contains("/") }, "\(printed.files)")
    }
}
