import CFX
import Foundation
import Records
import Station

/// A station's IPC-CFX messages (`station run --cfx`): the publisher, and how long the station's end waits for the
/// broker. A `StationCompanion` of `StationSession`.
public struct StationCFX: StationCompanion {
    public let publisher: CFXPublisher
    /// How long the station's end waits for the broker to accept what the spool holds.
    public let wait: Duration

    /// The default spool of a station: next to its records database (the outbox of a PostgreSQL line),
    /// `STATION.cfx-spool`.
    public static func defaultSpool(recipe: String, db: String?, outbox: String?, station: String) -> String {
        let records = StationRecords.recordsPath(db: db, outbox: outbox, station: station, recipe: recipe)
        let directory = URL(fileURLWithPath: records).deletingLastPathComponent().path
        return directory + "/\(StationRecords.fileName(station)).cfx-spool"
    }

    /// Starts the publisher to `broker` (its spool's messages are offered first; `spool` nil: the default one). An
    /// unreachable broker is a `notice` (once per outage, and when it answers again), not an error.
    public static func start(broker: AMQPAddress, spool: String?, wait: Duration, store: any RecordStore, recipe: String, db: String?,
                             outbox: String?, station: String, notice: @escaping @Sendable (String) -> Void) async throws -> StationCFX {
        let spool = spool ?? defaultSpool(recipe: recipe, db: db, outbox: outbox, station: station)
        let publisher = try await CFXPublisher.start(
            CFXOptions(broker: broker, spool: spool, handle: CFXMapper.handle(station: station)), store: store, notice: notice)
        return StationCFX(publisher: publisher, wait: wait)
    }

    public func handle(_ event: StationEvent) { publisher.handle(event) }

    /// Waits up to `wait` for the broker, closes the publisher, and says what went (`note`) or what is left in the
    /// spool (`warn`).
    public func finish(note: @escaping @Sendable (String) -> Void, warn: @escaping @Sendable (String) -> Void) async {
        await publisher.drained(within: wait)
        // Every finished unit's messages are in the spool once it is closed; what the broker did not take waits there.
        await publisher.close()
        let status = publisher.status
        let left = status.waiting
        if left == 0 {
            note("cfx: \(status.accepted) message\(status.accepted == 1 ? "" : "s") accepted by \(publisher.options.broker); the spool is empty")
        } else {
            warn("cfx: \(left) message\(left == 1 ? "" : "s") wait in \(publisher.options.spool) (the broker did not accept them in time); the station's next start with --cfx sends them")
        }
    }
}
