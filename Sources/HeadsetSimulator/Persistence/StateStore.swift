import Foundation
import Glibc
import Simulator
import Support
import Synchronization

/// The simulator's state file: the states of all simulated devices of one server, owned by one process at a time.
///
/// File format (JSON, pretty-printed, keys sorted):
/// `{ "version": 1, "devices": [ <HeadsetState of device 0>, <device 1>, ... ] }` — a server with `--count N` keeps
/// all N devices in the one file, device k at array index k. Devices missing from the array start in their factory
/// state. `version` is the schema version; a file with another version is refused (`.unsupportedStateVersion`) so a
/// later build can migrate it explicitly instead of silently resetting it.
///
/// Guarantees:
/// - **Exclusive owner.** `open` takes an exclusive `flock` on `PATH.lock` (a separate file, because saving replaces
///   the state file's inode) and holds it until `close()` or deinit. A second owner — another process, or another
///   `StateStore` in this process — waits, polling every 20 ms, up to the lock timeout and then fails with
///   `.stateLocked` naming the file. A crashed owner's lock is released by the kernel.
/// - **Never silently reset.** A file that is not valid JSON of this shape, or holds values out of range, fails with
///   `.corruptState` naming the file and the problem; the file is left untouched.
/// - **Atomic saves.** Each save writes a temporary file in the same directory (`.NAME.tmp-PID-N`), fsyncs it, renames
///   it over the state file and fsyncs the directory, so a killed process leaves either the old or the new file,
///   never a partial one. A failed save removes its temporary file.
/// - **Off the cooperative pool.** Every file-system call (open, lock attempts, read, write, fsync, rename) runs on the
///   store's serial lane on the blocking executor (`SerialLane`); callers only suspend. Saves are written in the
///   order they were enqueued.
/// - A missing parent directory is created (mode 0700).
///
/// **Flash.** Each device's 2 MiB NOR flash and the running state of an in-process device that stayed on live in a
/// second file, `PATH.flash` (see `FlashFile` for its fixed binary layout), covered by the same lock. Flash operations
/// are persisted as they happen with one `pwrite` of the touched bytes each (`enqueueFlashWrite`), in order, on the
/// same lane — never a rewrite of the whole 2 MiB. A device missing from it starts from the factory flash, which is
/// written once in full; so a state file from before flash existed (version 1 JSON without `PATH.flash`) loads with
/// its settings kept and a fresh factory flash.
public final class StateStore: Sendable {
    /// The schema version this build reads and writes.
    public static let schemaVersion = 1
    /// How long `open` waits for another owner by default.
    public static let defaultLockTimeout: Duration = .seconds(10)

    /// The state file.
    public let path: String
    /// The lock file next to it (`PATH.lock`).
    public let lockPath: String
    /// The flash container next to it (`PATH.flash`).
    public let flashPath: String

    private struct Storage {
        var devices: [HeadsetState]
        var lockFD: Int32
        var flashFD: Int32
        var flash: [Int: [UInt8]]
        var running: [Int: StoredRunningState]
        /// Devices that took their stored RAM state and have not written or released it yet: at close, their
        /// stored state is cleared (as a power loss would clear RAM).
        var runningTaken: Set<Int> = []
        var closed = false
    }

    private let queue: SerialLane
    private let storage: Mutex<Storage>
    private let flashBytes = Atomic<Int>(0)
    private static let tempCounter = Atomic<Int>(0)

    private init(path: String, lockPath: String, queue: SerialLane, lockFD: Int32, devices: [HeadsetState],
                 flash: FlashFile.Loaded) {
        self.path = path
        self.lockPath = lockPath
        self.flashPath = path + ".flash"
        self.queue = queue
        self.storage = Mutex(Storage(devices: devices, lockFD: lockFD, flashFD: flash.fd, flash: flash.flash, running: flash.running))
    }

    deinit {
        let fds = storage.withLock { s -> (Int32, Int32) in
            defer { s.lockFD = -1; s.flashFD = -1 }
            return (s.flashFD, s.lockFD)
        }
        if fds.0 >= 0 { _ = Glibc.close(fds.0) }
        if fds.1 >= 0 { _ = Glibc.close(fds.1) }
    }

    /// Locks and loads the state file at `path` (a missing file means every device starts in its factory state).
    ///
    /// - Throws: `SimulatorError` — `.stateLocked` when another owner keeps the lock past `lockTimeout`,
    ///   `.corruptState` / `.unsupportedStateVersion` for a bad file (the lock is released again), `.io` for
    ///   operating-system failures — or `CancellationError`.
    public static func open(path: String, lockTimeout: Duration = defaultLockTimeout) async throws -> StateStore {
        let queue = SerialLane("simulator state")
        let lockPath = path + ".lock"
        let fd = try await run(on: queue) { () throws(SimulatorError) -> Int32 in
            try FileIO.makeParentDirectory(of: path)
            return try FileIO.openLockFile(lockPath, statePath: path)
        }
        do {
            let deadline = ContinuousClock.now + lockTimeout
            while true {
                let locked = try await run(on: queue) { () throws(SimulatorError) -> Bool in try FileIO.tryLock(fd, lockPath: lockPath) }
                if locked { break }
                guard ContinuousClock.now < deadline else {
                    throw SimulatorError(.stateLocked, "simulator state file \(path) is in use by another simulator "
                        + "(lock \(lockPath) still held after \(format(lockTimeout))); stop the other simulator or use another state file")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let devices = try await run(on: queue) { () throws(SimulatorError) -> [HeadsetState] in
                guard let bytes = try FileIO.readFile(path) else { return [] }
                return try decode(bytes, path: path)
            }
            let ownerDied = try await run(on: queue) { () throws(SimulatorError) -> Bool in
                try FileIO.claimOpenMarker(fd, lockPath: lockPath)
            }
            var flash = try await run(on: queue) { () throws(SimulatorError) -> FlashFile.Loaded in
                try FlashFile.open(path + ".flash")
            }
            // A previous owner that was killed may have changed the RAM after storing it: nothing of it is kept.
            if ownerDied { flash.running = [:] }
            return StateStore(path: path, lockPath: lockPath, queue: queue, lockFD: fd, devices: devices, flash: flash)
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }

    /// The stored state of device `index`, or nil when the file has none for it.
    public func state(forDevice index: Int) -> HeadsetState? {
        storage.withLock { s in s.devices.indices.contains(index) ? s.devices[index] : nil }
    }

    /// The number of devices in the file.
    public var deviceCount: Int { storage.withLock { $0.devices.count } }

    /// Records `state` for device `index` and enqueues an atomic save of the whole file; `completion` runs on the
    /// store's queue once the file is on disk (or the save failed). Synchronous, so saves enqueued by one actor are
    /// written in the actor's order.
    public func enqueueSave(_ state: HeadsetState, forDevice index: Int,
                            completion: @escaping @Sendable (Result<Void, SimulatorError>) -> Void = { _ in }) {
        let snapshot: [HeadsetState]? = storage.withLock { s in
            guard !s.closed, index >= 0 else { return nil }
            while s.devices.count <= index { s.devices.append(.factory(index: s.devices.count)) }
            s.devices[index] = state
            return s.devices
        }
        guard let snapshot else {
            completion(.failure(SimulatorError(.io, "cannot save simulator state: the state file \(path) is closed")))
            return
        }
        let path = self.path
        enqueue(completion) { () throws(SimulatorError) in try Self.write(snapshot, to: path) }
    }

    /// Saves `state` for device `index` and waits until it is on disk. Calls from one task are written in order;
    /// callers that need ordering across tasks use `enqueueSave` from one isolation domain.
    public func save(_ state: HeadsetState, forDevice index: Int) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enqueueSave(state, forDevice: index) { continuation.resume(with: $0.mapError { $0 as any Error }) }
        }
    }

    /// Waits for pending saves and flash writes, then releases the lock. Later saves fail. Idempotent.
    public func close() async {
        let closing: (flash: Int32, lock: Int32, taken: Set<Int>)? = storage.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            defer { s.lockFD = -1; s.flashFD = -1; s.runningTaken = [] }
            return (s.flashFD, s.lockFD, s.runningTaken)
        }
        guard let closing else { return }
        let flashPath = self.flashPath
        // Runs after every save enqueued before `closed` was set.
        _ = try? await Self.run(on: queue) { () throws(SimulatorError) -> Void in
            if closing.flash >= 0 {
                for index in closing.taken { try? FlashFile.writeRunning(closing.flash, flashPath, device: index, nil) }
                _ = Glibc.close(closing.flash)
            }
            if closing.lock >= 0 {
                FileIO.clearOpenMarker(closing.lock)
                _ = Glibc.close(closing.lock)
            }
        }
    }

    // MARK: - Flash

    /// Device `index`'s stored flash (`FlashMap.size` bytes), handed over once: later calls return nil. Nil when the
    /// container has none for it (the device then starts from the factory flash and calls `enqueueFlashInitialize`).
    func takeFlash(forDevice index: Int) -> [UInt8]? {
        storage.withLock { s in s.flash.removeValue(forKey: index) }
    }

    /// Device `index`'s stored running state, handed over once.
    /// Until the device writes its state again (`enqueueRunningState`) or releases it unchanged
    /// (`releaseRunningState`), the stored state is cleared when the store closes.
    func takeRunningState(forDevice index: Int) -> StoredRunningState? {
        storage.withLock { s in
            let state = s.running.removeValue(forKey: index)
            if state != nil { s.runningTaken.insert(index) }
            return state
        }
    }

    /// The device's RAM state is still what the file holds: nothing to write at close.
    func releaseRunningState(forDevice index: Int) {
        _ = storage.withLock { s in s.runningTaken.remove(index) }
    }

    /// Writes device `index`'s whole flash (its first write) and marks it valid.
    func enqueueFlashInitialize(_ contents: [UInt8], forDevice index: Int,
                                completion: @escaping @Sendable (Result<Void, SimulatorError>) -> Void = { _ in }) {
        enqueueFlash(forDevice: index, completion: completion) { fd, path throws(SimulatorError) in
            try FlashFile.initialize(fd, path, device: index, contents: contents)
        }
    }

    /// Bytes written to the flash file by flash operations so far (`enqueueFlashWrite`; not the first full write of a
    /// device), for checking that operations write only what they touch.
    var flashBytesWritten: Int { flashBytes.load(ordering: .relaxed) }

    /// Persists `bytes` at flash address `address` of device `index`; `completion` runs once they are written.
    /// Writes happen in the order they were enqueued.
    func enqueueFlashWrite(_ bytes: [UInt8], at address: Int, forDevice index: Int,
                           completion: @escaping @Sendable (Result<Void, SimulatorError>) -> Void = { _ in }) {
        flashBytes.add(bytes.count, ordering: .relaxed)
        enqueueFlash(forDevice: index, completion: completion) { fd, path throws(SimulatorError) in
            try FlashFile.write(fd, path, device: index, address: address, bytes: bytes)
        }
    }

    /// Stores (nil: clears) the running state of device `index`.
    func enqueueRunningState(_ state: StoredRunningState?, forDevice index: Int,
                             completion: @escaping @Sendable (Result<Void, SimulatorError>) -> Void = { _ in }) {
        _ = storage.withLock { s in s.runningTaken.remove(index) }
        enqueueFlash(forDevice: index, completion: completion) { fd, path throws(SimulatorError) in
            try FlashFile.writeRunning(fd, path, device: index, state)
        }
    }

    private func enqueueFlash(forDevice index: Int, completion: @escaping @Sendable (Result<Void, SimulatorError>) -> Void,
                              _ body: @escaping @Sendable (Int32, String) throws(SimulatorError) -> Void) {
        let fd: Int32? = storage.withLock { s in s.closed ? nil : s.flashFD }
        guard let fd, fd >= 0 else {
            completion(.failure(SimulatorError(.io, "cannot write the simulator flash file \(flashPath): it is closed")))
            return
        }
        guard (0..<FlashFile.slots).contains(index) else {
            completion(.failure(SimulatorError(.io, "cannot keep device \(index)'s flash in \(flashPath): it holds devices 0...\(FlashFile.slots - 1)")))
            return
        }
        let path = flashPath
        // Capturing self keeps the descriptor open (deinit closes it) until the write has run.
        enqueue(completion) { [self] () throws(SimulatorError) in
            _ = self
            try body(fd, path)
        }
    }

    /// Reads and validates a state file without locking it (for inspection). Nil when the file does not exist.
    public static func read(path: String) async throws -> [HeadsetState]? {
        try await Blocking.perform("simulator state read", unavailable: unavailable) { () throws(SimulatorError) -> [HeadsetState]? in
            try FileIO.readFile(path).map { bytes throws(SimulatorError) in try decode(bytes, path: path) }
        }
    }

    // MARK: - Encoding

    private struct FileContents: Codable {
        var version: Int
        var devices: [HeadsetState]
    }

    private struct VersionProbe: Decodable {
        var version: Int
    }

    /// Decodes and validates the file contents.
    static func decode(_ bytes: [UInt8], path: String) throws(SimulatorError) -> [HeadsetState] {
        let data = Data(bytes)
        let decoder = JSONDecoder()
        let probe: VersionProbe
        do {
            probe = try decoder.decode(VersionProbe.self, from: data)
        } catch {
            throw corrupt(path, describe(error))
        }
        guard probe.version == schemaVersion else {
            throw SimulatorError(.unsupportedStateVersion, "simulator state file \(path) has schema version \(probe.version); "
                + "this build reads version \(schemaVersion) (the file was left unchanged)")
        }
        let contents: FileContents
        do {
            contents = try decoder.decode(FileContents.self, from: data)
        } catch {
            throw corrupt(path, describe(error))
        }
        for (k, device) in contents.devices.enumerated() {
            do {
                try device.validate()
            } catch {
                throw corrupt(path, "device \(k): \(error.message)")
            }
        }
        return contents.devices
    }

    /// The file contents for `devices`.
    static func encode(_ devices: [HeadsetState]) throws(SimulatorError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            var bytes = [UInt8](try encoder.encode(FileContents(version: schemaVersion, devices: devices)))
            bytes.append(0x0A)
            return bytes
        } catch {
            throw SimulatorError(.io, "cannot encode the simulator state: \(error)")
        }
    }

    private static func write(_ devices: [HeadsetState], to path: String) throws(SimulatorError) {
        let bytes = try encode(devices)
        let n = tempCounter.add(1, ordering: .relaxed).newValue
        try FileIO.writeAtomically(bytes, to: path, temporarySuffix: "tmp-\(getpid())-\(n)")
    }

    private static func corrupt(_ path: String, _ why: String) -> SimulatorError {
        SimulatorError(.corruptState, "simulator state file \(path) is corrupt: \(why) (the file was left unchanged; "
            + "fix or delete it to start from the factory state)")
    }

    /// A one-line description of a JSON decoding error.
    private static func describe(_ error: any Error) -> String {
        func at(_ path: [any CodingKey]) -> String {
            path.isEmpty ? "" : " at " + path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)'\(at(context.codingPath))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "\(context.debugDescription.lowercasedFirst)\(at(context.codingPath))"
        case DecodingError.dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "\(context.debugDescription.lowercasedFirst)\(at(context.codingPath))"
        default:
            return "\(error)"
        }
    }

    // MARK: - Running on the queue

    private static func run<T: Sendable>(
        on queue: SerialLane, _ body: @escaping @Sendable () throws(SimulatorError) -> T
    ) async throws(SimulatorError) -> T {
        try await queue.perform(unavailable: unavailable, body)
    }

    /// Runs `work` on the store's lane, after everything enqueued before it; `completion` gets its outcome (or the
    /// executor's refusal).
    private func enqueue(_ completion: @escaping @Sendable (Result<Void, SimulatorError>) -> Void,
                         _ work: @escaping @Sendable () throws(SimulatorError) -> Void) {
        do {
            try queue.submit { completion(Result { () throws(SimulatorError) in try work() }) }
        } catch {
            completion(.failure(Self.unavailable(error)))
        }
    }

    @Sendable private static func unavailable(_ error: SupportError) -> SimulatorError {
        SimulatorError(.io, "cannot run the simulator's file work: \(error.message)")
    }

    private static func format(_ d: Duration) -> String {
        let ms = ApplicationFirmware.nanoseconds(d) / 1_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }
}

extension String {
    fileprivate var lowercasedFirst: String {
        guard let first else { return self }
        return first.lowercased() + dropFirst()
    }
}
