import Logging
import Simulator
import Synchronization

/// When and what a headset writes to its state store: settings after every change, the flash bytes each operation
/// touched, and — for an in-process device that stays on between processes — its RAM at shutdown. Writes are
/// enqueued synchronously, in the order the changes happened; the device awaits their `WriteCompletion` before the
/// reply or push that reports the change goes out. Without a store (a device in memory only) nothing is written.
struct HeadsetPersistence {
    /// The state store (shared with other devices or owned), nil when the device is in memory only.
    let store: StateStore?
    /// Whether the device closes the store at shutdown (it opened it itself).
    let ownsStore: Bool
    /// Whether the device's RAM is stored at shutdown and resumed by the next owner (an in-process device).
    let keepsRunningState: Bool
    /// The last failure to save, if any (saving continues with the next change).
    private(set) var lastError: SimulatorError?
    private let index: Int
    private let logger: Logger?
    /// The RAM state resumed from the flash file while it is still what the file says (then nothing needs to be
    /// written: a command that changes nothing, such as a probe, leaves the file untouched). Nil once it changed.
    private var resumed: StoredRunningState?

    init(store: StateStore?, ownsStore: Bool, index: Int, keepsRunningState: Bool, resumed: StoredRunningState?,
         logger: Logger?) {
        self.store = store
        self.ownsStore = ownsStore
        self.index = index
        self.keepsRunningState = keepsRunningState
        self.resumed = keepsRunningState ? resumed : nil
        self.logger = logger
    }

    /// The writes a device makes when it is created: a flash file slot for a device that had none, clearing a stored
    /// RAM state a power cycle discarded, settings the power-on changed. Only failures are reported (to the log).
    func initialWrites(flash: [UInt8]?, discardStoredRunningState: Bool, settings: HeadsetState?) {
        guard let store else { return }
        let report: @Sendable (Result<Void, SimulatorError>) -> Void = { [logger, index] result in
            if case .failure(let error) = result { logger?.error("device \(index): \(error.message)") }
        }
        if let flash { store.enqueueFlashInitialize(flash, forDevice: index, completion: report) }
        // Stored RAM must not outlive a change: it is cleared as soon as the RAM differs (`forgetResumedRAM`), when the
        // store closes without this device having shut down, and by the next owner of a store whose owner was killed,
        // not at open: a command that changes nothing writes nothing.
        if discardStoredRunningState { store.enqueueRunningState(nil, forDevice: index, completion: report) }
        if let settings { store.enqueueSave(settings, forDevice: index, completion: report) }
    }

    /// Enqueues the write of the flash bytes `ranges` cover (as one range, read with `contents`).
    func saveFlash(_ ranges: [Range<Int>], contents: (Range<Int>) -> [UInt8]) -> WriteCompletion? {
        guard let store, let first = ranges.first else { return nil }
        let lower = ranges.reduce(first.lowerBound) { min($0, $1.lowerBound) }
        let upper = ranges.reduce(first.upperBound) { max($0, $1.upperBound) }
        let completion = WriteCompletion()
        store.enqueueFlashWrite(contents(lower..<upper), at: lower, forDevice: index) { completion.complete($0) }
        return completion
    }

    /// Enqueues the save of `settings`.
    func saveSettings(_ settings: HeadsetState) -> WriteCompletion? {
        guard let store else { return nil }
        let completion = WriteCompletion()
        store.enqueueSave(settings, forDevice: index) { completion.complete($0) }
        return completion
    }

    /// Clears the stored RAM state once the RAM (`current`, asked only while something is stored) no longer matches.
    mutating func forgetResumedRAMIfChanged(_ current: () -> StoredRunningState?) {
        guard let resumed, current() != resumed else { return }
        self.resumed = nil
        store?.enqueueRunningState(nil, forDevice: index) { [logger, index] result in
            if case .failure(let error) = result { logger?.error("device \(index): \(error.message)") }
        }
    }

    /// At shutdown of a device that keeps its running state: enqueues the store of `current` when it differs from
    /// what is stored (returning the completion to await), else releases the stored state as it is.
    func storeRunningStateAtShutdown(_ current: StoredRunningState?) -> WriteCompletion? {
        guard keepsRunningState, let store else { return nil }
        guard current != resumed else {
            store.releaseRunningState(forDevice: index)
            return nil
        }
        let completion = WriteCompletion()
        store.enqueueRunningState(current, forDevice: index) { completion.complete($0) }
        return completion
    }

    /// Remembers (and logs) a failed write.
    mutating func record(_ result: Result<Void, SimulatorError>) {
        if case .failure(let error) = result {
            lastError = error
            logger?.error("device \(index): \(error.message)")
        }
    }

    /// What `machine` keeps in RAM, as stored between processes (nil while it is off).
    static func runningState(of machine: DeviceMachine, now: ContinuousClock.Instant) -> StoredRunningState? {
        guard let snapshot = machine.snapshot(now: now) else { return nil }
        let left = ApplicationFirmware.nanoseconds(snapshot.remainingReadyDelay)
        return StoredRunningState(image: snapshot.image, authenticated: snapshot.authenticated, verified: snapshot.verified,
                                  readyAtWallClock: left > 0 ? StoredRunningState.wallClockNow() + left : 0)
    }
}

/// A one-shot completion a store callback fills and an actor awaits later.
final class WriteCompletion: Sendable {
    private struct State {
        var result: Result<Void, SimulatorError>?
        var waiter: CheckedContinuation<Result<Void, SimulatorError>, Never>?
    }

    private let state = Mutex(State())

    func complete(_ result: Result<Void, SimulatorError>) {
        let waiter = state.withLock { s -> CheckedContinuation<Result<Void, SimulatorError>, Never>? in
            s.result = result
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: result)
    }

    func wait() async -> Result<Void, SimulatorError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> Result<Void, SimulatorError>? in
                if let r = s.result { return r }
                s.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
