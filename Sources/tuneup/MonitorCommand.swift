import ArgumentParser
import Foundation
import Headset
import LightX
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

    struct Event: Encodable {
        var time: String
        var type: String
        var enabled: Bool?
        var preset: String?
        var percent: Int?
        var command: String?
        var payload: String?
    }

    static func event(_ push: HeadsetPush, at date: Date) -> Event {
        let time = ISO8601DateFormatter.string(from: date, timeZone: .current, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        var e = Event(time: time, type: "")
        switch push {
        case let .ancEnabled(on): e.type = "anc"; e.enabled = on
        case let .awarenessPreset(p): e.type = "ambient-preset"; e.preset = p.name?.lowercased() ?? String(p.rawValue)
        case let .batteryLevel(p): e.type = "battery"; e.percent = p
        case let .other(command, payload):
            e.type = "other"
            e.command = "0x" + String(command.rawValue, radix: 16)
            e.payload = hexString(payload)
        }
        return e
    }

    static func text(_ e: Event) -> String {
        let clock = e.time.split(separator: "T").last.map { String($0.prefix(12)) } ?? e.time
        switch e.type {
        case "anc": return "\(clock)  ANC \(Output.onOff(e.enabled ?? false))"
        case "ambient-preset": return "\(clock)  ambient preset \(e.preset ?? "?")"
        case "battery": return "\(clock)  battery \(e.percent ?? 0)%"
        default: return "\(clock)  push \(e.command ?? "?") [\(e.payload ?? "")]"
        }
    }

    func run() async throws {
        let json = output.json
        let limit = count
        let deadline = duration.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        let address = try device.address()
        try await withHeadset(device) { h in
            let pushes = await h.pushes()
            // One exchange first: proves the device is there and answering before we say we are listening.
            let product = try await h.readIfSupported(ConfigStrings.identity[0]) ?? "device"
            printError("monitoring \(product) at \(address); Ctrl-C to stop")
            let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    var seen = 0
                    for await push in pushes {
                        let e = MonitorCommand.event(push, at: Date())
                        Output.line(json ? try Output.jsonLine(e) : MonitorCommand.text(e))
                        seen += 1
                        if let limit, seen >= limit { return true }
                    }
                    return false  // The stream ended: the device went away.
                }
                if let deadline {
                    group.addTask {
                        try await Task.sleep(until: deadline, clock: .continuous)
                        return true
                    }
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !finished {
                throw HeadsetError(.disconnected, "\(address) disconnected")
            }
        }
    }
}
