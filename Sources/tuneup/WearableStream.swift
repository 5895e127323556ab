import ArgumentParser
import Foundation
import Glibc
import Progress
import Support
import Transport
import Wearable
import WearableSession

/// One line of a stream or a recording (JSON Lines): an event, a sample, a gesture or the closing summary. Fields a
/// line does not have are left out.
struct WearableLine: Codable, Sendable {
    /// "event", "sample", "gesture" or "summary".
    var type: String
    /// For events: "opened", "failedToOpen", "configured", "malformed", "closed".
    var event: String?
    var device: String?
    /// For failedToOpen, closed (absent: closed as asked) and malformed: the error's one line and code.
    var error: String?
    var code: String?
    var sensor: String?
    var gesture: String?
    /// The device's u16 millisecond timestamp as sent.
    var timestamp: Int?
    /// The timestamp unwrapped (ms on a monotonic line).
    var deviceTime: Int64?
    /// Arrival on the host, seconds since the command started its session.
    var hostTime: Double?
    var x: Double?, y: Double?, z: Double?, w: Double?
    var accuracy: Int?
    var estimatedAccuracy: Double?
    var biasX: Double?, biasY: Double?, biasZ: Double?
    /// Rotation and game rotation: the quaternion's yaw, pitch and roll in degrees (docs/wearable.md §4.1).
    var yaw: Double?, pitch: Double?, roll: Double?
    /// Samples of this sensor missing just before this one (a detected gap).
    var missingBefore: Int?
    /// For configured: each enabled sensor's period in ms, and the enabled gestures.
    var periods: [String: Int]?
    var gestures: [String]?
    /// For the summary.
    var durationSeconds: Double?
    var counts: [String: Counts]?
    var gestureCount: Int?
    var malformedNotifications: Int?
    var malformedByCode: [String: Int]?

    struct Counts: Codable, Sendable {
        var samples: Int, gaps: Int, missingSamples: Int, outOfOrder: Int
    }

    init(type: String, event: String? = nil) {
        self.type = type
        self.event = event
    }

    init(_ r: SensorReading) {
        type = "sample"
        sensor = r.sensor.description
        timestamp = Int(r.timestamp)
        deviceTime = r.deviceTime
        hostTime = (r.hostTime.wearableSeconds * 1e6).rounded() / 1e6
        missingBefore = r.missingBefore
        // Nine decimals: far finer than a 16-bit sample's step, and no float noise (0.045916042000000004) in JSON
        // and CSV.
        let t = Self.tidy
        switch r.value {
        case let .vector(v, a):
            (x, y, z, accuracy) = (t(v.x), t(v.y), t(v.z), Int(a.rawValue))
        case let .quaternion(q, a):
            (x, y, z, w, estimatedAccuracy) = (t(q.x), t(q.y), t(q.z), t(q.w), a)
            if let o = r.orientation { (yaw, pitch, roll) = (Self.degrees(o.yaw), Self.degrees(o.pitch), Self.degrees(o.roll)) }
        case let .uncalibratedVector(v, b):
            (x, y, z, biasX, biasY, biasZ) = (t(v.x), t(v.y), t(v.z), t(b.x), t(b.y), t(b.z))
        }
    }

    /// `value` to nine decimals (its shortest decimal form then has at most nine).
    static func tidy(_ value: Double) -> Double {
        guard value.isFinite, abs(value) < 1e6 else { return value }
        return (value * 1e9).rounded() / 1e9
    }

    /// Degrees to four decimals (the 16-bit quaternion's step is about 0.007°).
    static func degrees(_ value: Double) -> Double { (value * 1e4).rounded() / 1e4 }

    init(_ g: GestureReading) {
        type = "gesture"
        gesture = g.gesture.description
        timestamp = Int(g.timestamp)
        deviceTime = g.deviceTime
        hostTime = (g.hostTime.wearableSeconds * 1e6).rounded() / 1e6
    }

    static func closed(_ error: WearableSessionError?) -> WearableLine {
        var line = WearableLine(type: "event", event: "closed")
        line.error = error?.message
        line.code = error?.code.rawValue
        return line
    }

    static func summary(_ s: WearableStatistics, seconds: Double) -> WearableLine {
        var line = WearableLine(type: "summary")
        line.durationSeconds = seconds
        line.counts = Dictionary(uniqueKeysWithValues: s.sensors.map {
            ($0.key.description, Counts(samples: $0.value.samples, gaps: $0.value.gaps, missingSamples: $0.value.missingSamples,
                                        outOfOrder: $0.value.outOfOrder))
        })
        line.gestureCount = s.gestures
        line.malformedNotifications = s.malformedNotifications
        line.malformedByCode = s.malformedByCode
        return line
    }

    /// The CSV header and rows of samples and gestures (`record`).
    static let csvHeader = CSV.row([
        "kind", "sensor_or_gesture", "timestamp", "device_time_ms", "host_time_s", "x", "y", "z", "w", "accuracy", "bias_x", "bias_y",
        "bias_z", "missing_before", "yaw_deg", "pitch_deg", "roll_deg",
    ])

    var csvRow: String? {
        func f(_ v: Double?) -> String { v.map { String($0) } ?? "" }
        func i(_ v: Int?) -> String { v.map { String($0) } ?? "" }
        switch type {
        case "sample":
            let acc = accuracy.map { String($0) } ?? f(estimatedAccuracy)
            return CSV.row(["sample", sensor ?? "", i(timestamp), deviceTime.map { String($0) } ?? "", f(hostTime), f(x), f(y), f(z), f(w), acc,
                            f(biasX), f(biasY), f(biasZ), i(missingBefore), f(yaw), f(pitch), f(roll)])
        case "gesture":
            return CSV.row(["gesture", gesture ?? "", i(timestamp), deviceTime.map { String($0) } ?? "", f(hostTime), "", "", "", "", "", "", "", "", "", "", "", ""])
        default:
            return nil
        }
    }
}

extension Duration {
    var wearableSeconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

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

        func validate() throws {
            _ = try sensors
            _ = try WearableCommand.period(period)
            if gesture != ["none"] { for g in gesture { _ = try WearableCommand.gesture(named: g) } }
            _ = try stopAfter()
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
    static func stream(_ choice: DeviceChoice, _ setup: StreamSetup, emit: (WearableLine) -> Void,
                       shouldStop: () -> Bool = { false }, finish: (WearableLine) async throws -> Void) async throws {
        enum Item: Sendable {
            case event(WearableEvent), reading(SensorReading), gesture(GestureReading), stop
            /// A forwarding task's stream ended (the session closed it); `drained`: the wait for them is over.
            case forwarderEnded, drained
        }
        let sensors = try setup.sensors
        let period = try WearableCommand.period(setup.period)
        let stopAfter = try setup.stopAfter()
        let session = try choice.session()
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
        return lines.joined(separator: "\n")
    }

    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    struct Stream: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            abstract: "Stream sensor samples and gestures: a live view on a terminal, JSON Lines otherwise.",
            discussion: """
                Enables the sensors at the period and the gestures, then shows every sample and gesture until \
                --duration or Ctrl-C. On a terminal: a compact live view (latest values, counts, gaps, gestures). \
                Otherwise (or with --format json): one JSON object per line — events (opened, failedToOpen, \
                configured, malformed, closed), samples (device timestamp, unwrapped deviceTime, hostTime, values, \
                missingBefore), gestures, and a closing summary with samples, gaps and missing samples per sensor.
                Examples:
                  tuneup wearable stream --duration 2s
                  tuneup wearable stream --sensor rotation --period 40ms --gesture headNod --duration 1s --format json
                """)
        @OptionGroup var setup: StreamSetup
        @OptionGroup var choice: DeviceChoice
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let live = !output.json && WearableCommand.stdoutIsTerminal
            var view = LiveView(device: choice.device)
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
            abstract: "Record sensor samples and gestures to PATH.jsonl and PATH.csv, written as the recording goes.",
            discussion: """
                As 'stream', into two files written as it goes, at least every second (a recording killed outright \
                keeps all but its last second; a full disk stops it with one line, keeping what was written), until \
                --duration, Ctrl-C or a lost link (what arrived is kept; a symbolic link's target is written; a missing directory, or a \
                device, FIFO, socket or directory in the way, is refused before the device is opened, exit 74): PATH.jsonl holds every line 'stream --format json' prints, \
                PATH.csv one row per sample or gesture (kind, sensor_or_gesture, timestamp, device_time_ms, \
                host_time_s, x, y, z, w, accuracy, bias_x, bias_y, bias_z, missing_before). 'tuneup wearable plot \
                PATH.jsonl' draws it. On a terminal the live view shows meanwhile.
                Examples:
                  tuneup wearable record /tmp/session --duration 2s
                  tuneup wearable record /tmp/nods --sensor gameRotation --sensor gyroscope --period 20ms --duration 2s --device sim:wearable:3
                """)
        @Argument(help: ArgumentHelp("Where to write: PATH.jsonl and PATH.csv (a trailing .jsonl or .csv is dropped).", valueName: "path"))
        var path: String
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
            var samples: Int, gestures: Int
            var summary: WearableLine
        }

        func run() async throws {
            let live = !output.json && WearableCommand.stdoutIsTerminal
            var view = LiveView(device: choice.device)
            var samples = 0, gestures = 0
            let base = self.base, json = output.json
            // The files are opened before the device is: a missing directory, a device, FIFO, socket or directory in
            // the way is one line and exit 74, not a recording lost. They are written as the recording goes.
            let writer: RecordingWriter
            do {
                writer = try await RecordingWriter.open(base: base)
            } catch {
                throw failureExit(error)
            }
            writer.append(jsonl: nil, csv: WearableLine.csvHeader)
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    writer.flush()
                }
            }
            defer { ticker.cancel() }
            do {
                try await WearableCommand.stream(choice, setup, emit: { line in
                    if live { view.take(line) }
                    if !live, line.event == "configured" {
                        Console.err("recording to \(base).jsonl and \(base).csv" + (setup.duration.map { " for \($0)" } ?? "") + "; Ctrl-C stops\n")
                    }
                    writer.append(jsonl: try? Output.jsonLine(line), csv: line.csvRow)
                    if line.type == "sample" { samples += 1 } else if line.type == "gesture" { gestures += 1 }
                }, shouldStop: { writer.failure != nil }, finish: { summary in
                    if live { view.draw(force: true) }
                    if let failure = await writer.finish() {
                        throw failureExit(OutputFileError(
                            failure.code, "\(failure.message); the recording stopped there, what was written is kept"))
                    }
                    let written = Written(jsonl: writer.jsonlPath, csv: writer.csvPath, samples: samples, gestures: gestures, summary: summary)
                    try Output.emit(written, json: json) {
                        WearableCommand.summaryText(summary) + "\nwrote \(WearableCommand.counted(samples, "sample")) and "
                            + "\(WearableCommand.counted(gestures, "gesture")) to \(written.jsonl) and \(written.csv)"
                    }
                })
            } catch {
                // A lost link: what was recorded until then is written and closed (finish ran). A device that could
                // not be opened or configured: no recording, no files left behind.
                _ = await writer.finish()
                if samples == 0 && gestures == 0 { await writer.remove() }
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
