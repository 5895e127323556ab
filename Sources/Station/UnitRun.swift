import DeviceAccess
import Failure
import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import Recipe
import Records
import Support
import Transport

/// A step that did not pass: `fail` (a measurement outside its limits, a lock that does not hold) or `error` (the
/// device or the link failed), with one line saying why.
struct StepStop: Error {
    var outcome: StepOutcome
    var message: String
}

/// One unit's run in one slot: identify it, record the run, flash, apply the settings, write its identity,
/// calibrate, test, lock, commit its identities. Every step is recorded as it ends, so a killed station leaves the
/// steps done so far; a unit that comes back (by its hardware id) keeps its identities, and steps whose effect the
/// device verifiably holds are recorded as skipped.
struct UnitRun {
    let station: StationContext
    let slot: Slot
    let address: DeviceAddress
    /// The unit's step records and events, in order (every event of the unit goes through it).
    let journal: UnitJournal
    let emit: @Sendable (StationEvent) -> Void

    /// Device and link waits (and the operator's answers): not the station's own time.
    let time = DeviceTime()

    init(station: StationContext, slot: Slot, address: DeviceAddress, emit: @escaping @Sendable (StationEvent) -> Void) {
        (self.station, self.slot, self.address) = (station, slot, address)
        let journal = UnitJournal(deliver: emit)
        self.journal = journal
        self.emit = { journal.emit($0) }
    }

    private var recipe: ProvisioningRecipe { station.recipe.recipe }
    private var store: any RecordStore { station.store }

    /// Provisions the unit; never throws: every ending is a result (and a recorded run when the unit was identified),
    /// whether the unit's first finished run passed (the first-pass yield's definition, docs/records.md: an earlier
    /// finished run's outcome, else this run's), and the measurements it recorded.
    func run() async -> (result: UnitResult, firstPass: Bool, measurements: [Records.Measurement]) {
        let client = station.options.devices.bootloaderClient(
            address: address, wait: station.options.deviceWait, connection: station.options.connection, logger: station.logger)
        let result = await run(with: client)
        await client.close()
        return result
    }

    private func run(with client: BootloaderClient) async -> (result: UnitResult, firstPass: Bool, measurements: [Records.Measurement]) {
        let steps = FactorySteps(client: client)
        var result = UnitResult(
            slot: slot.name, hardwareID: nil, serial: nil, bluetoothAddress: nil, outcome: .error, failedStep: StepName.identify,
            message: nil, run: nil, seconds: 0, stationSeconds: 0, skippedSteps: [])
        func finish() -> UnitResult {
            let (wall, own) = time.seconds
            result.seconds = wall
            result.stationSeconds = own
            return result
        }

        // Identify: the hardware id names the unit in the records; nothing is recorded before it answers.
        let info: FactoryInfo
        do {
            info = try await time.device { try await steps.info() }
        } catch {
            result.outcome = Task.isCancelled ? .aborted : .error
            result.message = describe(error)
            return (finish(), false, [])
        }
        let hardwareID = info.hardwareID
        result.hardwareID = hardwareID
        emit(.arrived(slot: slot.name, hardwareID: hardwareID))

        // The unit's identities are reserved while its records are read and its run is started: two round trips to
        // the records at a time, not one after the other (at 64 units at once each is a wait for the writer and for
        // the pool). A unit that comes back gets the ones it holds; a quarantined one keeps what it was given before.
        let station = self.station
        let reservation = Task { try await station.identities.reserve(for: hardwareID) }
        defer { reservation.cancel() }

        let runID: RunID
        let previous: [RunRecord]
        let options = station.options
        let start = RunStart(
            hardwareID: hardwareID, station: options.station, slot: slot.name, operatorName: station.desk.currentOperator,
            recipeHash: station.recipe.contentHash, toolVersion: options.toolVersion,
            imageHashes: station.imageHashes, startedAt: Date(), workOrder: options.workOrder, lot: options.lot,
            fixture: options.fixture, metadata: station.metadata)
        do {
            // Quarantine: a unit that failed max-rework times since its last release is refused, untouched.
            if let maxRework = recipe.maxRework {
                previous = try await store.runs(hardwareID: hardwareID, station: nil)
                let failures = Rework.failuresSinceRelease(runs: previous, releases: try await store.releases(of: hardwareID))
                if failures >= maxRework {
                    emit(.quarantined(slot: slot.name, hardwareID: hardwareID, failures: failures, maxRework: maxRework))
                    result.outcome = .quarantined
                    result.failedStep = nil
                    result.message = "quarantined: failed \(failures) time\(failures == 1 ? "" : "s") (max-rework \(maxRework)); release it with 'tuneup records release \(hardwareID)'"
                    return (finish(), false, [])
                }
                runID = try await store.startRun(start)
            } else {
                // Without a quarantine to decide first, the earlier runs are read while the run is started (the read
                // may see the new run, open, or an earlier open one it closed as aborted: neither is a result).
                let store = self.store
                async let earlier = store.runs(hardwareID: hardwareID, station: nil)
                runID = try await store.startRun(start)
                previous = try await earlier
            }
        } catch {
            result.message = "records: \(describe(error))"
            station.stop(because: "the records cannot be written: \(describe(error))")
            return (finish(), false, [])
        }
        result.run = runID.rawValue
        result.operatorName = start.operatorName
        emit(.runStarted(slot: slot.name, hardwareID: hardwareID, run: runID.rawValue))

        var recorder = StepRecorder(run: runID, slot: slot.name, hardwareID: hardwareID, store: store, journal: journal)
        var outcome: RunOutcome
        do {
            try await provision(
                hardwareID: hardwareID, info: info, reservation: reservation, steps: steps, client: client, recorder: &recorder, result: &result)
            outcome = .pass
            result.outcome = .pass
            result.failedStep = nil
        } catch let stop as StepStop {
            outcome = stop.outcome == .fail ? .fail : stop.outcome == .aborted ? .aborted : .error
            result.outcome = UnitResult.Outcome(rawValue: outcome.rawValue) ?? .error
            result.failedStep = recorder.current
            result.message = stop.message
        } catch {
            outcome = Task.isCancelled ? .aborted : .error
            result.outcome = Task.isCancelled ? .aborted : .error
            result.failedStep = recorder.current
            result.message = describe(error)
        }
        result.skippedSteps = recorder.skipped
        // The run's end is recorded after its steps' records (and even when the station is stopping: an uncancelled
        // task). A step's record that could not be written makes the unit's ending an error.
        if let unrecorded = await journal.flushed(), !(result.message ?? "").hasPrefix("records: ") {
            if outcome == .pass || outcome == .fail {
                outcome = .error
                result.outcome = .error
                result.failedStep = unrecorded.step
            }
            result.message = (result.message.map { $0 + "; " } ?? "") + "records: \(describe(unrecorded.error))"
        }
        // The unit's first finished run, at any station: an earlier one, else this one (RecordsReport's definition).
        // A unit that failed or erred before comes back for rework: its pass is not a first pass.
        let finished: Set<RunOutcome> = [.pass, .fail, .error]
        let earliest = previous.filter { $0.id != runID && $0.outcome.map(finished.contains) == true }
            .min { ($0.start.startedAt, $0.id) < ($1.start.startedAt, $1.id) }
        let firstPass = earliest.map { $0.outcome == .pass } ?? (outcome == .pass)
        let store = self.store
        let ended = await Task { () -> (any Error)? in
            do { try await store.finishRun(runID, outcome: outcome, at: Date()); return nil } catch { return error }
        }.value
        if let ended { result.message = (result.message.map { $0 + "; " } ?? "") + "records: \(describe(ended))" }
        return (finish(), firstPass, recorder.measurements)
    }

    // MARK: The steps

    private func provision(
        hardwareID: String, info: FactoryInfo, reservation: Task<IssuedIdentity, any Error>,
        steps: FactorySteps, client: BootloaderClient, recorder: inout StepRecorder, result: inout UnitResult
    ) async throws {
        // Scan to bind: the unit's code (a PCB or label serial) first, as the operator puts the unit in.
        if let scan = recipe.scan {
            let runID = recorder.run
            try await recorder.step(StepName.scan) { record in try await self.scan(scan, hardwareID: hardwareID, run: runID, record: &record) }
        }
        // Identities first: a unit that comes back keeps what it was given, and an exhausted pool stops the
        // station before a unit is flashed for nothing.
        var identity = try await recorder.unrecorded(StepName.identity) {
            do {
                return try await withTaskCancellationHandler { try await reservation.value } onCancel: { reservation.cancel() }
            } catch let error as RecordsError where error.code == .poolExhausted {
                station.stop(because: error.message)
                throw error
            }
        }
        result.serial = identity.serial.value
        result.bluetoothAddress = identity.address.value
        emit(.identified(slot: slot.name, hardwareID: hardwareID, serial: identity.serial.value, bluetoothAddress: identity.address.value))

        try await flash(station.recipe.application, step: StepName.flashApplication, client: client, recorder: &recorder)
        if let resource = station.recipe.resource {
            try await flash(resource, step: StepName.flashResource, client: client, recorder: &recorder)
        }

        if !SettingsApplier.isEmpty(recipe.settings) {
            try await recorder.step(StepName.settings) { _ in
                try await sameUnit(hardwareID, client)
                try await time.device {
                    if try await client.isInBootloader() { try await client.leave() }
                    try await client.onDevice { headset in try await SettingsApplier(recipe: station.recipe).apply(to: headset) }
                }
                return .pass
            }
        }

        // The factory steps run in the bootloader: entered once here, left at the end.
        try await time.device { if try await !client.isInBootloader() { try await client.enter() } }
        let held = try await time.device { try await steps.info() }
        guard held.hardwareID == hardwareID else { throw swapped(held.hardwareID) }

        try await recorder.step(StepName.identity) { record in
            let wanted = identity.factoryIdentity
            if held.serialNumber == wanted.serialNumber, held.bluetoothAddress == wanted.bluetoothAddress?.description,
               held.bluetoothName == wanted.bluetoothName {
                record.message = "the unit holds \(identity.summary)"
                identity = try await station.identities.markWritten(identity)
                return .skipped
            }
            if held.locked {
                throw StepStop(outcome: .error, message: "the unit is locked and holds another identity (serial \(held.serialNumber ?? "none")); unlock it with 'tuneup factory unlock' to rework it")
            }
            _ = try await time.device { try await steps.writeIdentity(wanted) }
            identity = try await station.identities.markWritten(identity)
            record.message = identity.summary
            return .pass
        }

        if let anc = recipe.calibration.anc, anc.enabled {
            try await recorder.step(StepName.calibrateANC) { record in
                try await sameUnit(hardwareID, client)
                let correction: Double
                let outcome: StepOutcome
                if held.calibrationStatus == "stored", let stored = held.storedCalibration {
                    correction = Double([stored.feedforwardLeft, stored.feedforwardRight, stored.feedbackLeft, stored.feedbackRight]
                        .map { abs($0) }.max() ?? 0) / 100
                    outcome = .skipped
                    record.message = "the unit holds a stored calibration"
                } else {
                    let measured = try await time.device { try await steps.calibrate(store: false) }
                    correction = measured.largestCorrectionDB
                    outcome = .pass
                }
                let passes = anc.limits.contains(correction)
                record.measurements.append(Measurement(
                    name: "anc-correction", value: correction, unit: "dB", low: anc.limits.low, high: anc.limits.high,
                    outcome: passes ? .pass : .fail))
                guard passes else {
                    throw StepStop(outcome: .fail, message: "ANC correction \(Self.format(correction)) dB is outside \(Self.format(anc.limits))")
                }
                // Stored only once it is within the limits: a failing unit keeps no calibration.
                if outcome == .pass { _ = try await time.device { try await steps.calibrate(store: true) } }
                return outcome
            }
        }

        let prompts = recipe.prompts ?? []
        for (index, test) in recipe.tests.enumerated() {
            for prompt in prompts where prompt.position == index {
                let runID = recorder.run
                try await recorder.settle()  // the operator's prompt follows the unit's events
                try await recorder.step(prompt.step) { record in
                    try await sameUnit(hardwareID, client)
                    return try await ask(prompt, hardwareID: hardwareID, run: runID, record: &record)
                }
            }
            let serial = identity.serial.value
            let runID = recorder.run
            try await recorder.step(StepName.test(test.name)) { record in
                try await sameUnit(hardwareID, client)
                var readings: [Reading] = []
                let outcome: StepOutcome
                do {
                    outcome = try await measure(test, steps: steps, record: &record, readings: &readings)
                } catch let stop as StepStop where stop.outcome == .fail {
                    // A failing test attaches what it read too: that is when it is wanted most.
                    try await attach(test, readings: readings, hardwareID: hardwareID, serial: serial, run: runID)
                    throw stop
                }
                try await attach(test, readings: readings, hardwareID: hardwareID, serial: serial, run: runID)
                return outcome
            }
        }

        for prompt in prompts where prompt.position >= recipe.tests.count {
            let runID = recorder.run
            try await recorder.settle()  // the operator's prompt follows the unit's events
            try await recorder.step(prompt.step) { record in
                try await sameUnit(hardwareID, client)
                return try await ask(prompt, hardwareID: hardwareID, run: runID, record: &record)
            }
        }

        if recipe.lock {
            try await recorder.step(StepName.lock) { record in
                try await sameUnit(hardwareID, client)
                var outcome = StepOutcome.pass
                if held.locked {
                    outcome = .skipped
                    record.message = "the unit was locked already"
                } else {
                    _ = try await time.device { try await steps.lock() }
                }
                // The lock must hold: an identity write is refused.
                do {
                    _ = try await time.device { try await steps.writeIdentity(FactoryIdentity(serialNumber: identity.serial.value)) }
                    throw StepStop(outcome: .fail, message: "the unit took an identity write after the lock")
                } catch let error as HeadsetError where error.code == .factoryLocked {
                    record.message += (record.message.isEmpty ? "" : "; ") + "the lock holds (an identity write was refused)"
                }
                return outcome
            }
        }

        try await time.device { if try await client.isInBootloader() { try await client.leave() } }
        try await sameUnit(hardwareID, client)
        // Committed once every step is in the records: a unit whose records are incomplete does not pass.
        try await recorder.settle()
        try await station.identities.commit(identity)
    }

    /// A unit taken out mid-run and another put in its slot must not get the first one's identity, calibration or
    /// lock: before each step the hardware id is read again (one request).
    private func sameUnit(_ hardwareID: String, _ client: BootloaderClient) async throws {
        let now = try await time.device { try await client.onDevice { try await $0.factory.hardwareID().description } }
        guard now == hardwareID else { throw swapped(now) }
    }

    private func swapped(_ other: String) -> StepStop {
        StepStop(outcome: .error, message: "another unit (hardware id \(other)) is in the slot now: the unit was taken out mid-run")
    }

    private func flash(_ image: FirmwareImage, step: String, client: BootloaderClient, recorder: inout StepRecorder) async throws {
        let hardwareID = recorder.hardwareID
        try await recorder.step(step) { record in
            // One link to a unit at a time: a USB device has one owner (its interface is claimed). The client
            // opens its link again when it is next used.
            await client.close()
            // One wait for a unit, in the flash as in every other step: for the bootloader to answer after a jump
            // and for a lost link to come back (a unit pulled mid-flash is given up after --wait, not 30 s).
            var options = UpdateOptions(verificationKey: station.recipe.key)
            options.readyWait = station.options.deviceWait
            options.reconnectWait = station.options.deviceWait
            let updater = station.options.devices.updater(
                image: image, address: address, options: options, connection: station.options.connection, logger: station.logger)
            let slot = slot.name, emit = emit
            let watcher = Task {
                var last = -1.0
                for await progress in updater.progress where progress.fraction - last >= 0.01 || progress.fraction >= 1 {
                    last = progress.fraction
                    emit(.progress(slot: slot, hardwareID: hardwareID, step: step, fraction: progress.fraction))
                }
            }
            let result: UpdateResult
            do {
                result = try await time.device { try await updater.run() }
            } catch {
                watcher.cancel()
                throw error
            }
            // The updater's feed ends with the update: every event, the last one (done, 1.0) too, is told before the
            // step ends (cancelling the watcher here lost it when it had not been read yet).
            await watcher.value
            let version = image.version.map { "\(image.region.rawValue) \($0)" } ?? "the \(image.region.rawValue) image"
            // Nothing written: the unit held the image already (installed, or every sector verified as equal).
            guard !result.alreadyInstalled, result.bytesWritten > 0 else {
                record.message = "the unit holds \(version)"
                return .skipped
            }
            record.message = "\(version): \(result.bytesWritten) bytes in \(String(format: "%.1f", result.seconds)) s"
            return .pass
        }
    }

    /// One attempt of a test: its number, when (seconds from the step's start), what it read and its judgement.
    struct Reading {
        var attempt: Int
        var seconds: Double
        var value: Double
        var judgement: ProvisioningRecipe.Judgement
    }

    private func measure(
        _ test: ProvisioningRecipe.TestSpec, steps: FactorySteps, record: inout StepRecord, readings: inout [Reading]
    ) async throws -> StepOutcome {
        guard let measurement = FactoryMeasurement(name: test.name) else {
            throw StepStop(outcome: .error, message: "the station cannot measure '\(test.name)'")
        }
        var judgement = ProvisioningRecipe.Judgement.fail
        var value = Double.nan
        let started = ContinuousClock.now
        for attempt in 1...test.retry.attempts {
            if attempt > 1 {
                record.retries += 1
                try await Task.sleep(for: test.retry.delay)
            }
            value = try await time.device { try await steps.measure(measurement) }
            judgement = test.judge(value)
            let elapsed = (ContinuousClock.now - started).components
            readings.append(Reading(attempt: attempt, seconds: Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, value: value, judgement: judgement))
            if judgement != .fail { break }
        }
        record.measurements.append(Measurement(
            name: test.name, value: value, unit: test.unit.rawValue, low: test.limits.low, high: test.limits.high,
            marginalLow: test.marginal?.low, marginalHigh: test.marginal?.high,
            outcome: MeasurementOutcome(rawValue: judgement.rawValue) ?? .fail))
        guard judgement != .fail else {
            throw StepStop(outcome: .fail, message: "\(test.name) \(Self.format(value)) \(test.unit.rawValue) is outside \(Self.format(test.limits))")
        }
        if judgement == .marginal { record.message = "marginal" }
        return .pass
    }

    /// Stores the test's attachments in the run: its readings as CSV, files the fixture wrote (read on the blocking
    /// executor). A file that is missing, unreadable or too large is the step's error.
    private func attach(_ test: ProvisioningRecipe.TestSpec, readings: [Reading], hardwareID: String, serial: String, run: RunID) async throws {
        let step = StepName.test(test.name)
        for spec in test.attach ?? [] {
            let attachment: Attachment
            switch spec {
            case let .readings(name):
                var rows = [["attempt", "seconds", "value", "unit", "low", "high", "judgement"]]
                for r in readings {
                    rows.append([String(r.attempt), String(format: "%.3f", r.seconds), String(r.value), test.unit.rawValue,
                                 test.limits.low.map { String($0) } ?? "", test.limits.high.map { String($0) } ?? "", r.judgement.rawValue])
                }
                attachment = Attachment(name: name, step: step, mediaType: "text/csv", content: Data(CSV.document(rows).utf8))
            case let .file(path, name, mediaType):
                let rendered = ProvisioningRecipe.AttachSpec.render(path, hardwareID: hardwareID, serial: serial)
                let directory = (station.recipe.path as NSString).deletingLastPathComponent
                let full = rendered.hasPrefix("/") ? rendered : (directory.isEmpty ? "." : directory) + "/" + rendered
                let content = try await Blocking.perform("attachment \(name)") { () throws(StepStop) -> Data in try Self.readAttachment(full) }
                attachment = Attachment(
                    name: name, step: step, mediaType: mediaType ?? Traceability.mediaType(ofFile: rendered), content: content)
            }
            do {
                try await store.recordAttachment(attachment, in: run)
            } catch {
                throw StepStop(outcome: .error, message: "attachment \(attachment.name): \(describe(error))")
            }
        }
    }

    /// A file to attach: a regular file of at most `Traceability.maxAttachmentBytes`. Blocking.
    static func readAttachment(_ path: String) throws(StepStop) -> Data {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw StepStop(outcome: .error, message: "attachment \(path): \(String(cString: strerror(errno)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw StepStop(outcome: .error, message: "attachment \(path) is not a regular file") }
        guard Int(status.st_size) <= Traceability.maxAttachmentBytes else {
            throw StepStop(outcome: .error, message: "attachment \(path) is \(status.st_size) bytes; at most \(Traceability.maxAttachmentBytes) (4 MiB)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StepStop(outcome: .error, message: "attachment \(path) cannot be read")
        }
        guard data.count <= Traceability.maxAttachmentBytes else {
            throw StepStop(outcome: .error, message: "attachment \(path) is \(data.count) bytes; at most \(Traceability.maxAttachmentBytes) (4 MiB)")
        }
        return data
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }

    static func format(_ limits: ProvisioningRecipe.Limits) -> String {
        "\(limits.low.map(format) ?? "-inf")...\(limits.high.map(format) ?? "+inf")"
    }
}

/// One line for any error of the tools.
func describe(_ error: any Error) -> String {
    if let coded = error as? any CodedError { return coded.message }
    if error is CancellationError { return "the station stopped" }
    return String(describing: error)
}

/// Records each step as it ends (with its measurements) and reports it.
struct StepRecorder {
    let run: RunID
    let slot: String
    let hardwareID: String
    let store: any RecordStore
    let journal: UnitJournal
    /// The step running now (the failing one after a stop).
    private(set) var current: String?
    private(set) var skipped: [String] = []
    /// Every measurement recorded so far, in order (the station's process control takes them).
    private(set) var measurements: [Records.Measurement] = []

    init(run: RunID, slot: String, hardwareID: String, store: any RecordStore, journal: UnitJournal) {
        (self.run, self.slot, self.hardwareID, self.store, self.journal) = (run, slot, hardwareID, store, journal)
    }

    /// Waits until the records handed to the journal are written; one that failed stops the unit, at its step.
    mutating func settle() async throws {
        if let failed = await journal.flushed() { throw unrecorded(failed) }
    }

    private mutating func unrecorded(_ failed: (step: String, error: any Error)) -> StepStop {
        current = failed.step
        return StepStop(outcome: .error, message: "records: \(describe(failed.error))")
    }

    /// Runs part of a step whose effect a later, recorded step records (a failure names `name`).
    mutating func unrecorded<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
        current = name
        let value = try await body()
        current = nil
        return value
    }

    /// Runs a step and hands its record, with its outcome (pass, skipped; fail, error or aborted when it throws), to the
    /// journal; rethrows. A step starts only while every earlier record could be written.
    mutating func step(_ name: String, _ body: (inout StepRecord) async throws -> StepOutcome) async throws {
        if let failed = journal.failure { throw unrecorded(failed) }
        current = name
        journal.emit(.stepStarted(slot: slot, hardwareID: hardwareID, step: name))
        var record = StepRecord(name: name, startedAt: Date(), endedAt: Date(), outcome: .pass)
        var failure: (any Error)?
        do {
            record.outcome = try await body(&record)
        } catch let stop as StepStop {
            record.outcome = stop.outcome
            record.message = stop.message
            failure = stop
        } catch {
            let aborted = Task.isCancelled
            record.outcome = aborted ? .aborted : .error
            record.message = describe(error)
            failure = aborted ? StepStop(outcome: .aborted, message: describe(error)) : error
        }
        record.endedAt = Date()
        if record.outcome == .skipped { skipped.append(name) }
        measurements += record.measurements
        let (store, run, finished) = (self.store, self.run, record)
        journal.record(step: name, { _ = try await store.recordStep(finished, in: run) }, then: .stepEnded(
            slot: slot, hardwareID: hardwareID, step: name, outcome: record.outcome.rawValue, message: record.message.isEmpty ? nil : record.message))
        if let failure { throw failure }
        current = nil
    }
}
