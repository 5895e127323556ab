import ArgumentParser
import Foundation
import Records
import StationPage

/// `tuneup line serve`: the line dashboard over a PostgreSQL line's records (docs/provisioning.md).
struct LineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "line",
        abstract: "A line of stations that share a PostgreSQL database: its dashboard.",
        subcommands: [Serve.self])

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve the line dashboard: stations alive, units/h, yield, failure Pareto, Cpk, the last units.",
            discussion: """
                Reads the line's PostgreSQL database (the stations' --db) every --refresh seconds and pushes what \
                changed to every open page over a WebSocket (the page itself never polls). A station is alive while \
                its heartbeat (every 2 s, sent by 'station run' with a PostgreSQL --db) is at most --alive seconds \
                old. Units/h, yields and the Pareto count the runs that ended in the last --window minutes; Cpk per \
                measurement covers the line's last --cpk-runs finished runs. Prints the page's URL on stderr and \
                serves until Ctrl-C.

                Exit codes: 64 bad arguments (an address that is not HOST:PORT), 69 the database cannot be reached \
                or the address cannot be bound, 130 stopped by Ctrl-C.

                Examples:
                  tuneup line serve --db postgres://line@db.local/line --listen 0.0.0.0:8090
                  tuneup line serve --db postgres://line@127.0.0.1:5432/line --listen 127.0.0.1:0 --window 480
                """)

        @Option(help: ArgumentHelp("The line's records: postgres://USER[:PASSWORD]@HOST[:PORT]/DB.", valueName: "url"))
        var db: String

        @Option(help: ArgumentHelp("Serve the dashboard on HOST:PORT (port 0: a free port; the URL is printed).", valueName: "host:port"))
        var listen = "127.0.0.1:8090"

        @Option(parsing: .unconditional, help: ArgumentHelp("Seconds between reads of the database.", valueName: "seconds"))
        var refresh: Double = 1

        @Option(parsing: .unconditional, help: ArgumentHelp("Minutes of runs counted in units/h, yields and the Pareto.", valueName: "minutes"))
        var window: Double = 60

        @Option(parsing: .unconditional, help: ArgumentHelp("Seconds after its last heartbeat a station is shown silent.", valueName: "seconds"))
        var alive: Double = 10

        @Option(parsing: .unconditional, help: ArgumentHelp("Cpk per measurement over the line's last N finished runs.", valueName: "count"))
        var cpkRuns: Int = 50

        func validate() throws {
            guard RecordStores.isServer(db) else { throw ValidationError("--db takes a PostgreSQL URL, postgres://USER@HOST[:PORT]/DB") }
            do { _ = try ListenAddress(parsing: listen, option: "--listen") } catch { throw ValidationError("\(error)") }
            guard refresh.isFinite, refresh >= 0.1, refresh <= 3600 else { throw ValidationError("--refresh must be 0.1...3600 seconds") }
            guard window.isFinite, window > 0, window <= 7 * 24 * 60 else { throw ValidationError("--window must be more than 0 and at most 10080 minutes") }
            guard alive.isFinite, alive >= 1, alive <= 3600 else { throw ValidationError("--alive must be 1...3600 seconds") }
            guard (2...100_000).contains(cpkRuns) else { throw ValidationError("--cpk-runs must be 2...100000") }
        }

        func run() async throws {
            let address = try ListenAddress(parsing: listen, option: "--listen")
            let store: PostgresRecordStore
            let dashboard: LineDashboard
            let server: PageServer
            do {
                store = try await PostgresRecordStore.open(url: db)
                dashboard = LineDashboard(store: store, options: .init(
                    refresh: .milliseconds(Int64(refresh * 1000)), window: .milliseconds(Int64(window * 60_000)),
                    aliveWithin: .milliseconds(Int64(alive * 1000)), cpkRuns: cpkRuns))
                try await dashboard.start()
                server = try await dashboard.serve(on: address)
            } catch {
                throw failureExit(error)
            }
            printError("line dashboard at \(server.url)")
            // Until Ctrl-C (the runner cancels this task) or the server ends.
            let serving = Task { try await server.wait() }
            await withTaskCancellationHandler {
                _ = await serving.result
            } onCancel: {
                Task { await server.stop() }
            }
            dashboard.stop()
            await store.close()
        }
    }
}
