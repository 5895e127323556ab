import ArgumentParser
import CBuildInfo
import Foundation
import Glibc
import Terminal
import TuneupKit

@main
struct Tuneup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tuneup",
        abstract: "Probe, configure and simulate LightX headsets over USB, Bluetooth, serial or TCP.",
        discussion: """
            Every device command takes --device ADDR (default: $TUNEUP_DEVICE, else the built-in simulated \
            headset 'sim'). 'tuneup devices' lists USB headsets. Addresses:
            \(Devices.schemeLines().joined(separator: "\n"))

            Exit codes: 0 success, 64 bad arguments or settings, 65 the device refused or answered with an error \
            (or an image is invalid), 69 the device could not be reached or stopped answering, 74 a local file \
            (state, image, key, progress file, standard output) could not be read or written, 129/130/143 \
            stopped by SIGHUP/SIGINT/SIGTERM, 1 anything else. Every failure prints one line on stderr.

            Examples:
              tuneup probe
              tuneup flash firmware-images/app-1.5.0.img
              tuneup anc on
              tuneup ambient set --left 3 --right 3
              tuneup eq set --preset user -- 2 1 0 0 -1 -1 0 1 2 3
              tuneup sim headset --listen tcp:127.0.0.1:0 &
              tuneup probe --device tcp:127.0.0.1:PORT --format json
            """,
        version: TuneupVersion.line,
        subcommands: [
            ProbeCommand.self, ANCCommand.self, AmbientCommand.self, EQCommand.self, BatteryCommand.self,
            SettingsCommand.self, MonitorCommand.self, DevicesCommand.self, FlashCommand.self, BootloaderCommand.self, FirmwareCommand.self, ImageCommand.self,
            FactoryCommand.self, StationCommand.self, RecordsCommand.self, LineCommand.self,
            SpeakerCommand.self,
            WearableCommand.self,
            SimCommand.self, CaptureCommand.self,
        ])

    /// Parses, runs, and maps every failure to one stderr line and an exit code (`CommandRunner`).
    static func main() async {
        Console.start()
        let code = await CommandRunner.run(Array(CommandLine.arguments.dropFirst()))
        Console.flush()
        Glibc.exit(code)
    }
}

enum TuneupVersion {
    static let string = "0.1.0"
    /// `tuneup --version`: the version, and the commit when the build was given one ("0.1.0 (commit 1eff6b7c9a2d)").
    static let line: String = {
        let commit = String(cString: tuneup_build_commit())
        return commit.isEmpty ? string : "\(string) (commit \(commit))"
    }()
}
