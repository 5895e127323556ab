import ArgumentParser
import Capture
import Dispatch
import BluetoothTransport
import Firmware
import Foundation
import LightX
import Logging
import HeadsetSimulator
import Support
import Terminal
import Transport
import TuneupKit

struct SimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run simulated devices that other tools (or tuneup itself) can connect to.",
        subcommands: [Headset.self, Line.self, SpeakerSim.self, WearableSim.self])

    struct Headset: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "headset",
            abstract: "Simulate LightX headsets on TCP or on pseudo-terminals.",
            discussion: """
                Prints one address per device as the first lines of stdout (tcp:HOST:PORT, or serial:/dev/pts/N \
                with --pty), then serves until Ctrl-C or 'quit'. Lines on stdin act on the devices:
                  press anc [DEVICE]       press the ANC button (toggles ANC; the device pushes the change)
                  press ambient [DEVICE]   press the ambient button (cycles the awareness preset)
                  battery PERCENT [DEVICE] set the battery level
                  power-cut [DEVICE]       cut the power (the device comes back up by itself)
                  reboot [DEVICE]          restart the device
                  quit                     stop
                Examples:
                  tuneup sim headset --listen tcp:127.0.0.1:0 --state /tmp/headset.json
                  tuneup sim headset --pty --count 2
                  tuneup sim headset --listen tcp:127.0.0.1:4100 --profile flaky:7
                  tuneup sim headset --faults 'cut@40;link:drop=0.01,seed=3' --time-scale 0.1
                  tuneup sim headset --secure-boot firmware-images/dev-public.pem
                  tuneup sim headset --usb-gadget     # as root, with a UDC (e.g. modprobe dummy_hcd)
                  tuneup sim headset --rfcomm 3 --adapter hci0
                  tuneup sim headset --count 8 --blank --seed 7 --fail-share 0.1   # a production line
                """)

        @Option(help: ArgumentHelp("Listen on tcp:HOST:PORT (port 0 picks free ports; device k uses PORT+k otherwise).", valueName: "addr"))
        var listen: String?
        @OptionGroup var capture: CaptureOption
        @Option(help: ArgumentHelp(
            "Emulate the headset of this capture instead of simulating one: answer the recorded replies to matching requests (TCP, or --usb-gadget).",
            discussion: "Exit 0 once every recorded request was answered; 65 at the first request that matches nothing (one line and a hex diff).",
            valueName: "capture.pcapng"))
        var emulate: String?

        @Flag(help: "Serve on pseudo-terminals instead of TCP (usable as serial:PATH).")
        var pty = false

        @Option(help: ArgumentHelp(
            "Listen for Bluetooth RFCOMM connections on this channel (1-30), registering an SPP record where an SDP server runs.",
            valueName: "channel"))
        var rfcomm: UInt8?

        @Option(help: ArgumentHelp("The local Bluetooth adapter for --rfcomm: hciN or its address (default: the first one up).", valueName: "adapter"))
        var adapter: String?

        @Flag(help: ArgumentHelp(
            "Present the headset as a real USB HID device (FunctionFS on the first free UDC, e.g. dummy_hcd; root).",
            discussion: "It re-enumerates as 1209:0002 in its bootloader and back as 1209:0001, as a real device would."))
        var usbGadget = false

        @Option(help: ArgumentHelp("Number of devices, each with its own address and serial number.", valueName: "n"))
        var count: Int = 1

        @Option(help: ArgumentHelp("Keep the devices' settings in this file across restarts (default: in memory only).", valueName: "file"))
        var state: String?

        @Option(help: ArgumentHelp("Behaviour: normal, slow, flaky[:SEED], silent, stops-after:N.", valueName: "profile"))
        var profile: String = "normal"

        @Option(help: ArgumentHelp("Seconds per 1 % of battery drain; 0 disables it.", valueName: "seconds"))
        var batteryDrain: Double = 60

        @Option(help: ArgumentHelp(
            "Faults to inject: cut@N (power cut at flash operation N), fail@N, link:LINKSPEC, seed=N; ';'-separated.",
            discussion: "LINKSPEC keys: bw=700k, latency=15ms, corrupt=P, drop=P, stall=P:DURATION, disconnect=BYTES, seed=N.",
            valueName: "spec"))
        var faults: String?

        @Option(help: ArgumentHelp("Boot only application images signed by this Ed25519 public key (PEM); refuse rollback.", valueName: "pub.pem"))
        var secureBoot: String?

        @Option(help: ArgumentHelp("Multiply flash and boot timing (1 = like real parts: 45 ms per sector erase; 0 = instant).", valueName: "x"))
        var timeScale: Double = 1

        /// Each unit's microphone spread depends only on --seed and its index (docs/protocol.md §7).
        @Flag(help: "Units fresh from assembly: unique chip uid, no serial, default Bluetooth name, no calibration, factory commands open.")
        var blank = false

        @Option(help: ArgumentHelp("With --blank: the line's seed (uids and spreads).", valueName: "n"))
        var seed: UInt64 = 1

        @Option(help: ArgumentHelp("With --blank: the share 0...1 of units whose ANC calibration exceeds the limit.", valueName: "share"))
        var failShare: Double = 0

        @Option(help: ArgumentHelp("With --blank: the factory unlock key, 32 hex digits (default: the development key).", valueName: "hex"))
        var factoryKey: String?

        @Flag(name: .shortAndLong, help: "Log every frame to stderr.")
        var verbose = false

        func validate() throws {
            if [listen != nil, pty, usbGadget, rfcomm != nil].filter({ $0 }).count > 1 {
                throw ValidationError("choose one of --listen, --pty, --usb-gadget and --rfcomm")
            }
            if let rfcomm, !(1...30).contains(rfcomm) { throw ValidationError("--rfcomm takes a channel 1...30") }
            if adapter != nil && rfcomm == nil { throw ValidationError("--adapter goes with --rfcomm") }
            if rfcomm != nil && count != 1 { throw ValidationError("--rfcomm serves one device per channel: use --count 1") }
            if usbGadget && count != 1 { throw ValidationError("--usb-gadget presents one device (one USB device controller)") }
            guard (1...SimulatorServer.maxDevices).contains(count) else {
                throw ValidationError("--count must be 1...\(SimulatorServer.maxDevices)")
            }
            guard batteryDrain >= 0, batteryDrain.isFinite else { throw ValidationError("--battery-drain must be 0 or more seconds") }
            guard timeScale >= 0, timeScale <= 1000, timeScale.isFinite else { throw ValidationError("--time-scale must be 0...1000") }
            _ = try listenAddress()
            _ = try behaviour()
            _ = try faultPlan()
            if !blank && (failShare != 0 || factoryKey != nil) { throw ValidationError("--fail-share and --factory-key go with --blank") }
            guard failShare.isFinite, (0...1).contains(failShare) else { throw ValidationError("--fail-share must be 0...1") }
            _ = try productionLine()
        }

        func productionLine() throws -> ProductionLine? {
            guard blank else { return nil }
            var key = FactoryKey.development
            if let factoryKey {
                guard let parsed = FactoryKey(hex: factoryKey) else { throw ValidationError("--factory-key takes 32 hex digits") }
                key = parsed
            }
            return ProductionLine(seed: seed, failShare: failShare, factoryKey: key)
        }

        /// `--emulate`: the recorded headset on TCP (or a USB gadget) until its recording is played out or a request
        /// diverges.
        func runEmulation(_ path: String) async throws {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.sim")
            logger.logLevel = verbose ? .trace : .warning
            let (host, port) = try listenAddress()
            let presence: HeadsetEmulation.Presence = usbGadget ? .usbGadget : .tcp(host: host, port: port)
            // The emulation's errors come back as a value: written as one do/catch around the awaits with the
            // announcing closure in this function, the release build's compiler crashed (LLVM's coroutine split,
            // Swift 6.3.1).
            switch await Self.emulate(path, on: presence, logger: logger) {
            case let .failure(error):
                throw failureExit(error)
            case .success(.completed):
                printError("emulation complete: every recorded request was answered")
            case let .success(.diverged(text)):
                throw failureExit(CommandFailure(message: text, code: Exit.device))
            }
        }

        static func emulate(_ path: String, on presence: HeadsetEmulation.Presence, logger: Logger) async -> Result<HeadsetEmulator.Outcome, any Error> {
            let announce: @Sendable (String) -> Void = { address in
                Output.line(address)
                printError("emulating the headset of \(path); Ctrl-C to stop")
            }
            do {
                let script = try await EmulationScript.load(path: path)
                return .success(try await HeadsetEmulation.run(script, on: presence, logger: logger, started: announce))
            } catch {
                return .failure(error)
            }
        }

        func listenAddress() throws -> (host: String, port: UInt16) {
            do { let e = try ListenEndpoint(parsingTCP: listen ?? "tcp:127.0.0.1:0", option: "--listen"); return (e.host, e.port) } catch { throw ValidationError(error.message) }
        }

        func behaviour() throws -> BehaviourProfile {
            do {
                return try BehaviourProfile(parsing: profile)
            } catch {
                throw ValidationError(error.message)
            }
        }

        func faultPlan() throws -> FaultPlan {
            guard let faults else { return .none }
            do {
                return try FaultPlan(parsing: faults)
            } catch {
                throw ValidationError(error.message)
            }
        }

        func run() async throws {
            if let emulate { return try await runEmulation(emulate) }
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.sim")
            logger.logLevel = verbose ? .trace : .warning
            let key: VerificationKey?
            do {
                key = try await Blocking.perform("secure boot key") { [secureBoot] in try secureBoot.map { try VerificationKey.load(path: $0) } }
            } catch {
                throw failureExit(error)
            }
            var options = SimulatorOptions(
                profile: try behaviour(), drainInterval: .milliseconds(Int64(batteryDrain * 1000)), logger: logger,
                timeScale: timeScale, faults: try faultPlan(), secureBootKey: key)
            options.production = try productionLine()
            let link: SimulatedHeadsetLink
            if pty { link = .pty } else if let rfcomm { link = .rfcomm(adapter: adapter, channel: rfcomm) } else if usbGadget { link = .usbGadget } else {
                let (host, port) = try listenAddress()
                link = .tcp(host: host, port: port)
            }
            let headsets: SimulatedHeadsets
            let captured = capture.settings(.lightX, role: .device)
            do {
                headsets = try await SimulatedHeadsets.start(on: link, count: count, statePath: state, options: options, logger: logger) {
                    _ = try await captured?.writer()
                }
            } catch {
                throw failureExit(error)
            }
            if let captured { headsets.server.wrapLinks { try await captured.wrap($0) } }
            // Signals are handled before the addresses go out: whoever reads them may stop the simulator at once.
            let control = ControlInput.lines()
            for endpoint in headsets.endpoints { Output.line(endpoint) }
            printError("simulating \(count) headset\(count == 1 ? "" : "s") (\(options.profile)); stdin: \(SimulatorControl.usage); Ctrl-C to stop")
            await headsets.follow(control) { printError($0) }
            await headsets.shutdown()
        }
    }
}

extension SimCommand {
    /// `tuneup sim line`: fixture slots where blank units arrive one after another (a station's watch mode).
    struct Line: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "line",
            abstract: "Simulate a production line: fixture slots on TCP where blank units arrive and are taken out.",
            discussion: """
                Prints each slot's address (tcp:HOST:PORT) on a line of its own, then runs: each slot holds a unit \
                fresh from assembly (as 'sim headset --blank'); once a host has used it and then left it alone for \
                --dwell, the unit is taken out (the address stops answering) and after --gap the next unit arrives \
                in the slot. Unit i of the line has the hardware id and microphone spread of --seed and i. Arrivals \
                and removals are reported on stderr; the command ends when every unit has come and gone (or on \
                Ctrl-C).
                Examples:
                  tuneup sim line --slots 2 --units 6 --listen tcp:127.0.0.1:4400 --time-scale 0 &
                  tuneup station run --recipe recipes/sim-headset.yaml --watch -d tcp:127.0.0.1:4400 -d tcp:127.0.0.1:4401
                """)

        @Option(help: ArgumentHelp("Fixture slots, 1...64.", valueName: "n"))
        var slots: Int = 1

        @Option(help: ArgumentHelp("Units in all.", valueName: "n"))
        var units: Int = 1

        @Option(help: ArgumentHelp("Slot k listens on tcp:HOST:PORT+k (port 0 picks free ports).", valueName: "addr"))
        var listen: String = "tcp:127.0.0.1:0"

        @Option(help: ArgumentHelp("Take a unit out when the host has sent it nothing for this long after using it.", valueName: "duration"))
        var dwell: String = "2s"

        @Option(help: ArgumentHelp("Time between a unit leaving a slot and the next arriving; keep it several times the station's poll interval (200 ms), or the station never sees the slot empty.", valueName: "duration"))
        var gap: String = "1s"

        @Option(help: ArgumentHelp("The line's seed (uids and spreads).", valueName: "n"))
        var seed: UInt64 = 1

        @Option(help: ArgumentHelp("The share 0...1 of units whose ANC calibration exceeds the limit.", valueName: "share"))
        var failShare: Double = 0

        @Option(help: ArgumentHelp("Multiply flash and boot timing (1 = like real parts; 0 = instant).", valueName: "x"))
        var timeScale: Double = 1

        func validate() throws {
            guard (1...SimulatorServer.maxDevices).contains(slots) else { throw ValidationError("--slots must be 1...\(SimulatorServer.maxDevices)") }
            guard (1...1_000_000).contains(units) else { throw ValidationError("--units must be 1...1000000") }
            do { _ = try ListenEndpoint(parsingTCP: listen, option: "--listen") } catch { throw ValidationError(error.message) }
            for (name, text) in [("--dwell", dwell), ("--gap", gap)] {
                guard parseDuration(text).map({ $0 >= .zero && $0 <= .seconds(3600) }) == true else {
                    throw ValidationError("\(name) takes a duration like 2s or 300ms, got '\(text)'")
                }
            }
            guard failShare.isFinite, (0...1).contains(failShare) else { throw ValidationError("--fail-share must be 0...1") }
            guard timeScale >= 0, timeScale <= 1000, timeScale.isFinite else { throw ValidationError("--time-scale must be 0...1000") }
        }

        func run() async throws {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.sim")
            logger.logLevel = .warning
            var simulator = SimulatorOptions(logger: logger, timeScale: timeScale)
            simulator.production = ProductionLine(seed: seed, failShare: failShare)
            guard let (host, port) = try? ListenEndpoint(parsingTCP: listen, option: "--listen").parts else { return }
            let line: SimulatedLine
            do {
                line = try await SimulatedLine.start(.init(
                    slots: slots, units: units, host: host, port: port, dwell: parseDuration(dwell) ?? .seconds(2),
                    gap: parseDuration(gap) ?? .zero, simulator: simulator))
            } catch {
                throw failureExit(error)
            }
            let control = ControlInput.lines()
            for endpoint in line.endpoints { Output.line(endpoint) }
            printError("a line of \(slots) slot\(slots == 1 ? "" : "s") and \(units) unit\(units == 1 ? "" : "s"); Ctrl-C to stop")
            // Until every unit has come and gone, or a signal or 'quit' ends the control lines.
            await line.follow(until: control) { printError($0.text) }
            await line.shutdown()
        }
    }
}
