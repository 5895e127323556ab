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

        func run() async throws {
            let json = output.json
            do {
                try await reach.reach().followEvents(
                    count: count, until: duration.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) },
                    interval: .milliseconds(Int64(interval * 1000)),
                    started: { following in
                        printError(following.map { "following \($0) speaker\($0 == 1 ? "" : "s"); Ctrl-C to stop" }
                                   ?? "following the speakers discovery finds; Ctrl-C to stop")
                    },
                    emit: { event in
                        let l = SpeakerEventLine(event, at: Date())
                        try Output.emitLine(l, json: json) { l.text }
                    })
            } catch {
                throw failureExit(error)
            }
        }
    }
}
