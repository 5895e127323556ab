import ArgumentParser
import Foundation
import Glibc
import Progress
import Support
import Terminal
import Transport
import Wearable
import WearableRecording
import WearableSession

extension WearableCommand {
    /// What to stream: sensors at one period, gestures, for how long.
    struct StreamSetup: ParsableArguments {
        @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("A sensor to stream, by name or id (repeatable; default: accelerometer and gyroscope; 'none': gestures alone).", valueName: "sensor"))
        var sensor: [String] = []
        @Option(parsing: .unconditional, help: ArgumentHelp("The shared sample period: 320ms, 160ms, 80ms, 40ms or 20ms.", valueName: "period"))
        var period: String = "20ms"
        @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("A gesture to listen for, by name or id (double-tap or 0x81; repeatable; default: every gesture the device offers; 'none': no gestures).",
                                   valueName: "gesture"))
        var gesture: [String] = []
        @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this long: 500ms, 10s, 2min, 1h or plain seconds, up to 24 h (default: until Ctrl-C).",
                                   valueName: "duration"))
        var duration: String?
        @Flag(help: "Skip the library's checks: let the device judge the configuration.") var noCheck = false
        @Option(parsing: .unconditional, help: ArgumentHelp(
            "After a lost link, reopen the device and write the configuration again for this long before giving up: never (default), a duration (30s, 5min), or 0 (do not reconnect: a lost link ends the command, exit 69).",
            valueName: "duration"))
        var reconnectTimeout: String = "never"

        func validate() throws {
            _ = try sensors
            _ = try reconnectPolicy()
            _ = try WearableCommand.period(period)
            if gesture != ["none"] { for g in gesture { _ = try WearableCommand.gesture(named: g) } }
            _ = try stopAfter()
        }

        /// How to reconnect: nil with `--reconnect-timeout 0` (a lost link ends the stream).
        func reconnectPolicy() throws -> ReconnectPolicy? {
            do {
                return try WearableStreamSetup.reconnectPolicy(reconnectTimeout)
            } catch {
                throw ValidationError(error.message)
            }
        }

        func stopAfter() throws -> Duration? {
            guard let duration else { return nil }
            return try durationOption(duration, "--duration", upTo: .seconds(86400))
        }

        /// What the library streams.
        func resolved() throws -> WearableStreamSetup {
            WearableStreamSetup(sensors: try sensors, period: try WearableCommand.period(period),
                                gestures: gesture == ["none"] ? [] : gesture.isEmpty ? nil : try gesture.map(WearableCommand.gesture(named:)),
                                checked: !noCheck, stopAfter: try stopAfter())
        }

        /// The sensors to stream: accelerometer and gyroscope by default, none with `--sensor none` (gestures alone).
        var sensors: [SensorType] {
            get throws {
                if sensor == ["none"] { return [] }
                return sensor.isEmpty ? [.accelerometer, .gyroscope] : try sensor.map(WearableCommand.sensor(named:))
            }
        }
    }

    /// Signals that stop a stream (SIGINT, SIGTERM, SIGHUP), nil when they cannot be caught.
    static func stopSignals() -> AsyncStream<Int32>? { try? TerminationSignals.subscribe() }

    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    struct Stream: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "stream",
            abstract: "Stream sensor samples and gestures: a live view on a terminal, JSON Lines otherwise.",
            discussion: """
                Enables the sensors at the period and the gestures, then shows every sample and gesture until \
                --duration or Ctrl-C. A lost link is reconnected (the device opened again, the same configuration \
                written again; linkLost and reconnected events mark the gap with its length) until \
                --reconnect-timeout (default never; 0: a lost link ends the stream, exit 69). On a terminal: a compact live view (latest values, counts, gaps, gestures). \
                Otherwise (or with --format json): one JSON object per line — events (opened, failedToOpen, \
                configured, malformed, linkLost, reconnected, closed), samples (device timestamp, unwrapped deviceTime, hostTime, values, \
                missingBefore), gestures, and a closing summary with samples, gaps and missing samples per sensor and the reconnects.
                Examples:
                  tuneup wearable stream --duration 2s
                  tuneup wearable stream --sensor rotation --period 40ms --gesture headNod --duration 1s --format json
                """)
        @OptionGroup var setup: StreamSetup
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let live = !output.json && WearableCommand.stdoutIsTerminal
            var view = WearableTerminalView(device: choice.deviceText)
            var failedToOpen = false
            do {
                try await WearableStreaming.stream(try choice.session(reconnect: try setup.reconnectPolicy()), try setup.resolved(),
                                                   stopSignals: WearableCommand.stopSignals(), emit: { line in
                    if line.event == "failedToOpen" { failedToOpen = true }
                    if live {
                        view.take(line)
                    } else if let text = try? Output.jsonLine(line) {
                        Output.line(text)
                    }
                }, shouldStop: { Console.hasFailed(STDOUT_FILENO) }, finish: { summary in
                    if live {
                        view.draw(force: true)
                        Output.line(WearableText.summary(summary))
                    }
                })
            } catch {
                // A device that failed to open: its error as it is; a refused configuration: the rule it broke.
                throw failureExit(failedToOpen ? choice.openFailure(error) : WearableCommand.explained(error))
            }
        }
    }

    struct Record: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Record sensor samples and gestures to PATH.jsonl and PATH.csv, written as the recording goes.",
            discussion: """
                As 'stream', into files written as it goes, at least every second (a recording killed outright \
                keeps all but its last second; a full disk stops it with one line, keeping what was written), until \
                --duration, Ctrl-C or a link lost for good (reconnected as in 'stream'; what arrived is kept). Before the device is opened \
                every file is checked: an earlier recording of the name is refused (--overwrite replaces it once the recording \
                starts), and so are a symbolic link, a missing directory, a device, FIFO, socket or directory in the way (exit 74); \
                nothing there is touched until the first sample arrives. PATH.jsonl starts \
                with a metadata line (device information, sensors with their period and scaling, gestures, the tool, the \
                wall-clock time of device time zero: docs/wearable.md §10), then holds every line 'stream --format json' \
                prints, samples and gestures with epochMs (ms since 1970 UTC); PATH.csv one row per sample or gesture \
                (kind, sensor_or_gesture, timestamp, device_time_ms, host_time_s, x, y, z, w, accuracy, bias_x, bias_y, \
                bias_z, missing_before, yaw_deg, pitch_deg, roll_deg, epoch_ms). --split-by-sensor also writes \
                PATH.SENSOR.csv per sensor (epoch (ms), elapsed (s), device time (ms), x (g), y (g), z (g), accuracy, \
                missing before; for gyroscope deg/s; quaternions x, y, z, w and yaw, pitch, roll in deg) and \
                PATH.gestures.csv. 'tuneup wearable plot PATH.jsonl' draws it; 'tuneup sim wearable --replay PATH.jsonl' \
                plays it back as a device. On a terminal the live view shows meanwhile.
                Examples:
                  tuneup wearable record /tmp/session --duration 2s
                  tuneup wearable record /tmp/nods --sensor gameRotation --sensor gyroscope --period 20ms --duration 2s --device sim:wearable:3
                  tuneup wearable record /tmp/walk-split --split-by-sensor --duration 2s
                """)
        @Argument(help: ArgumentHelp("Where to write: PATH.jsonl and PATH.csv (a trailing .jsonl or .csv is dropped).", valueName: "path"))
        var path: String
        @Flag(help: "Also write one CSV per sensor (PATH.SENSOR.csv) and one for the gestures (PATH.gestures.csv), with unit-bearing headers.")
        var splitBySensor = false
        @Flag(help: "Replace an earlier recording of the same name once the recording starts (else it is refused).")
        var overwrite = false
        @OptionGroup var setup: StreamSetup
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        var base: String { WearableRecorder.recordingBase(path).base ?? path }

        func validate() throws {
            if let problem = WearableRecorder.recordingBase(path).problem { throw ValidationError(problem) }
        }

        func run() async throws {
            let live = !output.json && WearableCommand.stdoutIsTerminal
            var view = WearableTerminalView(device: choice.deviceText)
            let base = self.base, json = output.json, duration = setup.duration
            var failedToOpen = false
            do {
                try await WearableStreaming.record(
                    try choice.session(reconnect: try setup.reconnectPolicy()), try setup.resolved(), base: base,
                    split: splitBySensor ? try setup.sensors : nil, splitGestures: splitBySensor && setup.gesture != ["none"], overwrite: overwrite,
                    tool: "tuneup \(TuneupVersion.string)", stopSignals: WearableCommand.stopSignals(), emit: { line in
                        if line.event == "failedToOpen" { failedToOpen = true }
                        if live { view.take(line) }
                        if !live, line.event == "configured" {
                            Console.err("recording to \(base).jsonl and \(base).csv" + (duration.map { " for \($0)" } ?? "") + "; Ctrl-C stops\n")
                        }
                    }, finish: { written in
                        if live { view.draw(force: true) }
                        try Output.emit(written, json: json) { written.text }
                    })
            } catch {
                // A device that failed to open: its error as it is; a refused configuration: the rule it broke.
                throw failureExit(failedToOpen ? choice.openFailure(error) : WearableCommand.explained(error))
            }
        }
    }
}
