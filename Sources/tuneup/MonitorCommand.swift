import ArgumentParser
import Foundation
import TuneupKit
import Terminal

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print device pushes (ANC toggled, ambient preset, battery) as they arrive.",
        discussion: """
            Runs until Ctrl-C, --count pushes, --duration seconds, or the device disconnects (exit 69). \
            With --format json each push is one JSON object per line. Example:
              tuneup monitor --device tcp:127.0.0.1:4100 --count 1
            """)

    @Option(help: ArgumentHelp("Stop after this many pushes.", valueName: "n"))
    var count: Int?
    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?
    @OptionGroup var device: DeviceOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be more than 0 seconds") }
    }

    func run() async throws {
        let json = output.json
        let limit = count
        let deadline = duration.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        let address = try device.address()
        try await withHeadset(device) { h in
            try await HeadsetMonitor.follow(h, address: address.description, count: limit, until: deadline, started: { product in
                printError("monitoring \(product) at \(address); Ctrl-C to stop")
            }, emit: { e in Output.line(json ? try Output.jsonLine(e) : e.text) })
        }
    }
}
