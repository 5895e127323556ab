import Failure
import Foundation
import Speaker
import Support

// What the speaker commands report, as values with their JSON (the seed's field names) and their text for people:
// `tuneup speaker list`, `info`, `status`, `mute`, `group`, `play` and `events` print these.

extension PlayerState {
    /// The state's name in reports: initialized, playing, preparing, paused, stopped.
    public var name: String {
        switch self {
        case .initialized: "initialized"
        case .playing: "playing"
        case .preparing: "preparing"
        case .paused: "paused"
        case .stopped: "stopped"
        }
    }
}

/// One speaker's DeviceInfo with the seed's field names.
public struct SpeakerInfoReport: Encodable, Sendable {
    public var deviceId: UInt64, deviceName: String, groupId: UInt64, groupName: String, modelName: String, ipAddress: String
    public var port: Int, macAddress: String, volume: Int, active: Bool, wifiSignalStrength: Int, role: Int, version: String
    public var balance: Int, isPlaying: Bool, channelType: Int, isMaster: Bool

    public init(_ i: DeviceInfo) {
        deviceId = i.deviceId; deviceName = i.deviceName.value; groupId = i.groupId; groupName = i.groupName.value
        modelName = i.modelName.value; ipAddress = i.ipAddress.value; port = Int(i.port); macAddress = i.macAddress.description
        volume = Int(i.volume.value); active = i.active; wifiSignalStrength = Int(i.wifiSignalStrength); role = Int(i.role)
        version = i.version.value; balance = Int(i.balance.value); isPlaying = i.isPlaying; channelType = Int(i.channelType)
        isMaster = i.isMaster
    }

    /// Every field, one aligned line each.
    public static func detail(_ i: DeviceInfo) -> String {
        func onOff(_ value: Bool) -> String { value ? "on" : "off" }
        let balance = Int(i.balance.value)
        return TextTable.aligned([
            ("Device id", String(i.deviceId)), ("Name", i.deviceName.value), ("Group", i.groupId == 0 ? "none" : "\(i.groupName.value) (\(i.groupId))"),
            ("Model", i.modelName.value), ("Address", "\(i.ipAddress.value):\(i.port)"), ("MAC", i.macAddress.description),
            ("Volume", String(i.volume.value)), ("Active", onOff(i.active)), ("Wi-Fi", "\(i.wifiSignalStrength) dBm"),
            ("Role", String(i.role)), ("Firmware", i.version.value), ("Balance", balance > 0 ? "+\(balance)" : "\(balance)"),
            ("Playing", i.isPlaying ? "yes" : "no"), ("Channel type", String(i.channelType)), ("Master", i.isMaster ? "yes" : "no"),
        ])
    }
}

/// The speakers of a controller and their average volume (`speaker list`).
public struct SpeakerListReport: Encodable, Sendable {
    public var speakers: [SpeakerInfoReport]
    public var averageVolume: Double
    private let infos: [DeviceInfo]

    enum CodingKeys: String, CodingKey { case speakers, averageVolume }

    public init(_ list: [DeviceInfo], averageVolume: Double) {
        infos = list
        speakers = list.map(SpeakerInfoReport.init)
        self.averageVolume = averageVolume
    }

    /// The controller's speakers now.
    public static func of(_ c: SpeakerController) async -> SpeakerListReport {
        SpeakerListReport(await c.devices, averageVolume: await c.averageVolume)
    }

    /// One line per speaker, then the average volume.
    public var text: String {
        (infos.enumerated().map { Self.line($0.offset, $0.element) }
            + ["average volume \(averageVolume.formatted(.number.precision(.fractionLength(0...1))))"]).joined(separator: "\n")
    }

    /// A speaker's line: position, id, name, model, address, volume, group.
    public static func line(_ index: Int, _ i: DeviceInfo) -> String {
        let group = i.groupId == 0 ? "-" : i.groupName.value
        return "\(index)  \(i.deviceId)  \(i.deviceName.value)  \(i.modelName.value)  \(i.ipAddress.value):\(i.port)  volume \(i.volume.value)  group \(group)"
    }
}

/// A speaker's mute state (`speaker mute`, `unmute`).
public struct SpeakerMuteReport: Encodable, Sendable {
    public var deviceId: UInt64, deviceName: String, volume: Int, muted: Bool
    public var text: String { "\(deviceName): \(muted ? "muted" : "unmuted") (volume \(volume))" }

    /// Mutes or unmutes each of `ids` (each keeps its volume) and reports each one's state after.
    public static func setMute(_ muted: Bool, of ids: [UInt64], on c: SpeakerController) async throws -> [SpeakerMuteReport] {
        var states: [SpeakerMuteReport] = []
        for id in ids {
            try await c.setMute(muted, of: id)
            let status = try await c.session(id: id).status()
            let now = try await c.info(id: id)
            states.append(SpeakerMuteReport(deviceId: now.deviceId, deviceName: now.deviceName.value, volume: Int(now.volume.value), muted: status.muted))
        }
        return states
    }
}

/// A group by name, with its id (its first member's) and members (`speaker group`).
public struct SpeakerGroupReport: Encodable, Sendable {
    public var name: String, groupId: UInt64, members: [UInt64]

    public static func of(_ c: SpeakerController) async -> [SpeakerGroupReport] {
        await c.groups.map { SpeakerGroupReport(name: $0.name, groupId: $0.id, members: $0.members.map(\.deviceId)) }
    }

    public static func text(_ groups: [SpeakerGroupReport]) -> String {
        groups.isEmpty ? "no groups" : groups.map { "\($0.name) (\($0.groupId)): \($0.members.map(String.init).joined(separator: ", "))" }
            .joined(separator: "\n")
    }
}

/// A speaker's player: state, stream, frames rendered and audio losses (`speaker status`).
public struct SpeakerStatusReport: Encodable, Sendable {
    public var deviceId: UInt64, deviceName: String, state: String, streamId: UInt32, renderedFrames: UInt64, lostPackets: UInt32
    public var latePackets: UInt32, muted: Bool

    public var text: String { "\(deviceName): \(state)  stream \(streamId)  frames \(renderedFrames)  lost \(lostPackets)  late \(latePackets)" }

    /// Every speaker's status, in the controller's order.
    public static func of(_ c: SpeakerController) async throws -> [SpeakerStatusReport] {
        var rows: [SpeakerStatusReport] = []
        for info in await c.devices {
            let s = try await c.session(id: info.deviceId).status()
            rows.append(SpeakerStatusReport(deviceId: info.deviceId, deviceName: info.deviceName.value, state: s.state.name,
                                            streamId: s.streamId, renderedFrames: s.renderedFrames, lostPackets: s.lostPackets,
                                            latePackets: s.latePackets, muted: s.muted))
        }
        return rows
    }
}

/// One line of a playback's report (`speaker play`): a state, the time every second, the end, speakers joining, lost
/// or in error, the source's failure.
public struct PlaybackReportLine: Encodable, Sendable, Equatable {
    public var event: String
    public var state: String?
    public var seconds: Int?
    public var deviceId: UInt64?
    public var message: String?
    /// Where a failing source stopped (`source-error`), in seconds of the stream.
    public var at: Double?

    public init(event: String, state: String? = nil, seconds: Int? = nil, deviceId: UInt64? = nil, message: String? = nil, at: Double? = nil) {
        (self.event, self.state, self.seconds, self.deviceId, self.message, self.at) = (event, state, seconds, deviceId, message, at)
    }

    /// The line for people.
    public var text: String {
        switch event {
        case "state": state ?? ""
        case "time": String(format: "%d:%02d", (seconds ?? 0) / 60, (seconds ?? 0) % 60)
        case "ended": "ended"
        default: "\(event) \(deviceId.map(String.init) ?? "")\(message.map { ": " + $0 } ?? "")"
        }
    }
}

/// How a followed playback ended, when not at its end or a stop.
public struct PlaybackSourceFailure: Error, Sendable, Equatable {
    /// Where the source stopped, in seconds of the stream.
    public var seconds: Double
    public var category: FailureCategory
    public var message: String

    /// "the source failed at 12.3 s: why" (seconds rounded down to a tenth).
    public var line: String {
        let t = Int64((max(0, seconds) * 10).rounded(.down))
        return "the source failed at \(t / 10).\(t % 10) s: \(message)"
    }
}

extension SpeakerController {
    /// Follows the playback this controller started (`events`: its `playerEvents()`) until it stops: each event is
    /// `report`ed as a line (the speakers' own `initialized` left out; a failing source's `source-error` line only
    /// when `sourceErrorLines`, else it is the returned failure alone). When the task is cancelled (Ctrl-C) before the
    /// stream stopped, the stream is stopped on every speaker (not left to end with `playback-interrupted` when the
    /// links close) and the state it leaves is reported.
    /// - Returns: the source's failure, if the source failed (what it gave played; the end is not reported then).
    /// - Throws: the playback's interruption (every speaker lost, the stream taken over), or what `report` throws.
    public func followPlayback(_ events: AsyncStream<PlayerEvent>, sourceErrorLines: Bool,
                               report: (PlaybackReportLine) throws -> Void) async throws -> PlaybackSourceFailure? {
        var sourceFailure: PlaybackSourceFailure?
        var stopped = false
        for await e in events {
            let line: PlaybackReportLine
            switch e {
            case let .stateChanged(s): line = PlaybackReportLine(event: "state", state: s.name)
            case let .time(seconds): line = PlaybackReportLine(event: "time", seconds: seconds)
            case .ended:
                if sourceFailure != nil { continue }   // not the source's end: the failure is said instead
                line = PlaybackReportLine(event: "ended")
            case let .speakerJoined(id): line = PlaybackReportLine(event: "speaker-joined", deviceId: id)
            case let .speakerLost(id, reason): line = PlaybackReportLine(event: "speaker-lost", deviceId: id, message: reason)
            case let .speakerError(id, _, message): line = PlaybackReportLine(event: "speaker-error", deviceId: id, message: message)
            case let .sourceFailed(seconds, category, message):
                sourceFailure = PlaybackSourceFailure(seconds: seconds, category: category, message: message)
                guard sourceErrorLines else { continue }
                line = PlaybackReportLine(event: "source-error", message: message, at: (seconds * 10).rounded(.down) / 10)
            }
            if line.event == "state", line.state == "initialized" { continue }
            try report(line)
            if e == .stateChanged(.stopped) { stopped = true; break }
        }
        if !stopped, Task.isCancelled {
            await Task { await self.stopOwnPlayback() }.value
            try report(PlaybackReportLine(event: "state", state: await playerState.name))
        }
        if let interruption = await playbackInterruption { throw interruption }
        return sourceFailure
    }
}

/// One line of `speaker events`: the time, the event's kind and what it carries.
public struct SpeakerEventLine: Encodable, Sendable, Equatable {
    public var time: String
    public var event: String
    public var deviceId: UInt64?
    public var reason: String?
    public var code: String?
    public var message: String?
    public var volume: Int?
    public var muted: Bool?
    public var averageVolume: Double?
    public var streamId: UInt32?
    public var state: String?
    public var seconds: Double?
    public var name: String?
    public var address: String?

    /// The line of `event`, which came at `date` (the time in the local time zone, with milliseconds).
    public init(_ event: SpeakerEventFeed.Event, at date: Date) {
        time = ISO8601DateFormatter.string(from: date, timeZone: .current, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        self.event = ""
        switch event {
        case let .speaker(deviceId, e):
            self.deviceId = deviceId
            switch e {
            case let .deviceStateUpdated(_, reason): self.event = "device-state-updated"; self.reason = reason.name
            case let .error(_, code, message): self.event = "error"; self.code = code.name; self.message = message
            case let .volumeChanged(_, volume, muted): self.event = "volume-changed"; self.volume = volume; self.muted = muted
            case let .playbackEnded(stream): self.event = "playback-ended"; streamId = stream
            case let .playbackStateChanged(stream, state): self.event = "playback-state"; streamId = stream; self.state = state.name
            case let .playbackTime(stream, ms): self.event = "playback-time"; streamId = stream; seconds = Double(ms) / 1000
            }
        case let .averageVolume(average): self.event = "average-volume"; averageVolume = average
        case let .added(deviceId, name, address): self.event = "speaker-added"; self.deviceId = deviceId; self.name = name; self.address = address
        case let .removed(deviceId, address, reason):
            self.event = "speaker-removed"; self.deviceId = deviceId; self.address = address; self.reason = reason
        }
    }

    /// The line for people: the clock time, the speaker, what happened.
    public var text: String {
        let clock = time.split(separator: "T").last.map { String($0.prefix(12)) } ?? time
        let who = deviceId.map { "  \($0)" } ?? ""
        let what: String = switch event {
        case "device-state-updated": "state updated: \(reason ?? "")"
        case "error": "error \(code ?? ""): \(message ?? "")"
        case "volume-changed": "volume \(volume ?? 0)\(muted == true ? " (muted)" : "")"
        case "average-volume": "average volume \((averageVolume ?? 0).formatted(.number.precision(.fractionLength(0...1))))"
        case "playback-state": "stream \(streamId ?? 0) \(state ?? "")"
        case "playback-time": "stream \(streamId ?? 0) at \((seconds ?? 0).formatted(.number.precision(.fractionLength(1)))) s"
        case "playback-ended": "stream \(streamId ?? 0) ended"
        case "speaker-added": "added: \(name ?? "") at \(address ?? "")"
        case "speaker-removed": "removed (\(address ?? "")): \(reason ?? "")"
        default: event
        }
        return "\(clock)\(who)  \(what)"
    }
}

extension SpeakerEventFeed {
    /// Follows the speakers `discovery` finds, a round every `interval` (`DiscoveryClient.watch`, asked for the
    /// speakers this feed follows): one it finds that the feed does not follow (a new one, or one whose connection
    /// ended and that answers again) is opened with `open` and followed; a followed one that misses two rounds in a
    /// row is removed. Runs until cancelled (then throws `CancellationError`) or discovery fails.
    public func follow(_ discovery: DiscoveryClient, every interval: Duration,
                       open: @escaping @Sendable (DiscoveredSpeaker) async throws -> SpeakerSession) async throws {
        for try await change in discovery.watch(interval: interval, missesBeforeRemoval: 2, following: { Set(await self.deviceIds) }) {
            switch change {
            case let .added(found):
                // Reported again each round until followed: one that answers discovery but not on its control port is
                // tried again next round.
                guard !deviceIds.contains(found.deviceId) else { continue }
                if let session = try? await open(found) {
                    do { try await add(session, announce: true) } catch { await session.close() }
                }
            case let .removed(gone):
                await remove(deviceId: gone.deviceId, reason: "it no longer answers discovery")
            }
        }
        try Task.checkCancellation()
    }
}
