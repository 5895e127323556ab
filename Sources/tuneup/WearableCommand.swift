import ArgumentParser
import Capture
import Failure
import Foundation
import Logging
import Terminal
import Transport
import TuneupKit
import Wearable
import WearableLink
import WearableRecording
import WearableSession

/// `tuneup wearable ...`: a Bose Wearable device (sensors and gestures) over the GATT framing (docs/wearable.md).
struct WearableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wearable",
        abstract: "Bose Wearable devices: information, sensor and gesture configuration, streaming, recording, plots.",
        discussion: """
            The device is --device ADDR (default sim:wearable, a simulated wearable in this process; \
            sim:wearable:SEED another head motion; tcp:HOST:PORT or serial:PATH a 'tuneup sim wearable' or a device \
            speaking the same GATT framing). Every connection starts with every sensor and gesture disabled: \
            'sensors' and 'gestures' show what one write does, 'stream' and 'record' configure and then listen.
            A configuration the device cannot honour is refused with one line naming the rule: the library refuses \
            what the device's own information rules out before sending (exit 64), the device refuses the rest \
            (exit 65; --no-check sends everything to the device).
            Examples:
              tuneup wearable info
              tuneup wearable sensors --format json
              tuneup wearable sensors --enable accelerometer --enable gyroscope --period 20ms
              tuneup wearable gestures --enable headNod --enable doubleTap
              tuneup wearable stream --sensor accelerometer --period 40ms --duration 1s --format json
              tuneup wearable record /tmp/walk --duration 3s --device sim:wearable:7
              tuneup wearable plot /tmp/walk.jsonl
            """,
        subcommands: [Info.self, Sensors.self, Gestures.self, Stream.self, Record.self, Plot.self, Search.self])

    /// Where the wearable is.
    struct DeviceChoice: ParsableArguments {
        @Option(name: .shortAndLong, help: ArgumentHelp(
            "The wearable: sim:wearable[:SEED], tcp:HOST:PORT, serial:PATH, ble:AA:BB:CC:DD:EE:FF (default: $TUNEUP_DEVICE, else sim:wearable).",
            valueName: "addr"))
        var device: String?
        @OptionGroup var capture: CaptureOption

        /// The address as given: the option, else $TUNEUP_DEVICE (as the headset commands take it), else the simulator.
        var deviceText: String {
            device ?? fromEnvironment ?? "sim:wearable"
        }

        /// $TUNEUP_DEVICE when it names the device (no --device): messages about the address then say where it came
        /// from, as the user did not type it.
        var fromEnvironment: String? {
            device == nil ? DeviceOptions.deviceFromEnvironment : nil
        }

        @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for each reply.", valueName: "seconds"))
        var timeout: Double = 2

        @Flag(name: .shortAndLong, help: "Log every frame sent and received (requests, replies, notifications) to stderr.")
        var verbose = false

        func validate() throws {
            try checkSeconds(timeout, "--timeout")
            _ = try address()
        }

        func address() throws -> DeviceAddress {
            do { return try Devices.wearableAddress(option: device, environment: DeviceOptions.deviceFromEnvironment) } catch {
                throw ValidationError((error as? any CodedError)?.message ?? "\(error)")
            }
        }

        /// A failure to open the device, naming $TUNEUP_DEVICE when the address came from there.
        func openFailure(_ error: Error) -> Error { Devices.wearableOpenFailure(error, environment: fromEnvironment) }

        /// `reconnect`: reconnect after a lost link with this policy (stream and record).
        func session(reconnect: ReconnectPolicy? = nil) throws -> WearableDeviceSession {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.wearable")
            // As 'probe -v': the session logs each frame at trace, the link's back end its chunks.
            logger.logLevel = verbose ? .trace : .warning
            let options = WearableDeviceSession.Options(requests: RequestOptions(timeout: .milliseconds(Int64(timeout * 1000)), retransmissions: 1),
                                                        reconnect: reconnect)
            let connector = Devices.connector(ConnectionOptions(transportLogger: verbose ? logger : nil, capture: capture.settings(.wearable)))
            return WearableDeviceSession(address: try address(), connector: connector, options: options, logger: logger)
        }
    }

    /// Opens the session, runs `body`, closes it; failures become one line and their exit code.
    static func with<T>(_ choice: DeviceChoice, _ body: (WearableDeviceSession) async throws -> T) async throws -> T {
        let session = try choice.session()
        do {
            try await session.open()
        } catch {
            throw failureExit(choice.openFailure(error))
        }
        do {
            let result = try await body(session)
            await session.close()
            return result
        } catch {
            await session.close()
            throw failureExit(explained(error))
        }
    }

    /// A refused configuration as one line that names the device rule it broke.
    static func explained(_ error: Error) -> Error { WearableSessionError.explained(error) }

    // MARK: Names and units

    /// A sensor, a gesture, a sample period as the wearable library reads them; a bad one is one line (64).
    static func sensor(named text: String) throws -> SensorType {
        do { return try WearableText.sensorArgument(text) } catch { throw ValidationError(error.message) }
    }

    static func gesture(named text: String) throws -> GestureType {
        do { return try WearableText.gestureArgument(text) } catch { throw ValidationError(error.message) }
    }

    static func period(_ text: String, option: String = "--period") throws -> SamplePeriod {
        do { return try WearableText.periodArgument(text, option: option) } catch { throw ValidationError(error.message) }
    }

    // MARK: Commands

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show the device's DeviceInformation: version, product, sensors, gestures, transmission budget, status.")
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await WearableCommand.with(choice) { s in
                let report = try await WearableInfoReport.of(s)
                try Output.emit(report, json: output.json) { report.text }
            }
        }
    }

    struct Sensors: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sensors",
            abstract: "List the sensors (ranges, periods, configuration) and configure them in one write.",
            discussion: """
                Without options: the SensorInformation and the current configuration. With options, one write: \
                --disable-all first, then --disable, then --enable at --period (all enabled sensors share one period; \
                --period alone moves the enabled sensors to it). The device's answer is read back and shown.
                Examples:
                  tuneup wearable sensors
                  tuneup wearable sensors --enable accelerometer --enable gyroscope --period 20ms
                Refused (marked $; exit 64 and 65):
                  $ tuneup wearable sensors --enable rotation --period 320ms        (before sending: period not offered)
                  $ tuneup wearable sensors --enable accelerometer --enable gyroscope --enable rotation --period 20ms
                                                                                    (by the device: over the payload budget)
                """)
        // Options that take numbers (a sensor's id, a period) take the next word whatever it is, so that a negative
        // value reaches the check and its one line instead of "Missing value".
        @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Enable this sensor, by name or id (repeatable).", valueName: "sensor"))
        var enable: [String] = []
        @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Disable this sensor, by name or id (repeatable).", valueName: "sensor"))
        var disable: [String] = []
        @Flag(help: "Disable every sensor (before any --enable).") var disableAll = false
        @Option(parsing: .unconditional,
                help: ArgumentHelp("The shared sample period: 320ms, 160ms, 80ms, 40ms or 20ms (default for --enable: 40ms).", valueName: "period"))
        var period: String?
        @Flag(help: "Skip the library's checks: let the device judge the configuration.") var noCheck = false
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        func validate() throws {
            for s in enable + disable { _ = try WearableCommand.sensor(named: s) }
            if let period { _ = try WearableCommand.period(period) }
        }

        var writes: Bool { !enable.isEmpty || !disable.isEmpty || disableAll || period != nil }

        func run() async throws {
            let enabled = try enable.map(WearableCommand.sensor(named:)), disabled = try disable.map(WearableCommand.sensor(named:))
            let shared = try period.map { try WearableCommand.period($0) }
            try await WearableCommand.with(choice) { s in
                if writes { try await s.configureSensors(enable: enabled, disable: disabled, disableAll: disableAll, period: shared, checked: !noCheck) }
                let report = try await WearableSensorsReport.of(s, written: writes)
                try Output.emit(report, json: output.json) { report.text }
            }
        }
    }

    struct Gestures: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gestures",
            abstract: "List the gestures (and whether each is on) and configure them in one write.",
            discussion: """
                Examples:
                  tuneup wearable gestures
                  tuneup wearable gestures --enable headNod --enable headShake
                  tuneup wearable gestures --all
                """)
        // A gesture's id is a number: a negative one reaches the check (see Sensors).
        @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Enable this gesture (repeatable): singleTap, doubleTap, headNod, headShake, or its id (0x81).",
                                                            valueName: "gesture"))
        var enable: [String] = []
        @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Disable this gesture, by name or id (repeatable).", valueName: "gesture"))
        var disable: [String] = []
        @Flag(help: "Enable every gesture the device offers.") var all = false
        @Flag(help: "Disable every gesture (before any --enable).") var disableAll = false
        @Flag(help: "Skip the library's checks: let the device judge the configuration.") var noCheck = false
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        func validate() throws {
            for g in enable + disable { _ = try WearableCommand.gesture(named: g) }
            if all, disableAll { throw ValidationError("choose one of --all and --disable-all") }
        }

        var writes: Bool { !enable.isEmpty || !disable.isEmpty || all || disableAll }

        func run() async throws {
            let on = try enable.map(WearableCommand.gesture(named:)), off = try disable.map(WearableCommand.gesture(named:))
            try await WearableCommand.with(choice) { s in
                if writes { try await s.configureGestures(enable: on, disable: off, all: all, disableAll: disableAll, checked: !noCheck) }
                let report = try await WearableGesturesReport.of(s, written: writes)
                try Output.emit(report, json: output.json) { report.text }
            }
        }
    }
}
