import Crypto
import DeviceAccess
import Failure
import Foundation
import Logging
import Recipe
import Records
import Synchronization
import Transport

/// How a station identifies itself in the records and reaches its units.
public struct StationOptions: Sendable {
    /// The station's name in the records (default: the host name).
    public var station: String
    /// Who operates it (records).
    public var operatorName: String
    /// The tool's version (records).
    public var toolVersion: String
    /// The kinds of device the slots' addresses may name, and how each is opened: `DeviceRegistry.real`, or the
    /// tools' `Devices.registry` (TuneupKit) with the in-process simulators.
    public var devices: DeviceRegistry
    /// How links are opened (timeouts, retries, USB polling).
    public var connection: ConnectionOptions
    /// How long a unit that answered may take to come back after a reset.
    public var deviceWait: Duration
    /// Watch mode: how often an empty slot is looked at, and a finished unit checked for removal.
    public var pollInterval: Duration
    /// Traceability recorded with every run: the work order, the lot, the fixture, and metadata (over the recipe's
    /// `metadata:`, key by key).
    public var workOrder: String?
    public var lot: String?
    public var fixture: String?
    public var metadata: [String: String]

    public init(
        devices: DeviceRegistry, station: String = ProcessInfo.processInfo.hostName, operatorName: String = "", toolVersion: String = "",
        connection: ConnectionOptions = .init(), deviceWait: Duration = .seconds(30), pollInterval: Duration = .milliseconds(200),
        workOrder: String? = nil, lot: String? = nil, fixture: String? = nil, metadata: [String: String] = [:]
    ) {
        self.devices = devices
        self.station = station
        self.operatorName = operatorName
        self.toolVersion = toolVersion
        self.connection = connection
        self.deviceWait = deviceWait
        self.pollInterval = pollInterval
        self.workOrder = workOrder
        self.lot = lot
        self.fixture = fixture
        self.metadata = metadata
    }
}

/// What every unit run of one station shares: the recipe, the records, the identity issuer, the totals, and whether
/// the station still takes units.
final class StationContext: Sendable {
    let recipe: LoadedRecipe
    let store: any RecordStore
    let options: StationOptions
    let identities: IdentityIssuer
    let imageHashes: [String: String]
    let emit: @Sendable (StationEvent) -> Void
    /// Where the recipe's scans and prompts wait for the operator.
    let desk: OperatorDesk
    /// For the updater and the bootloader client: the station reports through events, so only warnings pass.
    let logger: Logger
    private let state = Mutex(State())
    private let started = ContinuousClock.now

    private struct State {
        var totals = StationTotals()
        var shares: [Double] = []
        var stopReason: String?
        /// The latest finished units, for the recipe's process control.
        var window: ProcessWindow?
        /// Whether the window holds the records' latest units yet (`restoreWindow`).
        var windowRestored = false
        var alarm: ProcessAlarm?
        /// The units with a finished run here, and those of them whose first finished run passed.
        var units = Set<String>()
        var firstPassUnits = Set<String>()
    }

    /// The recipe's process control limits, as the records' statistics take them.
    let spcLimits: SPCLimits?
    /// The recipe's metadata with the station's over it.
    let metadata: [String: String]

    init(recipe: LoadedRecipe, store: any RecordStore, options: StationOptions, desk: OperatorDesk,
         emit: @escaping @Sendable (StationEvent) -> Void) {
        self.desk = desk
        desk.attach(emit, operatorName: options.operatorName)
        self.recipe = recipe
        self.store = store
        self.options = options
        self.emit = emit
        var logger = Logger(label: "tuneup.station")
        logger.logLevel = .warning
        self.logger = logger
        identities = IdentityIssuer(generator: recipe.identityGenerator, store: store, station: options.station)
        var hashes = ["application": Self.sha256(recipe.application.bytes)]
        if let resource = recipe.resource { hashes["resource"] = Self.sha256(resource.bytes) }
        imageHashes = hashes
        spcLimits = recipe.recipe.spc.map {
            SPCLimits(window: $0.window, minCpk: $0.minCpk, minFirstPassYield: $0.minFirstPassYield, measurements: $0.measurements ?? [:])
        }
        metadata = (recipe.recipe.metadata ?? [:]).merging(options.metadata) { _, station in station }
        if let spcLimits { state.withLock { $0.window = ProcessWindow(size: spcLimits.window) } }
    }

    /// The SPC alarm that stopped the station, if one did.
    var alarm: ProcessAlarm? { state.withLock { $0.alarm } }

    /// Fills the process control window, once, from the records: the station's last finished units under this
    /// recipe (`RecordStore.processWindow`), so a restarted station goes on judging the window it had, not an empty
    /// one. Called before the first unit is taken.
    func restoreWindow() async throws {
        guard let spcLimits, !state.withLock({ $0.windowRestored }) else { return }
        let restored = try await store.processWindow(
            station: options.station, recipeHash: recipe.contentHash, size: spcLimits.window)
        state.withLock { s in
            guard !s.windowRestored else { return }
            s.windowRestored = true
            s.window = restored
        }
    }

    /// The units and values the process control window holds (nil without `spc:` in the recipe).
    var window: ProcessWindow? { state.withLock { $0.window } }

    static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// Why the station takes no more units (nil while it does).
    var stopReason: String? { state.withLock { $0.stopReason } }

    /// Stops taking units (the first reason is kept and reported once).
    func stop(because reason: String) {
        let first = state.withLock { s -> Bool in
            guard s.stopReason == nil else { return false }
            s.stopReason = reason
            return true
        }
        if first { emit(.stopping(reason: reason)) }
    }

    /// Counts a unit's result in the totals and reports them; a finished unit (pass, fail, error with a run) joins
    /// the process control window with its measurements, and an alarm stops the station.
    func count(_ result: UnitResult, firstPass: Bool, measurements: [Records.Measurement] = []) {
        var raised: ProcessAlarm?
        let totals = state.withLock { s in
            // The first-pass yield counts units, as `RecordsReport` does: the units with a finished run here, and of
            // them those whose first finished run (here or earlier, at any station) passed.
            if let hardwareID = result.hardwareID, result.run != nil, [.pass, .fail, .error].contains(result.outcome) {
                s.units.insert(hardwareID)
                if firstPass { s.firstPassUnits.insert(hardwareID) }
                s.totals.units = s.units.count
                s.totals.firstPassed = s.firstPassUnits.count
            }
            switch result.outcome {
            case .pass: s.totals.passed += 1
            case .fail: s.totals.failed += 1
            case .error: s.totals.errors += 1
            case .aborted: s.totals.aborted += 1
            case .quarantined: s.totals.quarantined += 1
            }
            if result.seconds > 0, result.outcome != .aborted, result.outcome != .quarantined { s.shares.append(result.stationSeconds / result.seconds) }
            if let limits = spcLimits, result.run != nil, [.pass, .fail, .error].contains(result.outcome), s.alarm == nil {
                s.window?.add(ProcessWindow.Sample(firstPass: firstPass && result.outcome == .pass, measurements: measurements))
                if let alarm = s.window?.alarm(limits) {
                    s.alarm = alarm
                    raised = alarm
                }
            }
            return totalsNow(&s)
        }
        emit(.totals(totals))
        if let raised {
            emit(.alarm(raised))
            stop(because: raised.message)
        }
    }

    var totals: StationTotals { state.withLock { totalsNow(&$0) } }

    private func totalsNow(_ s: inout State) -> StationTotals {
        let elapsed = (ContinuousClock.now - started).seconds
        s.totals.elapsed = elapsed
        s.totals.unitsPerHour = Throughput.unitsPerHour(s.totals.completed, seconds: elapsed)
        if !s.shares.isEmpty {
            s.totals.stationShareMean = s.shares.reduce(0, +) / Double(s.shares.count)
            s.totals.stationShareMax = s.shares.max()
        }
        return s.totals
    }
}

/// A provisioning station: runs a recipe on units in slots, several at once, recording every run.
///
/// `run(slots:)` provisions the unit in each slot once; `watch(slots:)` waits for units to arrive in the slots,
/// provisions each as it comes, waits for it to be taken out, and goes on until cancelled or until the station
/// cannot take more units (the identity pool is used up, the records cannot be written). Events go to `onEvent` as
/// they happen (from any task; the handler must be quick).
public final class Station: Sendable {
    let context: StationContext

    /// - Parameter desk: where the recipe's scans and prompts wait for answers (the page's and the terminal's).
    public init(recipe: LoadedRecipe, store: any RecordStore, options: StationOptions, desk: OperatorDesk = OperatorDesk(),
                onEvent: @escaping @Sendable (StationEvent) -> Void = { _ in }) {
        context = StationContext(recipe: recipe, store: store, options: options, desk: desk, emit: onEvent)
    }

    /// Where the recipe's scans and prompts wait: the page and the terminal answer through it.
    public var desk: OperatorDesk { context.desk }

    /// The totals so far.
    public var totals: StationTotals { context.totals }

    /// Why the station stopped taking units, if it did.
    public var stopReason: String? { context.stopReason }

    /// The SPC alarm that stopped the station, if one did.
    public var alarm: ProcessAlarm? { context.alarm }

    /// Stops taking units (units in progress finish); the first reason is kept and reported once (`stopping`).
    public func stop(because reason: String) { context.stop(because: reason) }

    /// Closes the station's runs that a killed process left open (as aborted), so they are not left open forever.
    /// Reports them (`recovered`) and returns how many it closed. Call it while holding the station's name on its records (`StationLock`): a live
    /// station's runs are not a killed one's.
    public func recover() async throws -> Int {
        let closed = try await context.store.abortOpenRuns(station: context.options.station, at: Date())
        if !closed.isEmpty { context.emit(.recovered(runs: closed.map(\.rawValue))) }
        return closed.count
    }

    /// The recipe's process control window as it stands: the latest finished units the station judges (from the
    /// records at its start, then each unit it finishes); nil without `spc:` in the recipe.
    public var processWindow: ProcessWindow? { context.window }

    /// Provisions the unit in each slot once, all at once; returns the results in slot order.
    public func run(slots: [Slot]) async throws -> [UnitResult] {
        let addresses = try slots.map { try context.options.devices.parseAddress($0.address) }
        try await context.restoreWindow()
        start(slots)
        return await withTaskGroup(of: (Int, UnitResult).self) { group in
            for (index, slot) in slots.enumerated() {
                group.addTask { (index, await self.provision(slot, address: addresses[index])) }
            }
            var results = [UnitResult?](repeating: nil, count: slots.count)
            for await (index, result) in group { results[index] = result }
            return results.compactMap { $0 }
        }
    }

    /// Watches the slots until the task is cancelled or the station stops taking units: provisions each unit as it
    /// arrives, and waits for it to be taken out before the slot takes the next.
    public func watch(slots: [Slot]) async throws {
        let fixed = try slots.map { ($0, try context.options.devices.parseAddress($0.address)) }
        try await watch(discovering: { fixed.map(\.0) }, announce: slots)
    }

    /// Watch mode with slots that come and go: `discover` is asked for the slots every poll interval (e.g. the USB
    /// ports that hold a headset), and each new one is watched from then on.
    public func watch(discovering discover: @escaping @Sendable () async -> [Slot], announce: [Slot] = []) async throws {
        try await context.restoreWindow()
        start(announce)
        await withTaskGroup(of: Void.self) { group in
            var watched = Set<String>()
            while !Task.isCancelled, context.stopReason == nil {
                for slot in await discover() where !watched.contains(slot.name) {
                    guard let address = try? context.options.devices.parseAddress(slot.address) else { continue }
                    watched.insert(slot.name)
                    group.addTask { await self.watch(slot, address: address) }
                }
                do { try await Task.sleep(for: context.options.pollInterval) } catch { break }
            }
            // Stopped: the units being provisioned finish (cancellation, not a stop, aborts them).
        }
    }

    private func start(_ slots: [Slot]) {
        context.emit(.started(
            slots: slots.map(\.name), recipe: context.recipe.path, recipeHash: context.recipe.contentHash,
            station: context.options.station))
    }

    /// Provisions the unit in `slot`: its `finished` event, then the totals that count it (a slot whose unit never
    /// answered counts as an error).
    private func provision(_ slot: Slot, address: DeviceAddress) async -> UnitResult {
        let (result, firstPass, measurements) = await UnitRun(station: context, slot: slot, address: address, emit: context.emit).run()
        context.emit(.finished(result))
        context.count(result, firstPass: firstPass, measurements: measurements)
        return result
    }

    private func watch(_ slot: Slot, address: DeviceAddress) async {
        let connector = context.options.devices.connector(context.options.connection)
        while !Task.isCancelled, context.stopReason == nil {
            context.emit(.waiting(slot: slot.name))
            guard await wait(for: true, slot: address, connector: connector) else { return }
            guard context.stopReason == nil else { return }
            _ = await provision(slot, address: address)
            guard context.stopReason == nil, await wait(for: false, slot: address, connector: connector) else { return }
            context.emit(.left(slot: slot.name))
        }
    }

    /// Waits until a unit is in the slot (`present`) or gone from it; false when cancelled or stopped meanwhile.
    /// Nothing is sent to the unit (`DeviceRegistry.isPresent`).
    private func wait(for present: Bool, slot address: DeviceAddress, connector: TransportConnector) async -> Bool {
        while !Task.isCancelled {
            if present, context.stopReason != nil { return false }
            if await DeviceRegistry.isPresent(address, connector: connector) == present { return true }
            do { try await Task.sleep(for: context.options.pollInterval) } catch { return false }
        }
        return false
    }
}
