import Labels
import Recipe
import Records
import Synchronization
import Transport

/// Follows a station's events besides its display (the operator page, a CFX publisher), and is finished at the
/// station's end.
public protocol StationCompanion: Sendable {
    /// Each event, in order; returns at once (queues its own work).
    func handle(_ event: StationEvent)
    /// At the station's end: waits for what it queued (within its own limit) and says what is left: `note` for the
    /// station's output, `warn` for a warning.
    func finish(note: @escaping @Sendable (String) -> Void, warn: @escaping @Sendable (String) -> Void) async
}

/// Where a station session shows what happens (a terminal view, a log).
public protocol StationDisplay: Sendable {
    /// Each event, in order; returns at once.
    func show(_ event: StationEvent)
    /// The line's database lost (`"lost"`) or held again (`"held"`), with a line saying so.
    func records(_ status: String, _ text: String)
    /// A line for people.
    func note(_ text: String)
    /// A unit's label printed, or not.
    func label(_ result: Result<PrintedLabel, LabelError>, slot: String, serial: String)
    /// The totals at the end.
    func summary(_ totals: StationTotals, stopReason: String?)
}

/// How a station session ended, when it did not throw.
public enum StationVerdict: Sendable, Hashable {
    /// Every unit passed.
    case passed
    /// A unit failed, erred or was quarantined.
    case failed
    /// An SPC alarm (the recipe's `spc:` limits) stopped the station; its message.
    case alarm(String)
    /// Watching, the station stopped for this reason (its name taken, the identity pool used up, ...).
    case stopped(String)
    /// The session was cancelled (Ctrl-C): the units in progress are recorded as aborted.
    case interrupted
}

/// A station from its first unit to its end (`tuneup station run`): the station over its records, its events to a
/// display, the label printer and the companions; the line's heartbeat; the records' name hold followed; the slots
/// (named, and every attached USB headset); once or watching; then, in order, the labels flushed, the summary, the
/// heartbeat stopped, the companions finished and the records closed — also when the station fails.
public struct StationSession: Sendable {
    public var recipe: LoadedRecipe
    public var records: StationRecords
    public var options: StationOptions
    public var desk: OperatorDesk
    /// Prints a label for every unit that passes (nil: none).
    public var labels: LabelPrinter?
    /// Follow the events after the display and the labels, in this order; finished in this order.
    public var companions: [any StationCompanion]
    /// How long closing the records waits for the line's server to take the outbox.
    public var uploadWait: Duration

    public init(recipe: LoadedRecipe, records: StationRecords, options: StationOptions, desk: OperatorDesk = OperatorDesk(),
                labels: LabelPrinter? = nil, companions: [any StationCompanion] = [], uploadWait: Duration = .seconds(10)) {
        (self.recipe, self.records, self.options, self.desk) = (recipe, records, options, desk)
        (self.labels, self.companions, self.uploadWait) = (labels, companions, uploadWait)
    }

    /// Runs the station on `slots` (addresses) and, with `usb`, every headset `attachedUSB` lists; `watch`: units are
    /// waited for and provisioned as they come, until the station stops or the task is cancelled.
    ///
    /// - Throws: what the station throws (after the shut-down above); `TransportError(.notFound)` when `usb` finds no
    ///   headset and no slot is named (not watching); `RecordsError(.stationLive)` when another station took the name.
    /// `warn` gets the companions' warnings (a tool's stderr).
    public func run(slots addresses: [String], usb: Bool, watch: Bool, display: any StationDisplay,
                    warn: @escaping @Sendable (String) -> Void,
                    attachedUSB: @escaping @Sendable () async throws -> [String]) async throws -> StationVerdict {
        let stationName = options.station
        let heartbeat = records.server.map {
            StationHeartbeat.start($0, station: stationName, slots: addresses.count, toolVersion: options.toolVersion)
        }
        // Every follower of the events is one listener of the station: each is called in event order and returns at
        // once.
        var listeners: [@Sendable (StationEvent) -> Void] = [{ display.show($0) }]
        let unprinted = Mutex<[String]>([])
        if let labels {
            let product = recipe.recipe.product.name ?? recipe.recipe.product.model
            listeners.append { event in
                guard case .finished(let unit) = event, unit.outcome == .pass, let serial = unit.serial else { return }
                let content = LabelContent(product: product, serial: serial, bluetoothAddress: unit.bluetoothAddress)
                labels.enqueue(content) { result in
                    display.label(result, slot: unit.slot, serial: serial)
                    if case .failure = result { unprinted.withLock { $0.append(serial) } }
                }
            }
        }
        for companion in companions { listeners.append { companion.handle($0) } }
        let eventListeners = listeners
        let station = Station(recipe: recipe, store: records.store, options: options, desk: desk) { event in
            for listener in eventListeners { listener(event) }
        }
        // The hold's connection to the line's database dropped (an outage): the station goes on and takes its name
        // back when the server answers; if another station of the name started meanwhile, this one stops.
        records.followName { status in
            switch status {
            case .held: display.records("held", StationRecords.nameChangeText(status, station: stationName))
            case .lost: display.records("lost", StationRecords.nameChangeText(status, station: stationName))
            case .taken: station.stop(because: StationRecords.nameTakenReason(stationName))
            }
        }
        let note: @Sendable (String) -> Void = { display.note($0) }
        let finish: @Sendable () async -> Bool = { [records, companions, uploadWait] in
            await heartbeat?.stop()
            for companion in companions { await companion.finish(note: note, warn: warn) }
            return await records.close(uploadWait: uploadWait, note: note)
        }
        let slots = addresses.map { Slot(address: $0) }
        var results: [UnitResult] = []
        do {
            _ = try await station.recover()
            if watch {
                if usb {
                    try await station.watch(discovering: {
                        let ports = (try? await attachedUSB()) ?? []
                        return slots + ports.map { Slot(address: $0) }
                    }, announce: slots)
                } else {
                    try await station.watch(slots: slots)
                }
            } else {
                var all = slots
                if usb {
                    let ports = try await attachedUSB()
                    if ports.isEmpty && slots.isEmpty {
                        throw TransportError(.notFound, "no USB headset is attached (use --watch to wait for units)")
                    }
                    all += ports.filter { port in !slots.contains { $0.address == port } }.map { Slot(address: $0) }
                }
                results = try await station.run(slots: all)
            }
        } catch {
            await labels?.flush()
            _ = await finish()
            throw error
        }
        await labels?.flush()
        display.summary(station.totals, stopReason: station.stopReason)
        let missing = unprinted.withLock { $0 }
        if !missing.isEmpty {
            display.note("labels: \(missing.count) not printed (\(missing.prefix(5).joined(separator: ", "))\(missing.count > 5 ? ", ..." : "")): print them again with `tuneup records label SERIAL --product NAME` and the same label options")
        }
        let tookOver = await finish()
        if Task.isCancelled { return .interrupted }
        if tookOver { throw RecordsError(.stationLive, StationRecords.nameTakenReason(stationName)) }
        if let alarm = station.alarm { return .alarm(alarm.message) }
        if let reason = station.stopReason, watch { return .stopped(reason) }
        let totals = station.totals
        if results.contains(where: { $0.outcome != .pass }) || totals.failed + totals.errors + totals.quarantined > 0 { return .failed }
        return .passed
    }
}
