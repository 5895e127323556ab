import ArgumentParser
import Foundation
import Terminal
import WearableRecording

extension WearableCommand {
    struct Plot: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "plot",
            abstract: "Draw a recording as an SVG (one panel per sensor, gestures marked) and a PNG where rsvg-convert is installed.",
            discussion: """
                Reads RECORDING (the .jsonl of 'tuneup wearable record', any file name; PATH alone means \
                PATH.jsonl when there is no file PATH, and PATH.csv its .jsonl) and writes RECORDING.svg (or \
                --output): one panel per sensor with its components against the device time in seconds, the y axis in \
                the sensor's unit, samples lost in a gap left as a break in the lines, and each gesture a dashed line \
                across every panel, named in the first. --orientation adds, under each rotation and game rotation \
                panel, a panel of its yaw, pitch and roll in degrees (docs/wearable.md §4.1). A PNG of the same name (.png for .svg) is made with \
                rsvg-convert (Debian: librsvg2-bin) when it is on PATH; --no-png skips it. Both outputs are checked before \
                either is written: the recording itself (however named), a symbolic link, a device, FIFO, socket or \
                directory is refused (exit 74); a file there is replaced whole. \
                A file that is not a recording is refused with exit 65.
                Examples:
                  tuneup wearable record /tmp/walk --duration 3s --overwrite
                  tuneup wearable plot /tmp/walk.jsonl
                  tuneup wearable plot /tmp/walk --output /tmp/walk-plot.svg --no-png --format json
                  tuneup wearable record /tmp/head --sensor gameRotation --duration 5s
                  tuneup wearable plot /tmp/head --orientation
                """)
        @Argument(help: ArgumentHelp("The recording: PATH.jsonl written by 'record' (or PATH).", valueName: "recording"))
        var recording: String
        @Option(help: ArgumentHelp("The SVG to write (default: the recording's name with .svg; the PNG goes next to it with .png).",
                                   valueName: "file.svg"))
        var output: String?
        @Flag(help: "Do not make a PNG.") var noPng = false
        @Flag(help: "Add a panel of yaw, pitch and roll (degrees) under each rotation or game rotation panel.") var orientation = false
        @OptionGroup var format: OutputOptions

        func validate() throws {
            if let output, output.lowercased().hasSuffix(".png") {
                throw ValidationError("--output names the SVG to write (e.g. plot.svg; the PNG is made next to it as plot.png), got '\(output)'")
            }
            if let output, output.isEmpty { throw ValidationError("--output needs a file name") }
        }

        func run() async throws {
            let result: WearablePlot.Result
            do {
                result = try await WearablePlot.make(recording: recording, output: output, png: !noPng, orientation: orientation)
            } catch {
                throw failureExit(error)
            }
            if result.noOrientation {
                printError("no orientation panel: \(result.input) holds no rotation or game rotation samples")
            }
            if !noPng, result.made.png == nil { printError("no PNG made: rsvg-convert is not on PATH or failed (Debian: apt-get install librsvg2-bin)") }
            try Output.emit(result.made, json: format.json) { WearablePlot.text(result.made) }
        }
    }
}
