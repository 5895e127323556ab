import ArgumentParser
import CFXPublisher
import Foundation
import Labels
import Recipe
import Records
import Station
import StationPage
import Support
import Terminal
import TuneupKit

/// `tuneup station run`: the provisioning station (docs/provisioning.md).
struct StationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "station",
        abstract: "Provision units with a recipe: flash, identity, settings, calibration, tests, lock; every run recorded.",
        subcommands: [Run.self],
        defaultSubcommand: Run.self)

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run a provisioning recipe on units, several at once, recording every run.",
            discussion: """
                Slots are places where units sit: --device ADDR (repeatable; each address is a slot), --usb (every \
                attached USB headset, its port path being the slot), or both. Without --watch each slot's unit is \
                provisioned once and the command ends; with --watch the station waits for units to arrive in the \
                slots (USB hot-plug, a fixture's address that starts answering), provisions each as it comes, says \
                when to take it out, and goes on until Ctrl-C or until the identity pool is used up.

                A unit that comes back (unplugged, power cut, station killed) is recognised by its hardware id: it \
                keeps the identity it was given, and steps whose effect it verifiably holds are skipped.

                Output: on a terminal one live line per slot and the running totals; otherwise one line per unit; \
                --format json prints every event as JSON Lines. Records go to --db (default: records.sqlite next to \
                the recipe).

                A line of stations shares one PostgreSQL database: --db postgres://USER[:PASSWORD]@HOST[:PORT]/DB. \
                Each station then leases blocks of Bluetooth addresses (--lease at a time; a unit's serial is made from its \
                address), records every run in a \
                local outbox file first (--outbox) and uploads it in the background, so it keeps provisioning while \
                the server is briefly unreachable; at its end it waits up to --upload-wait seconds for the server, and \
                what it could not upload is uploaded at its next start. Addresses \
                it leased but did not use go back to the line's pool when it stops.

                A station's name is held on its records while it runs: a second station of the same name on the same \
                records file (or outbox) is refused, and only a killed station's open runs are closed as aborted.

                Traceability: --work-order, --lot, --fixture and --meta KEY=VALUE (repeatable, over the recipe's \
                metadata:) are recorded with every run, with --operator (default: $USER, else the login name). A \
                recipe's max-rework quarantines a unit that failed that many times: the station refuses it until \
                'tuneup records release HWID'. A recipe's spc: limits stop the station (units in progress finish) \
                when a measurement's Cpk or the first-pass yield over the last units falls below them.

                --ui HOST:PORT serves the operator page (tiles per slot, totals, the shift's failure Pareto, the last \
                units with their records), updated live over a WebSocket; with a PostgreSQL --db the station also \
                beats a heartbeat for 'tuneup line serve'.

                A recipe's scan: and prompt: steps wait for the operator: answered on the page, or typed on the \
                terminal (a line answers the oldest question, '#N TEXT' question N; a barcode scanner types the code \
                and Enter). Without a terminal on stdin and without --ui such a recipe is refused (exit 64).

                Exit codes: 0 every unit passed, 1 a unit failed, erred or was quarantined, 3 an SPC alarm stopped \
                the station, 64 bad arguments or recipe values, \
                65 an image is invalid or not signed by the recipe's key, 69 the line's database server cannot be \
                reached, a station of the same name runs already or the --ui address cannot be bound (an \
                unreachable --cfx broker is a warning: messages wait in the spool), 74 the recipe, an image or the records \
                database could not be read or written, 130 stopped by Ctrl-C (units being provisioned are recorded \
                as aborted).

                Examples:
                  tuneup sim headset --count 4 --blank --listen tcp:127.0.0.1:4300 &
                  tuneup station run --recipe recipes/sim-headset.yaml --device tcp:127.0.0.1:4300 --device tcp:127.0.0.1:4301
                  tuneup station run --recipe recipes/sim-headset.yaml --device tcp:127.0.0.1:4302 --format json
                  tuneup station run --recipe recipes/sim-headset.yaml --usb --watch --db line.sqlite
                  tuneup station run --recipe recipes/sim-headset.yaml --usb --watch --station s1 --db postgres://line@db.local/line
                """)

        @Option(help: ArgumentHelp("The provisioning recipe (YAML; docs/recipe.md).", valueName: "file"))
        var recipe: String

        @Option(name: [.customShort("d"), .long], help: ArgumentHelp("A slot's address (repeatable): tcp:HOST:PORT, usb:BUS-PORTS, serial:PATH, ...", valueName: "addr"))
        var device: [String] = []

        @Flag(help: "Every attached USB headset is a slot (its port path); with --watch, ports are watched for hot-plugged units.")
        var usb = false

        @Flag(help: "Wait for units to arrive in the slots and provision each as it comes, until Ctrl-C.")
        var watch = false

        @Option(help: ArgumentHelp("The records: a SQLite file (default: records.sqlite next to the recipe), or postgres://USER@HOST[:PORT]/DB for a line of stations.", valueName: "location"))
        var db: String?

        @Option(help: ArgumentHelp("With a PostgreSQL --db: the station's local outbox file (default: STATION.outbox.sqlite next to the recipe).", valueName: "file"))
        var outbox: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("With a PostgreSQL --db: how many Bluetooth addresses the station leases at a time (default: 32).", valueName: "count"))
        var lease: Int?

        @Option(parsing: .unconditional, help: ArgumentHelp("With a PostgreSQL --db: how long the station waits at its end for the server to take what its outbox holds (default: 10).", valueName: "seconds"))
        var uploadWait: Double?

        @Option(help: ArgumentHelp("The station's name in the records (default: the host name).", valueName: "name"))
        var station: String?

        @Option(name: .customLong("operator"), help: ArgumentHelp("Who operates the station (recorded with every run; default: $USER, else the login name).", valueName: "name"))
        var operatorName: String?

        @OptionGroup(title: "Traceability (recorded with every run)") var trace: TraceabilityOptions

        @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for each reply before sending a request again.", valueName: "seconds"))
        var timeout: Double = 2

        @OptionGroup var wait: BootloaderCommand.WaitOption

        @OptionGroup(title: "Labels (printed for every unit that passes)") var labels: LabelOptions

        @Option(help: ArgumentHelp("Serve the operator page on HOST:PORT (port 0: a free port; the URL is printed on stderr).", valueName: "host:port"))
        var ui: String?

        @OptionGroup(title: "IPC-CFX (messages for every unit; docs/cfx.md)") var cfx: StationCFXOptions

        @OptionGroup var capture: CaptureOption
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if device.isEmpty && !usb { throw ValidationError("name the slots: --device ADDR (repeatable) or --usb") }
            if Set(device).count != device.count { throw ValidationError("a slot is named twice in --device") }
            for address in device {
                do { _ = try Devices.parseHeadsetAddress(address) } catch { throw ValidationError(error.message) }
            }
            try checkSeconds(timeout, "--timeout")
            if let station, station.isEmpty || station.count > 64 { throw ValidationError("--station must be 1...64 characters") }
            if let lease, !(1...10_000).contains(lease) { throw ValidationError("--lease must be 1...10000") }
            if let uploadWait, !(0...86_400).contains(uploadWait) { throw ValidationError("--upload-wait must be 0...86400 seconds") }
            let lineOnly = [(outbox != nil, "--outbox"), (lease != nil, "--lease"), (uploadWait != nil, "--upload-wait")].filter(\.0).map(\.1)
            do { try RecordStores.checkStation(db: db, lineOnlyOptions: lineOnly) } catch { throw ValidationError(error.message) }
            _ = try resolveOperator(operatorName)
            if let ui { do { _ = try ListenAddress(parsing: ui, option: "--ui") } catch { throw ValidationError("\(error)") } }
        }

        func run() async throws {
            // Everything that can be wrong with the recipe, its images or the records is found before a unit is touched.
            let interactive = isatty(STDIN_FILENO) == 1
            let stationName = station ?? StationRecords.defaultStationName()
            let loaded: LoadedRecipe, records: StationRecords
            do {
                loaded = try await Station.loadRecipe(recipe, terminal: interactive, page: ui != nil)
                records = try await StationRecords.open(db: db, outbox: outbox, lease: lease, station: stationName, recipe: recipe)
            } catch {
                throw failureExit(error)
            }
            let store = records.store
            let desk = OperatorDesk()
            var connection = ConnectionOptions()
            connection.session.timeout = .milliseconds(Int64(timeout * 1000))
            connection.capture = capture.settings(.lightX)
            let options = StationOptions(
                devices: Devices.registry, station: stationName, operatorName: try resolveOperator(operatorName),
                toolVersion: TuneupVersion.string, connection: connection, deviceWait: .milliseconds(Int64(wait.wait * 1000)),
                workOrder: trace.workOrder, lot: trace.lot, fixture: trace.fixture, metadata: try trace.metadata())
            let view = StationView(json: output.json, live: !output.json && isatty(STDOUT_FILENO) == 1)
            // What follows the station's events besides the view: the operator page (--ui) and IPC-CFX (--cfx).
            var companions: [any StationCompanion] = []
            let session: StationSession
            do {
                let labelPrinter = try await labels.makePrinter()
                if let ui {
                    let page = try await OperatorPage.start(
                        on: try ListenAddress(parsing: ui, option: "--ui"), store: store, station: stationName, recipe: recipe,
                        operatorName: options.operatorName, desk: desk, loaded: loaded)
                    printError("operator page at \(page.url)")
                    companions.append(page)
                }
                if let publisher = try await cfx.start(store: store, recipe: recipe, db: db, outbox: outbox, station: stationName) {
                    companions.append(publisher)
                }
                session = StationSession(recipe: loaded, records: records, options: options, desk: desk, labels: labelPrinter,
                                         companions: companions, uploadWait: .milliseconds(Int64((self.uploadWait ?? 10) * 1000)))
            } catch {
                throw failureExit(error)
            }
            // Answers typed on the terminal (a barcode scanner is a keyboard): read on a thread of their own.
            var terminal: Task<Void, Never>?
            if loaded.recipe.asksOperator, interactive {
                let lines = ControlInput.lines(trimmed: false, stopOnSignals: false)
                // A refusal ("#N: why") is shown by the view from the prompt's event (to the page too): only "no
                // prompt waits" is the terminal's own.
                terminal = Task { await TerminalAnswers.serve(lines, desk: desk) { line in if !line.hasPrefix("#") { view.note(line) } } }
            }
            defer { terminal?.cancel() }
            let verdict: StationVerdict
            do {
                verdict = try await session.run(slots: device, usb: usb, watch: watch, display: view, warn: { printError("warning: \($0)") },
                                                attachedUSB: { try await Devices.attachedUSBHeadsets() })
            } catch {
                throw failureExit(error)
            }
            switch verdict {
            case .passed, .interrupted: return
            // An SPC alarm has its own code (3), in watch mode and not.
            case .alarm(let message): throw CommandFailure(message: "the station stopped: \(message)", code: Self.alarmExit)
            case .stopped(let reason): throw CommandFailure(message: "the station stopped: \(reason)", code: 1)
            case .failed: throw ExitCode(1)
            }
        }

        /// The exit code of a station stopped by an SPC alarm (the recipe's `spc:` limits).
        static let alarmExit: Int32 = 3
    }
}
