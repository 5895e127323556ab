import ArgumentParser
import Foundation
import Glibc
import Progress
import Support
import Transport
import Wearable
import WearableRecording
import WearableSession

extension WearableCommand {
    /// What to stream: sensors at one period, gestures, for how long.
    struct StreamSetup: ParsableArguments {
        @Option(help: ArgumentHelp("A sensor to stream, by name or id (repeatable; default: accelerometer and gyroscope; 'none': gestures alone).", valueName: "sensor"))
        var sensor: [String] = []
        @Option(help: ArgumentHelp("The shared sample period: 320ms, 160ms, 80ms, 40ms or 20ms.", valueName: "period"))
        var period: String = "20ms"
        @Option(help: ArgumentHelp("A gesture to listen for, by name or id (double-tap or 0x81; repeatable; default: every gesture the device offers; 'none': no gestures).",
                                   valueName: "gesture"))
        var gesture: [String] = []
        @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this long: 500ms, 10s, 2min, 1h or plain seconds, up to 24 h (default: until Ctrl-C).",
                                   valueName: "duration"))
        var duration: String?
        @Flag(help: "Skip the library's checks: let the device judge the configuration.") var noCheck = false
        @Option(parsing: .unconditional, help: ArgumentHelp(
            "After a lost link, reopen the device and write the configuration again for this long before giving up: never (default), a duration (30s, 5min), or 0 (do not reconnect: a lost link ends the command, exit 69).",
            valueName: "duration"))
        var reconnectTimeout: String = "never"

        func validate() throws {
            _ = try sensors
            _ = try reconnectPolicy()
            _ = try WearableCommand.period(period)
            if gesture != ["none"] { for g in gesture { _ = try WearableCommand.gesture(named: g) } }
            _ = try stopAfter()
        }

        /// How to reconnect: nil with `--reconnect-timeout 0` (a lost link ends the stream).
        func reconnectPolicy() throws -> ReconnectPolicy? {
            if reconnectTimeout.lowercased() == "never" { return ReconnectPolicy() }
            let limit: Duration
            do {
                limit = Double(reconnectTimeout) == 0 ? .zero : try durationOption(reconnectTimeout, "--reconnect-timeout", upTo: .seconds(86400))
            } catch {
                throw ValidationError("--reconnect-timeout takes never, 0 (do not reconnect) or a duration up to 24 h (30s, 5min, 1h), got '\(reconnectTimeout)'")
            }
            return limit == .zero ? nil : ReconnectPolicy(giveUpAfter: limit)
        }

        func stopAfter() throws -> Duration? {
            guard let duration else { return nil }
            return try durationOption(duration, "--duration", upTo: .seconds(86400))
        }

        /// The sensors to stream: accelerometer and gyroscope by default, none with `--sensor none` (gestures alone).
        var sensors: [SensorType] {
            get throws {
                if sensor == ["none"] { return [] }
                return sensor.isEmpty ? [.accelerometer, .gyroscope] : try sensor.map(WearableCommand.sensor(named:))
            }
        }
    }

    /// Runs one streaming session: opens, configures, hands every line to `emit` (in order, on one task), stops at
    /// the duration, on SIGINT/SIGTERM/SIGHUP or when the link is lost, closes and hands the summary over. A lost link
    /// or a failed open ends in its one line and exit code after `finish` ran (so recordings are written).
    /// `shouldStop` is asked after each line: true stops the stream as the duration would (a recording that cannot
    /// write any more).
    /// `metadata`: a `metadata` line (the recording's header, docs/wearable.md §10) comes first once the device took
    /// the configuration.
    static func stream(_ choice: DeviceChoice, _ setup: StreamSetup, metadata: Bool = false, emit: (WearableLine) -> Void,
                       shouldStop: () -> Bool = { false }, finish: (WearableLine) async throws -> Void) async throws {
        enum Item: Sendable {
            case event(WearableEvent), reading(SensorReading), gesture(GestureReading), stop
            /// A forwarding task's stream ended (the session closed it); `drained`: the wait for them is over.
            case forwarderEnded, drained
        }
        let sensors = try setup.sensors
        let period = try WearableCommand.period(setup.period)
        let stopAfter = try setup.stopAfter()
        let session = try choice.session(reconnect: try setup.reconnectPolicy())
        let started = ContinuousClock.now
        let (merged, feed) = AsyncStream.makeStream(of: Item.self)
        var tasks: [Task<Void, Never>] = []
        defer { tasks.forEach { $0.cancel() } }
        if let signals = try? TerminationSignals.subscribe() {
            tasks.append(Task {
                for await _ in signals {
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
            line.error = describeFailure(error).0
            line.code = (error as? WearableSessionError)?.code.rawValue
            emit(line)
            throw failureExit(error)
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
            let wanted = setup.gesture == ["none"] ? [] : setup.gesture.isEmpty ? offered : try setup.gesture.map(WearableCommand.gesture(named:))
            let s = try await session.configureSensors(checked: !setup.noCheck) { c in
                c.disableAll()
                for sensor in sensors { c.enable(sensor: sensor, at: period) }
            }
            let g = try await session.configureGestures(checked: !setup.noCheck) { c in
                c.disableAll()
                for gesture in wanted { c.set(gesture: gesture, enabled: true) }
            }
            if metadata, let info = await session.deviceInformation, let sensorInfo = await session.sensorInformation {
                var header = WearableLine(type: "metadata")
                header.metadata = RecordingMetadata(
                    tool: "tuneup \(TuneupVersion.string)", device: session.peer, information: info, sensorInformation: sensorInfo,
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
            throw failureExit(explained(error))
        }
        if let stopAfter {
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
        if let lost { throw failureExit(lost) }
    }

    /// The summary for people: one line per sensor, gestures, malformed notifications.
    static func summaryText(_ s: WearableLine) -> String {
        var lines = (s.counts ?? [:]).sorted { $0.key < $1.key }.map { name, c in
            "\(name): \(counted(c.samples, "sample")), \(counted(c.gaps, "gap")) (\(c.missingSamples) missing), \(c.outOfOrder) out of order"
        }
        lines.append("gestures: \(s.gestureCount ?? 0); malformed notifications: \(s.malformedNotifications ?? 0)"
            + ((s.malformedByCode ?? [:]).isEmpty ? "" : " (" + s.malformedByCode!.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"))
        if let n = s.reconnects, n > 0 {
            lines.append("reconnects: \(n) (link down \(String(format: "%.2f", s.linkDownSeconds ?? 0)) s in all)")
        }
        return lines.joined(separator: "\n")
    }

    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    struct Stream: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "stream",
            abstract: "Stream sensor samples and gestures: a live view on a terminal, JSON Lines otherwise.",
            discussion: """
                Enables the sensors at the period and the gestures, then shows every sample and gesture until \
                --duration or Ctrl-C. A lost link is reconnected (the device opened again, the same configuration \
                written again; linkLost and reconnected events mark the gap with its length) until \
                --reconnect-timeout (default never; 0: a lost link ends the stream, exit 69). On a terminal: a compact live view (latest values, counts, gaps, gestures). \
                Otherwise (or with --format json): one JSON object per line — events (opened, failedToOpen, \
                configured, malformed, linkLost, reconnected, closed), samples (device timestamp, unwrapped deviceTime, hostTime, values, \
                missingBefore), gestures, and a closing summary with samples, gaps and missing samples per sensor and the reconnects.
                Examples:
                  tuneup wearable stream --duration 2s
                  tuneup wearable stream --sensor rotation --period 40ms --gesture headNod --duration 1s --format json
                """)
        @OptionGroup var setup: StreamSetup
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let live = !output.json && WearableCommand.stdoutIsTerminal
            var view = LiveView(device: choice.deviceText)
            try await WearableCommand.stream(choice, setup, emit: { line in
                if live {
                    view.take(line)
                } else if let text = try? Output.jsonLine(line) {
                    Output.line(text)
                }
            }, finish: { summary in
                if live {
                    view.draw(force: true)
                    Output.line(WearableCommand.summaryText(summary))
                }
            })
        }
    }

    struct Record: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Record sensor samples and gestures to PATH.jsonl and PATH.csv, written as the recording goes.",
            discussion: """
                As 'stream', into files written as it goes, at least every second (a recording killed outright \
                keeps all but its last second; a full disk stops it with one line, keeping what was written), until \
                --duration, Ctrl-C or a link lost for good (reconnected as in 'stream'; what arrived is kept; a symbolic link's target is written; a missing directory, or a \
                device, FIFO, socket or directory in the way, is refused before the device is opened, exit 74). PATH.jsonl starts \
                with a metadata line (device information, sensors with their period and scaling, gestures, the tool, the \
                wall-clock time of device time zero: docs/wearable.md §10), then holds every line 'stream --format json' \
                prints, samples and gestures with epochMs (ms since 1970 UTC); PATH.csv one row per sample or gesture \
                (kind, sensor_or_gesture, timestamp, device_time_ms, host_time_s, x, y, z, w, accuracy, bias_x, bias_y, \
                bias_z, missing_before, yaw_deg, pitch_deg, roll_deg, epoch_ms). --split-by-sensor also writes \
                PATH.SENSOR.csv per sensor (epoch (ms), elapsed (s), device time (ms), x (g), y (g), z (g), accuracy, \
                missing before; for gyroscope deg/s; quaternions x, y, z, w and yaw, pitch, roll in deg) and \
                PATH.gestures.csv. 'tuneup wearable plot PATH.jsonl' draws it; 'tuneup sim wearable --replay PATH.jsonl' \
                plays it back as a device. On a terminal the live view shows meanwhile.
                Examples:
                  tuneup wearable record /tmp/session --duration 2s
                  tuneup wearable record /tmp/nods --sensor gameRotation --sensor gyroscope --period 20ms --duration 2s --device sim:wearable:3
                  tuneup wearable record /tmp/walk --split-by-sensor --duration 2s
                """)
        @Argument(help: ArgumentHelp("Where to write: PATH.jsonl and PATH.csv (a trailing .jsonl or .csv is dropped).", valueName: "path"))
        var path: String
        @Flag(help: "Also write one CSV per sensor (PATH.SENSOR.csv) and one for the gestures (PATH.gestures.csv), with unit-bearing headers.")
        var splitBySensor = false
        @OptionGroup var setup: StreamSetup
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        var base: String {
            for suffix in [".jsonl", ".csv"] where path.hasSuffix(suffix) { return String(path.dropLast(suffix.count)) }
            return path
        }

        func validate() throws {
            guard !base.isEmpty, !base.hasSuffix("/") else { throw ValidationError("record needs a file path, got '\(path)'") }
        }

        struct Written: Encodable {
            var jsonl: String, csv: String
            /// With --split-by-sensor: the per-sensor and gesture CSVs.
            var split: [String]?
            var samples: Int, gestures: Int
            var summary: WearableLine
        }

        func run() async throws {
            let live = !output.json && WearableCommand.stdoutIsTerminal
            var view = LiveView(device: choice.deviceText)
            let base = self.base, json = output.json
            // The files are opened before the device is: a missing directory, a device, FIFO, socket or directory in
            // the way is one line and exit 74, not a recording lost. They are written as the recording goes.
            var recorder: WearableRecorder
            do {
                recorder = try await WearableRecorder.open(base: base, split: splitBySensor ? try setup.sensors : nil,
                                                           splitGestures: splitBySensor && setup.gesture != ["none"])
            } catch let error as OutputFileError {
                throw failureExit(error)
            }
            let writer = recorder.writer
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    writer.flush()
                }
            }
            defer { ticker.cancel() }
            do {
                try await WearableCommand.stream(choice, setup, metadata: true, emit: { line in
                    if live { view.take(line) }
                    if !live, line.event == "configured" {
                        Console.err("recording to \(base).jsonl and \(base).csv" + (setup.duration.map { " for \($0)" } ?? "") + "; Ctrl-C stops\n")
                    }
                    recorder.take(line)
                }, shouldStop: { writer.failure != nil }, finish: { summary in
                    if live { view.draw(force: true) }
                    if let failure = await recorder.finish() {
                        throw failureExit(OutputFileError(
                            failure.code, "\(failure.message); the recording stopped there, what was written is kept"))
                    }
                    let paths = recorder.paths
                    let written = Written(jsonl: paths[0], csv: paths[1], split: paths.count > 2 ? Array(paths.dropFirst(2)) : nil,
                                          samples: recorder.samples, gestures: recorder.gestures, summary: summary)
                    try Output.emit(written, json: json) {
                        WearableCommand.summaryText(summary) + "\nwrote \(WearableCommand.counted(written.samples, "sample")) and "
                            + "\(WearableCommand.counted(written.gestures, "gesture")) to \(paths.joined(separator: ", "))"
                    }
                })
            } catch {
                // A lost link: what was recorded until then is written and closed (finish ran). A device that could
                // not be opened or configured: no recording, no files left behind.
                _ = await recorder.finish()
                if recorder.samples == 0 && recorder.gestures == 0 { await writer.remove() }
                throw error
            }
        }
    }
}

/// The live view on a terminal: per sensor its latest value, samples and gaps; the latest gestures; redrawn in place
/// at most 10 times a second.
struct LiveView {
    var device: String
    var state = "opening"
    var periods: [String: Int] = [:]
    var latest: [String: WearableLine] = [:]
    var counts: [String: (samples: Int, gaps: Int, missing: Int)] = [:]
    var gestures: [String] = []
    var gestureCount = 0
    var malformed = 0
    var deviceTime: Int64 = 0
    var origin: Int64?
    /// When each sensor's latest sample came: a sensor silent for 5 periods (at least 1 s) is shown as stalled, not
    /// with its last values as if they were current.
    var lastSeen: [String: ContinuousClock.Instant] = [:]
    /// The block on the terminal: lines cut to its width, redrawn by screen rows (as the station's live view).
    var region = LiveRegion()
    var lastDraw = ContinuousClock.now - .seconds(1)

    /// When the view began (a sensor that never sent a sample is silent since then).
    let started = ContinuousClock.now

    init(device: String) { self.device = device }

    mutating func take(_ line: WearableLine) {
        switch (line.type, line.event) {
        case ("event", "opened"): state = "open"
        case ("event", "configured"):
            periods = line.periods ?? [:]
            for sensor in periods.keys { lastSeen[sensor] = .now }
        case ("event", "malformed"): malformed += 1
        case ("event", "closed"): state = line.error.map { "closed: \($0)" } ?? "closed"
        case ("event", "linkLost"): state = "link lost, reconnecting"
        case ("event", "reconnected"):
            state = String(format: "open (reconnected after %.1f s)", line.gapSeconds ?? 0)
            // The sensors were silent for the gap: not stalled.
            for sensor in periods.keys { lastSeen[sensor] = .now }
        case ("sample", _):
            guard let sensor = line.sensor else { break }
            latest[sensor] = line
            lastSeen[sensor] = .now
            var c = counts[sensor] ?? (0, 0, 0)
            c.samples += 1
            if let m = line.missingBefore, m > 0 { c.gaps += 1; c.missing += m }
            counts[sensor] = c
            if let t = line.deviceTime { deviceTime = max(deviceTime, t); origin = origin ?? t }
        case ("gesture", _):
            gestureCount += 1
            let at = line.deviceTime.map { t in String(format: " @ %.1f s", Double(t - (origin ?? t)) / 1000) } ?? ""
            gestures = Array((gestures + ["\(line.gesture ?? "?")\(at)"]).suffix(3))
        default: break
        }
        draw(force: line.type == "event")
    }

    mutating func draw(force: Bool = false) {
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        func n(_ v: Double?) -> String { v.map { String(format: "%+8.3f", $0) } ?? "" }
        var lines = [String(format: "%@  %@  device time %.1f s", device, state, Double(deviceTime - (origin ?? deviceTime)) / 1000)]
        for sensor in periods.keys.sorted() {
            let l = latest[sensor], c = counts[sensor] ?? (0, 0, 0)
            let unit = (try? WearableCommand.sensor(named: sensor)).map(WearableCommand.unit) ?? ""
            var values = [n(l?.x), n(l?.y), n(l?.z), l?.w == nil ? nil : n(l?.w)].compactMap { $0 }.joined(separator: " ") + " \(unit)"
            if let l, let yaw = l.yaw, let pitch = l.pitch, let roll = l.roll {
                // A quaternion is hard to read: its yaw, pitch and roll instead (the JSON has both).
                values = String(format: "yaw %+6.1f° pitch %+5.1f° roll %+6.1f°", yaw, pitch, roll)
            }
            let silentFor = now - (lastSeen[sensor] ?? started)
            if silentFor > max(.seconds(1), .milliseconds(5 * (periods[sensor] ?? 20))) {
                values = String(format: "stalled: no samples for %.1f s", silentFor.wearableSeconds)
            }
            lines.append("\(sensor.padding(toLength: 14, withPad: " ", startingAt: 0)) \(periods[sensor]!) ms  \(values)   "
                + "\(c.samples) sample\(c.samples == 1 ? "" : "s"), \(c.gaps) gap\(c.gaps == 1 ? "" : "s") (\(c.missing) missing)")
        }
        lines.append("gestures \(gestureCount)\(gestures.isEmpty ? "" : ": " + gestures.joined(separator: ", "))"
            + (malformed > 0 ? "   malformed notifications \(malformed)" : ""))
        Console.out(region.frame(lines, columns: Console.columns()))
    }
}
