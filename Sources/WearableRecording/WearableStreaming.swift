import Failure
import Foundation
import Support
import Wearable
import WearableSession

/// What to stream: the sensors at one shared period, the gestures, for how long (docs/cli.md, `wearable stream`).
public struct WearableStreamSetup: Sendable {
    /// The sensors to enable (empty: gestures alone).
    public var sensors: [SensorType]
    public var period: SamplePeriod
    /// The gestures to enable; nil: every gesture the device offers.
    public var gestures: [GestureType]?
    /// Whether the library checks the configuration against the device's information before sending.
    public var checked: Bool
    /// Stop after this long (nil: until stopped).
    public var stopAfter: Duration?

    public init(sensors: [SensorType], period: SamplePeriod, gestures: [GestureType]? = nil, checked: Bool = true, stopAfter: Duration? = nil) {
        (self.sensors, self.period, self.gestures, self.checked, self.stopAfter) = (sensors, period, gestures, checked, stopAfter)
    }
}

extension WearableStreamSetup {
    /// A refused option value: its one line (the CLI's usage error, exit 64).
    public struct OptionError: Error, Sendable {
        public let message: String
    }

    /// `--reconnect-timeout`: `never` (reconnect until stopped), a zero duration in any form (`0`, `0s`, `0ms`: do not
    /// reconnect, nil), or a duration up to 24 h (`30s`, `5min`, or plain seconds).
    public static func reconnectPolicy(_ text: String) throws(OptionError) -> ReconnectPolicy? {
        if text.lowercased() == "never" { return ReconnectPolicy() }
        guard let limit = Quantities.parseDuration(text, bare: .seconds(1)), limit <= .seconds(86400) else {
            throw OptionError(message: "--reconnect-timeout takes never, 0 (do not reconnect) or a duration up to 24 h (30s, 5min, 1h), got '\(text)'")
        }
        return limit == .zero ? nil : ReconnectPolicy(giveUpAfter: limit)
    }
}

/// The streaming workflow of `wearable stream` and `record`: a session opened and configured, every event, sample and
/// gesture as a `WearableLine` in order, stopped by a duration, a signal, the caller, or a link lost for good.
public enum WearableStreaming {
    /// Runs one streaming session on `session` (not yet open): opens, configures, hands every line to `emit` (in
    /// order, on one task), stops after `setup.stopAfter`, when `stopSignals` yields or when the link is lost for good,
    /// closes and hands the summary to `finish`, which runs before any failure is thrown (so recordings are written).
    /// `shouldStop` is asked after each line: true stops the stream as the duration would (a recording that cannot
    /// write any more). `metadataTool`: a `metadata` line (the recording's header, docs/wearable.md §10, naming this
    /// tool) comes first once the device took the configuration.
    /// - Throws: what opening throws (after a `failedToOpen` line), what configuring throws (a refused configuration:
    ///   `WearableSessionError` `.refused` or `.rejectedLocally`, with no `opened` line), the `WearableSessionError` of a
    ///   link lost for good (after `closed` and the summary), and what `finish` throws.
    public static func stream(_ session: WearableDeviceSession, _ setup: WearableStreamSetup, metadataTool: String? = nil,
                              stopSignals: AsyncStream<Int32>? = nil, emit: (WearableLine) -> Void, shouldStop: () -> Bool = { false },
                              finish: (WearableLine) async throws -> Void) async throws {
        enum Item: Sendable {
            case event(WearableEvent), reading(SensorReading), gesture(GestureReading), stop
            /// A forwarding task's stream ended (the session closed it); `drained`: the wait for them is over.
            case forwarderEnded, drained
        }
        let started = ContinuousClock.now
        let (merged, feed) = AsyncStream.makeStream(of: Item.self)
        var tasks: [Task<Void, Never>] = []
        defer { tasks.forEach { $0.cancel() } }
        if let stopSignals {
            tasks.append(Task {
                for await _ in stopSignals {
                    feed.yield(.stop)
                    return
                }
            })
        }
        let events = await session.events()
        tasks.append(Task {
            for await e in events { feed.yield(.event(e)) }
        })
        do {
            try await session.open()
        } catch {
            var line = WearableLine(type: "event", event: "failedToOpen")
            line.device = session.peer
            line.error = describe(error)
            line.code = (error as? WearableSessionError)?.code.rawValue
            emit(line)
            throw error
        }
        // Said once the device took the configuration: a refused one ends in its error line alone.
        var opened = WearableLine(type: "event", event: "opened")
        opened.device = session.peer
        let readings = await session.sensorReadings(), gestureReadings = await session.gestureReadings()
        tasks.append(Task {
            for await r in readings { feed.yield(.reading(r)) }
            feed.yield(.forwarderEnded)
        })
        tasks.append(Task {
            for await g in gestureReadings { feed.yield(.gesture(g)) }
            feed.yield(.forwarderEnded)
        })
        do {
            let offered = await session.gestureInformation?.availableGestures ?? []
            let wanted = setup.gestures ?? offered
            let s = try await session.configureSensors(checked: setup.checked) { c in
                c.disableAll()
                for sensor in setup.sensors { c.enable(sensor: sensor, at: setup.period) }
            }
            let g = try await session.configureGestures(checked: setup.checked) { c in
                c.disableAll()
                for gesture in wanted { c.set(gesture: gesture, enabled: true) }
            }
            if let metadataTool, let info = await session.deviceInformation, let sensorInfo = await session.sensorInformation {
                var header = WearableLine(type: "metadata")
                header.metadata = RecordingMetadata(
                    tool: metadataTool, device: session.peer, information: info, sensorInformation: sensorInfo,
                    gestureInformation: await session.gestureInformation, sensors: s, gestures: g)
                emit(header)
            }
            emit(opened)
            var line = WearableLine(type: "event", event: "configured")
            line.periods = Dictionary(uniqueKeysWithValues: s.entries.compactMap { e in e.period.map { (e.sensor.description, Int($0.milliseconds)) } })
            line.gestures = g.enabledGestures.map(\.description)
            emit(line)
        } catch {
            await session.close()
            throw error
        }
        if let stopAfter = setup.stopAfter {
            tasks.append(Task {
                try? await Task.sleep(for: stopAfter)
                feed.yield(.stop)
            })
        }
        var lost: WearableSessionError?
        var closing = false
        var forwarders = 2
        // Stopping: the session is closed first, and what it received before is still on its way here; it is written
        // before the summary, so that the summary counts what was written (at most 2 s for streams that do not end).
        func close() async {
            guard !closing else { return }
            closing = true
            if lost == nil { await session.close() }
            tasks.append(Task {
                try? await Task.sleep(for: .seconds(2))
                feed.yield(.drained)
            })
        }
        loop: for await item in merged {
            switch item {
            case .stop: await close()
            case let .reading(r): emit(WearableLine(r))
            case let .gesture(g): emit(WearableLine(g))
            case .forwarderEnded: forwarders -= 1
            case .drained: break loop
            case let .event(.didClose(error?)) where !closing:
                lost = error
                await close()
            case let .event(.didLoseLink(error)) where !closing:
                // The gap begins: marked in the data, with the reconnect that ends it (docs/wearable.md §7.1).
                var line = WearableLine(type: "event", event: "linkLost")
                line.error = error.message
                line.code = error.code.rawValue
                line.hostTime = WearableLine.seconds(session.elapsedTime)
                emit(line)
            case let .event(.didReconnect(gap, attempts)) where !closing:
                var line = WearableLine(type: "event", event: "reconnected")
                line.gapSeconds = WearableLine.seconds(gap)
                line.attempts = attempts
                line.reconnects = await session.statistics.reconnects
                line.hostTime = WearableLine.seconds(session.elapsedTime)
                emit(line)
            case let .event(.didReceiveMalformedNotification(c, error)):
                var line = WearableLine(type: "event", event: "malformed")
                line.error = "\(c): \(error.message)"
                line.code = error.code.rawValue
                emit(line)
            case .event: break
            }
            if !closing, shouldStop() { await close() }
            if closing && forwarders == 0 { break loop }
        }
        emit(.closed(lost))
        let summary = WearableLine.summary(await session.statistics, seconds: (ContinuousClock.now - started).wearableSeconds)
        emit(summary)
        try await finish(summary)
        if let lost { throw lost }
    }

    /// An error's one line (a `failedToOpen` line's `error`).
    static func describe(_ error: any Error) -> String {
        switch error {
        case let e as any CodedError: return e.message
        case is CancellationError: return "interrupted"
        default: return "\(error)"
        }
    }

    /// What `record` wrote (`record --format json`).
    public struct Written: Encodable, Sendable {
        public var jsonl: String, csv: String
        /// Split by sensor: the per-sensor and gesture CSVs.
        public var split: [String]?
        public var samples: Int, gestures: Int
        public var summary: WearableLine
    }

    /// Streams as `stream` does into a recording at `base` (`WearableRecorder`: `BASE.jsonl` with its metadata line,
    /// `BASE.csv`, with `split` one CSV per sensor, with `splitGestures` one for the gestures), flushed at least every
    /// second. The files are checked and made (under temporary names: `SafeOutput`) before the device is
    /// opened: a path in the way, or an existing file without `overwrite`, is an `OutputFileError` and nothing is
    /// opened; they get their names when the first sample or gesture arrives. A write failure stops the recording and is thrown (`OutputFileError`, what was written is kept) after
    /// the summary. `emit` sees every line too (a live view); `finish` gets what was written before a link lost for
    /// good is thrown. A device that could not be opened or configured leaves no files behind and touches none.
    public static func record(_ session: WearableDeviceSession, _ setup: WearableStreamSetup, base: String, split: [SensorType]?,
                              splitGestures: Bool, overwrite: Bool = false, tool: String, stopSignals: AsyncStream<Int32>? = nil,
                              wallClock: @escaping @Sendable () -> Int64 = WearableRecorder.systemWallClock,
                              emit: (WearableLine) -> Void, finish: (Written) async throws -> Void) async throws {
        var recorder = try await WearableRecorder.open(base: base, split: split, splitGestures: splitGestures,
                                                       existing: overwrite ? .replace : .refuse, wallClock: wallClock)
        let writer = recorder.writer
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                writer.flush()
            }
        }
        defer { ticker.cancel() }
        var lostForGood = false
        do {
            try await stream(session, setup, metadataTool: tool, stopSignals: stopSignals, emit: { line in
                emit(line)
                if line.type == "event", line.event == "closed", line.error != nil { lostForGood = true }
                recorder.take(line)
            }, shouldStop: { writer.failure != nil }, finish: { summary in
                // A link lost for good before the first sample or gesture: the recording never started (the error
                // follows; nothing is written, nothing that was there is touched).
                if lostForGood, recorder.samples == 0, recorder.gestures == 0 { return }
                if let failure = await recorder.finish() {
                    // A file that appeared (or changed) while the recording started: nothing was written to its name.
                    if [.exists, .symbolicLink, .notRegularFile].contains(failure.code) { throw failure }
                    throw OutputFileError(failure.code, "\(failure.message); the recording stopped there, what was written is kept")
                }
                let paths = recorder.paths
                try await finish(Written(jsonl: paths[0], csv: paths[1], split: paths.count > 2 ? Array(paths.dropFirst(2)) : nil,
                                         samples: recorder.samples, gestures: recorder.gestures, summary: summary))
            })
        } catch {
            // A lost link: what was recorded until then is written and closed (finish ran). A device that could not
            // be opened or configured, or a link lost before the first sample: the recording never started, its
            // temporary files go and nothing that was there before is touched.
            _ = await recorder.finish(started: false)
            await writer.remove()
            throw error
        }
    }
}
