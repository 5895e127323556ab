import Foundation
import Glibc
import Wearable

/// What the live view of `wearable stream` and `record` shows on a terminal, as lines: the device and the session's
/// state, per sensor its latest value (yaw, pitch and roll for a quaternion), samples, gaps and missing samples, a
/// sensor silent for 5 periods (at least 1 s) as stalled, and the latest gestures. Pure: it takes the stream's lines
/// and the time they came, and answers the lines for a time; the CLI draws them (`LiveRegion`, cut to the terminal's
/// width) at most 10 times a second.
public struct WearableLiveView: Sendable {
    public let device: String
    public private(set) var state = "opening"
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
    /// When the view began (a sensor that never sent a sample is silent since then).
    let started: ContinuousClock.Instant

    public init(device: String, at now: ContinuousClock.Instant = .now) {
        self.device = device
        self.started = now
    }

    /// One line of the stream, arrived at `now`.
    public mutating func take(_ line: WearableLine, at now: ContinuousClock.Instant) {
        switch (line.type, line.event) {
        case ("event", "opened"): state = "open"
        case ("event", "configured"):
            periods = line.periods ?? [:]
            for sensor in periods.keys { lastSeen[sensor] = now }
        case ("event", "malformed"): malformed += 1
        case ("event", "closed"): state = line.error.map { "closed: \($0)" } ?? "closed"
        case ("event", "linkLost"): state = "link lost, reconnecting"
        case ("event", "reconnected"):
            state = String(format: "open (reconnected after %.1f s)", line.gapSeconds ?? 0)
            // The sensors were silent for the gap: not stalled.
            for sensor in periods.keys { lastSeen[sensor] = now }
        case ("sample", _):
            guard let sensor = line.sensor else { break }
            latest[sensor] = line
            lastSeen[sensor] = now
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
    }

    /// The view's lines at `now` for a terminal `rows` high (nil: unknown): at most `rows - 1` (the block is redrawn
    /// from its first row, and the cursor rests on the row below it: a taller block scrolls, leaving a copy in the
    /// scrollback at every redraw), the last kept one saying how many are left out.
    public func lines(at now: ContinuousClock.Instant, rows: Int?) -> [String] {
        let all = lines(at: now)
        guard let rows, rows > 0, all.count > max(1, rows - 1) else { return all }
        let room = max(1, rows - 1)
        if room == 1 { return [all[0]] }
        return Array(all.prefix(room - 1)) + ["… \(all.count - room + 1) more lines (a taller terminal shows them)"]
    }

    /// The height of the terminal on `fd` (TIOCGWINSZ: it changes as the window is resized, so ask at each redraw),
    /// else $LINES, else nil.
    public static func terminalRows(_ fd: Int32 = STDOUT_FILENO) -> Int? {
        var size = winsize()
        if withUnsafeMutablePointer(to: &size, { ioctl(fd, UInt(TIOCGWINSZ), $0) }) == 0, size.ws_row > 0 { return Int(size.ws_row) }
        return getenv("LINES").flatMap { Int(String(cString: $0)) }
    }

    /// The view's lines at `now`: the device line, one per configured sensor (by name), the gestures.
    public func lines(at now: ContinuousClock.Instant) -> [String] {
        func n(_ v: Double?) -> String { v.map { String(format: "%+8.3f", $0) } ?? "" }
        var lines = [String(format: "%@  %@  device time %.1f s", device, state, Double(deviceTime - (origin ?? deviceTime)) / 1000)]
        for sensor in periods.keys.sorted() {
            let l = latest[sensor], c = counts[sensor] ?? (0, 0, 0), period = periods[sensor] ?? 20
            let unit = WearableText.sensor(named: sensor).map(WearableText.unit) ?? ""
            var values = [n(l?.x), n(l?.y), n(l?.z), l?.w == nil ? nil : n(l?.w)].compactMap { $0 }.joined(separator: " ") + " \(unit)"
            if let l, let yaw = l.yaw, let pitch = l.pitch, let roll = l.roll {
                // A quaternion is hard to read: its yaw, pitch and roll instead (the JSON has both).
                values = String(format: "yaw %+6.1f° pitch %+5.1f° roll %+6.1f°", yaw, pitch, roll)
            }
            let silentFor = now - (lastSeen[sensor] ?? started)
            if silentFor > max(.seconds(1), .milliseconds(5 * period)) {
                values = String(format: "stalled: no samples for %.1f s", silentFor.wearableSeconds)
            }
            lines.append("\(sensor.padding(toLength: 14, withPad: " ", startingAt: 0)) \(period) ms  \(values)   "
                + "\(WearableText.counted(c.samples, "sample")), \(WearableText.counted(c.gaps, "gap")) (\(c.missing) missing)")
        }
        lines.append("gestures \(gestureCount)\(gestures.isEmpty ? "" : ": " + gestures.joined(separator: ", "))"
            + (malformed > 0 ? "   malformed notifications \(malformed)" : ""))
        return lines
    }
}
