import ArgumentParser
import Capture
import Terminal

/// `tuneup capture ...`: captures written with --capture (docs/capture.md). Thin: the library reads and decodes.
struct CaptureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Read the pcapng captures that --capture writes.",
        discussion: """
            Every command that talks to a device (and 'tuneup sim ...') takes --capture FILE.pcapng: every frame of \
            every link, with its direction and time. Wireshark reads it with the dissectors of tools/wireshark/; \
            'capture show' prints it decoded without Wireshark.

            Exit codes: 0 success, 64 bad arguments, 65 not a pcapng capture or one cut mid-block (the block named), \
            74 the file cannot be read.
            """,
        subcommands: [Show.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print every command and reply of a capture, decoded.",
            discussion: """
                One line per message: packet number, time (UTC), interface, direction (→ sent, ← received by the side \
                that wrote the capture), and the message by name with its arguments and errors. Byte streams are \
                reassembled per direction into whole frames. With --format json: the interfaces and every message's \
                fields as docs/capture.md names them.
                Examples: tuneup probe --capture /tmp/probe.pcapng;  tuneup capture show /tmp/probe.pcapng --format json
                """)

        @Argument(help: ArgumentHelp("The capture file.", valueName: "file.pcapng"))
        var file: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let report: CaptureReport
            do {
                report = CaptureReport(try await CaptureFile.read(path: file))
            } catch {
                throw failureExit(error)
            }
            try Output.emit(report, json: output.json) { report.text }
        }
    }
}
