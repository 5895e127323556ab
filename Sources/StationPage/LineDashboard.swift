import Foundation
import Logging
import Records
import Synchronization

/// The line dashboard's state: the line's PostgreSQL database read on a timer (`LineStatus`), each part pushed to
/// the connected pages only when it changed. The browser never polls; the server reads the database once per
/// `refresh` whatever the number of pages.
public final class LineDashboard: Sendable {
    public struct Options: Sendable {
        /// How often the database is read.
        public var refresh: Duration
        /// The runs counted in units/h, yields and the Pareto: those that ended this long ago at most.
        public var window: Duration
        /// A station whose last heartbeat is older than this is shown silent.
        public var aliveWithin: Duration
        /// Cpk per measurement over the line's last this many finished runs.
        public var cpkRuns: Int
        /// The last units listed.
        public var lastUnits: Int

        public init(refresh: Duration = .seconds(1), window: Duration = .seconds(3600), aliveWithin: Duration = .seconds(10),
                    cpkRuns: Int = 50, lastUnits: Int = 20) {
            (self.refresh, self.window, self.aliveWithin, self.cpkRuns, self.lastUnits) = (refresh, window, aliveWithin, cpkRuns, lastUnits)
        }
    }

    public let sections = Sections()
    private let store: PostgresRecordStore
    private let options: Options
    private let refresher = Mutex<Task<Void, Never>?>(nil)

    public init(store: PostgresRecordStore, options: Options = .init()) {
        self.store = store
        self.options = options
        sections.update { e in
            e.set("line", LineStatus.Totals(database: store.name, windowMinutes: Double(options.window.components.seconds) / 60, stations: 0,
                                            alive: 0, units: 0, passed: 0))
            e.set("problem", String?.none)
        }
    }

    /// Reads the database once now (a database that cannot be read throws: the command reports it and exits), then
    /// every `refresh` until `stop()` (a failed read is shown on the page and tried again).
    public func start() async throws {
        try await refresh()
        let task = Task { [weak self, options] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: options.refresh) } catch { return }
                guard let self else { return }
                do {
                    try await self.refresh()
                } catch {
                    let message = "the line's database cannot be read: \(error)"
                    self.sections.update { $0.setIfChanged("problem", message) }
                }
            }
        }
        refresher.withLock { $0 = task }
    }

    public func stop() {
        refresher.withLock { $0?.cancel() }
    }

    /// One read of the database, its changes set.
    public func refresh() async throws {
        let status = try await store.lineStatus(
            window: options.window, aliveWithin: options.aliveWithin, cpkRuns: options.cpkRuns, lastUnits: options.lastUnits)
        sections.update { e in
            e.setIfChanged("line", status.line)
            e.setIfChanged("stations", status.stations)
            e.setIfChanged("pareto", status.pareto)
            e.setIfChanged("cpk", status.cpk)
            e.setIfChanged("units", status.units)
            if e.get("problem", as: String.self) != nil { e.set("problem", String?.none) }
        }
    }

    /// Serves the dashboard on `address` (see `PageServer`).
    public func serve(on address: ListenAddress, logger: Logger? = nil) async throws -> PageServer {
        try await PageServer.start(sections, on: address, serverName: "tuneup-line", logger: logger) {
            PageDocument.render(kind: .line, title: "Line", initialState: $0)
        }
    }
}
