import ArgumentParser
import CFX
import CFXPublisher
import Foundation
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

    /// The default spool: next to the records database (the outbox of a PostgreSQL line).
    static func defaultSpool(recipe: String, db: String?, outbox: String?, station: String) -> String {
        let records = StationRecords.recordsPath(db: db, outbox: outbox, station: station, recipe: recipe)
        let directory = URL(fileURLWithPath: records).deletingLastPathComponent().path
        return directory + "/\(StationRecords.fileName(station)).cfx-spool"
    }

    /// Starts the publisher when --cfx is given (its spool's messages are offered first). An unreachable broker is
    /// a warning on stderr (once per outage, and when it answers again), not an error.
    func start(store: any RecordStore, recipe: String, db: String?, outbox: String?, station: String) async throws -> CFXPublisher? {
        guard let cfx else { return nil }
        let broker = try AMQPAddress(parsing: cfx)
        let spool = cfxSpool ?? Self.defaultSpool(recipe: recipe, db: db, outbox: outbox, station: station)
        return try await CFXPublisher.start(
            CFXOptions(broker: broker, spool: spool, handle: CFXMapper.handle(station: station)), store: store,
            notice: { printError("warning: \($0)") })
    }

    /// At the station's end: waits up to --cfx-wait for the broker, then says what is left in the spool.
    func finish(_ publisher: CFXPublisher?, note: (String) -> Void) async {
        guard let publisher else { return }
        await publisher.drained(within: .milliseconds(Int64(cfxWait * 1000)))
        // Every finished unit's messages are in the spool once it is closed; what the broker did not take waits there.
        await publisher.close()
        let status = publisher.status
        let left = status.waiting
        if left == 0 {
            note("cfx: \(status.accepted) message\(status.accepted == 1 ? "" : "s") accepted by \(publisher.options.broker); the spool is empty")
        } else {
            printError("warning: cfx: \(left) message\(left == 1 ? "" : "s") wait in \(publisher.options.spool) (the broker did not accept them in time); the station's next start with --cfx sends them")
        }
    }
}
