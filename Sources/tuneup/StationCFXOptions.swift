import ArgumentParser
import CFX
import CFXPublisher
import Records
import Station

/// `tuneup station run --cfx amqp://HOST[:PORT]/ADDRESS`: IPC-CFX messages for every unit (docs/cfx.md). Parsing
/// only; the publisher is `CFXPublisher`.
struct StationCFXOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Publish IPC-CFX messages for every unit to an AMQP 1.0 broker: amqp://[USER[:PASSWORD]@]HOST[:PORT]/ADDRESS (RabbitMQ 3.x: amqp://HOST//queue/NAME).", valueName: "url"))
    var cfx: String?

    @Option(help: ArgumentHelp("With --cfx: the spool directory, where messages wait until the broker accepts them (default: STATION.cfx-spool next to the records database).", valueName: "dir"))
    var cfxSpool: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("With --cfx: how long the station waits at its end for the broker to accept what the spool holds.", valueName: "seconds"))
    var cfxWait: Double = 10

    func validate() throws {
        if let cfx {
            do { _ = try AMQPAddress(parsing: cfx) } catch { throw ValidationError(error.message) }
        } else if cfxSpool != nil {
            throw ValidationError("--cfx-spool is for --cfx")
        }
        if !cfxWait.isFinite || !(0...86_400).contains(cfxWait) { throw ValidationError("--cfx-wait must be 0...86400 seconds") }
    }

    /// Starts the publisher when --cfx is given; an unreachable broker is a warning on stderr (once per outage, and
    /// when it answers again), not an error.
    func start(store: any RecordStore, recipe: String, db: String?, outbox: String?, station: String) async throws -> StationCFX? {
        guard let cfx else { return nil }
        return try await StationCFX.start(broker: try AMQPAddress(parsing: cfx), spool: cfxSpool, wait: .milliseconds(Int64(cfxWait * 1000)),
                                          store: store, recipe: recipe, db: db, outbox: outbox, station: station,
                                          notice: { printError("warning: \($0)") })
    }
}
