import ArgumentParser
import Foundation
import SpeakerSession
import Terminal
import TuneupKit

extension SpeakerCommand {
    /// `tuneup speaker events`: every speaker's events as they happen, through `SpeakerEventFeed`.
    struct Events: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events",
            abstract: "Print the speakers' events as they happen: state updates, errors, volume, playback.",
            discussion: """
                Follows every speaker named with --speaker; without it, the speakers found by discovery, queried again \
                every --interval seconds: speakers that appear are followed from then on, and those that stop \
                answering are reported removed. Runs until Ctrl-C, --count events or --duration seconds. Events \
                (--format json: one JSON object per line, its kind in "event"):
                  device-state-updated   deviceId, reason: appeared, disappeared, session-changed, name-changed,
                                         group-changed, balance-changed, role-changed, channel-type-changed,
                                         wifi-signal-changed, playing-changed, master-changed
                  error                  deviceId, code (playback-interrupted, audio-underrun, ...), message
                  volume-changed         deviceId, volume, muted; then average-volume with averageVolume
                  playback-state         streamId, state (playing, paused, stopped, ...)
                  playback-time          streamId, seconds (every second while playing)
                  playback-ended         streamId
                  speaker-added          deviceId, name, address
                  speaker-removed        deviceId, address, reason
                docs/speaker-protocol.md defines the reason and error codes.
                  $ tuneup speaker events --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2 --format json
                  $ tuneup speaker events --count 5          (discovery; stops after five events)
                """)

        @Option(help: ArgumentHelp("Stop after this many events.", valueName: "n"))
        var count: Int?
        @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
        var duration: Double?
        @Option(help: ArgumentHelp("With discovery: seconds between discovery rounds.", valueName: "seconds"))
        var interval: Double = 2
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
            if let duration { try checkSeconds(duration, "--duration") }
            try checkSeconds(interval, "--interval")
        }

        struct Line: Encodable {
            var time: String
            var event: String
            var deviceId: UInt64?
            var reason: String?
            var code: String?
            var message: String?
            var volume: Int?
            var muted: Bool?
            var averageVolume: Double?
            var streamId: UInt32?
            var state: String?
            var seconds: Double?
            var name: String?
            var address: String?
        }

        static func line(_ event: SpeakerEventFeed.Event, at date: Date) -> Line {
            let time = ISO8601DateFormatter.string(from: date, timeZone: .current, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
            var l = Line(time: time, event: "")
            switch event {
            case let .speaker(deviceId, e):
                l.deviceId = deviceId
                switch e {
                case let .deviceStateUpdated(_, reason): l.event = "device-state-updated"; l.reason = reason.name
                case let .error(_, code, message): l.event = "error"; l.code = code.name; l.message = message
                case let .volumeChanged(_, volume, muted): l.event = "volume-changed"; l.volume = volume; l.muted = muted
                case let .playbackEnded(stream): l.event = "playback-ended"; l.streamId = stream
                case let .playbackStateChanged(stream, state):
                    l.event = "playback-state"; l.streamId = stream; l.state = SpeakerCommand.stateName(state)
                case let .playbackTime(stream, ms): l.event = "playback-time"; l.streamId = stream; l.seconds = Double(ms) / 1000
                }
            case let .averageVolume(average): l.event = "average-volume"; l.averageVolume = average
            case let .added(deviceId, name, address): l.event = "speaker-added"; l.deviceId = deviceId; l.name = name; l.address = address
            case let .removed(deviceId, address, reason):
                l.event = "speaker-removed"; l.deviceId = deviceId; l.address = address; l.reason = reason
            }
            return l
        }

        static func text(_ l: Line) -> String {
            let clock = l.time.split(separator: "T").last.map { String($0.prefix(12)) } ?? l.time
            let who = l.deviceId.map { "  \($0)" } ?? ""
            let what: String = switch l.event {
            case "device-state-updated": "state updated: \(l.reason ?? "")"
            case "error": "error \(l.code ?? ""): \(l.message ?? "")"
            case "volume-changed": "volume \(l.volume ?? 0)\(l.muted == true ? " (muted)" : "")"
            case "average-volume": "average volume \((l.averageVolume ?? 0).formatted(.number.precision(.fractionLength(0...1))))"
            case "playback-state": "stream \(l.streamId ?? 0) \(l.state ?? "")"
            case "playback-time": "stream \(l.streamId ?? 0) at \((l.seconds ?? 0).formatted(.number.precision(.fractionLength(1)))) s"
            case "playback-ended": "stream \(l.streamId ?? 0) ended"
            case "speaker-added": "added: \(l.name ?? "") at \(l.address ?? "")"
            case "speaker-removed": "removed (\(l.address ?? "")): \(l.reason ?? "")"
            default: l.event
            }
            return "\(clock)\(who)  \(what)"
        }

        /// Every `interval`, a discovery round (`DiscoveryClient.watch`, asked for the speakers the feed follows):
        /// speakers it finds that the feed does not follow (new ones, and those whose connection ended and that answer
        /// again) are connected and followed; followed ones that miss two rounds in a row are removed.
        static func follow(_ discovery: DiscoveryClient, into feed: SpeakerEventFeed, every interval: Duration,
                           connection: ConnectionOptions, options: RequestOptions) async throws {
            for try await change in discovery.watch(interval: interval, missesBeforeRemoval: 2, following: { Set(await feed.deviceIds) }) {
                switch change {
                case let .added(found):
                    // Reported again each round until followed: one that answers discovery but not on its control
                    // port is tried again next round.
                    guard !(await feed.deviceIds.contains(found.deviceId)) else { continue }
                    let address = SpeakerBridge.address(SpeakerEndpoint(host: found.host, port: found.controlPort))
                    if let session = try? await Devices.openSpeaker(address, options: connection, requestOptions: options) {
                        do { try await feed.add(session, announce: true) } catch { await session.close() }
                    }
                case let .removed(gone):
                    await feed.remove(deviceId: gone.deviceId, reason: "it no longer answers discovery")
                }
            }
            try Task.checkCancellation()
        }

        func run() async throws {
            let feed = SpeakerEventFeed()
            let json = output.json
            let limit = count
            let options = reach.requestOptions
            do {
                for address in try reach.addresses() {
                    try await feed.add(try await Devices.openSpeaker(address, options: reach.connection, requestOptions: options), announce: false)
                }
            } catch {
                await feed.finish()
                throw failureExit(error)
            }
            let discovery: DiscoveryClient? = reach.speakers.isEmpty ? DiscoveryClient(
                targets: reach.discoveryTargets.isEmpty ? DiscoveryClient.standardTargets
                    : try reach.targets(),
                window: .milliseconds(Int64(reach.window * 1000))) : nil
            let following = await feed.deviceIds.count
            printError(discovery == nil ? "following \(following) speaker\(following == 1 ? "" : "s"); Ctrl-C to stop"
                                        : "following the speakers discovery finds; Ctrl-C to stop")
            let deadline = duration.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
            let interval = Duration.milliseconds(Int64(self.interval * 1000))
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var seen = 0
                        for await event in feed.events {
                            let l = Events.line(event, at: Date())
                            try Output.emitLine(l, json: json) { Events.text(l) }
                            seen += 1
                            if let limit, seen >= limit { return }
                            if discovery == nil, case .removed = event, await feed.deviceIds.isEmpty {
                                throw CommandFailure(message: "every speaker followed went away", code: Exit.connection)
                            }
                        }
                    }
                    if let discovery {
                        group.addTask { try await Events.follow(discovery, into: feed, every: interval, connection: reach.connection, options: options) }
                    } else if following == 0 {
                        return
                    }
                    if let deadline {
                        group.addTask { try await Task.sleep(until: deadline, clock: .continuous) }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                await feed.finish()
                throw failureExit(error)
            }
            await feed.finish()
        }
    }
}
