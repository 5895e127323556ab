import ArgumentParser
import Foundation
import Logging
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import Terminal
import TuneupKit

extension SpeakerCommand {
    /// `tuneup speaker hub`: the HKWHub v1 REST API and a control page over the speakers (docs/hub.md).
    struct Hub: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "hub",
            abstract: "Serve the HKWHub v1 REST API and a control page over the speakers (docs/hub.md).",
            discussion: """
                Finds the speakers as every speaker command does (--speaker HOST:PORT, or discovery), lists the audio \
                files of --media DIR as the hub's media list, prints the hub's URL on stdout and serves until Ctrl-C \
                or 'quit' on stdin. Every call is GET /v1/NAME?PARAMETERS and answers JSON; GET / is the control page; \
                /jsonrpc is the JSON-RPC 2.0 control (POST, or a WebSocket that also pushes notifications), and \
                --control-port (Snapcast's 1705 by default) the same control as Snapcast's newline-delimited TCP, \
                for Snapcast's apps and Home Assistant's Snapcast integration (docs/hub.md §9).
                Examples (the speakers of 'tuneup sim speaker --count 2' at 127.0.0.1:P1 and 127.0.0.1:P2):
                  $ tuneup speaker hub --media ~/Music --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2
                  $ tuneup speaker hub --listen 0.0.0.0:8080 --media ~/Music     (discovery; every interface)
                  $ curl 'http://127.0.0.1:8080/v1/init_session?Priority=100'      → {"SessionID":"1000"}
                  $ curl 'http://127.0.0.1:8080/v1/set_party_mode?SessionID=1000'  → {"Result":"true"}
                  $ curl -d '{"jsonrpc":"2.0","id":1,"method":"Player.GetStatus"}' http://127.0.0.1:8080/jsonrpc
                """)

        @Option(help: ArgumentHelp("Serve HTTP on HOST:PORT (port 0: a free port, printed).", valueName: "host:port"))
        var listen = "127.0.0.1:8080"

        @Option(help: ArgumentHelp("Serve Snapcast's JSON-RPC control over TCP on this port, on --listen's host (0: a free port, printed; default: 1705 when free, else none, with a warning).", valueName: "port"))
        var controlPort: Int?

        @Option(help: ArgumentHelp("The folder whose audio files are the media list (WAV, MP3, FLAC, ...).", valueName: "dir"))
        var media: String

        @Option(help: ArgumentHelp("Minutes without a request after which a session expires.", valueName: "minutes"))
        var sessionMinutes: Double = 60

        @OptionGroup var reach: Reach

        @Flag(name: .shortAndLong, help: "Log HTTP requests and speaker traffic to stderr.")
        var verbose = false

        func validate() throws {
            _ = try listenAddress()
            if let controlPort, !(0...65535).contains(controlPort) {
                throw ValidationError("--control-port takes a port 0...65535, got \(controlPort)")
            }
            guard sessionMinutes.isFinite, sessionMinutes > 0, sessionMinutes <= 7 * 24 * 60 else {
                throw ValidationError("--session-minutes must be more than 0 and at most a week (10080)")
            }
        }

        /// `HOST:PORT` or `[IPv6]:PORT`, port 0...65535.
        func listenAddress() throws -> (host: String, port: Int) {
            var host = Substring(listen)
            guard let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]), (0...65535).contains(port) else {
                throw ValidationError("--listen takes HOST:PORT with a port 0...65535, got '\(listen)'")
            }
            host = host[..<colon]
            if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            guard !host.isEmpty else { throw ValidationError("--listen takes HOST:PORT, got '\(listen)'") }
            return (String(host), port)
        }

        /// The speakers named (those that answer; the others to look for) or discovered.
        func openSpeakers() async throws -> (SpeakerController, [(host: String, port: UInt16, reason: String)]) {
            let reach = try reach.reach()
            do {
                guard !reach.addresses.isEmpty else { return (try await reach.controller(), []) }
                let (options, requests) = (reach.connection, reach.requests)
                return try await ControllerSpeakers.open(reach.addresses, endpoint: { SpeakerBridge.endpoint(of: $0).map { ($0.host, $0.port) } }) {
                    try await Devices.openSpeaker($0, options: options, requestOptions: requests)
                }
            } catch { throw failureExit(error) }
        }

        func run() async throws {
            // Speaker traffic goes to stderr only with --verbose (the hub runs for long).
            if verbose { LoggingSetup.bootstrap() }
            var logger = Logger(label: "tuneup.hub")
            logger.logLevel = verbose ? .debug : .warning
            let (host, port) = try listenAddress()
            let folder: MediaFolder
            do { folder = try MediaFolder(path: (media as NSString).expandingTildeInPath) } catch { throw failureExit(error) }
            // Named speakers that cannot be reached now are looked for in the background (docs/hub.md §3.2).
            let (controller, unreached) = try await openSpeakers()
            for u in unreached { printError("speaker \(u.host):\(u.port) cannot be reached now (\(u.reason)); the hub looks for it") }
            let service: HubService
            do {
                service = try await HubService.start(controller, unreached: unreached.map { ($0.host, $0.port) }, media: folder,
                                                     sessionTimeout: .milliseconds(Int64(sessionMinutes * 60_000)), host: host, port: port,
                                                     controlPort: controlPort, logger: logger)
            } catch {
                throw failureExit(error)
            }
            if let warning = service.warning { printError(warning) }
            // Signals are handled before the URL goes out: whoever reads it may stop the hub at once.
            let input = ControlInput.lines()
            Output.line(service.hub.url + "/")
            if let control = service.control { printError("Snapcast control (JSON-RPC over TCP) on \(control.host):\(control.port)") }
            let count = await controller.count
            printError("hub over \(count) speaker\(count == 1 ? "" : "s"); Ctrl-C or 'quit' on stdin to stop")
            // A signal or 'quit' stops the server gracefully; the server ending (stopped, or an error) ends the command.
            do {
                try await service.run { for await line in input where line == "quit" { break } }
            } catch {
                throw failureExit(error)
            }
        }
    }
}
