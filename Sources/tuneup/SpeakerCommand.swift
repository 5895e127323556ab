import AudioInput
import ArgumentParser
import Foundation
import SpeakerPlayback
import SpeakerSession
import Terminal
import Transport
import TuneupKit

/// `tuneup speaker ...`: HKWirelessHD speakers named with --speaker or found by discovery.
struct SpeakerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speaker",
        abstract: "HKWirelessHD speakers: list, device info, volume, mute, rename, groups, synchronised playback.",
        discussion: """
            Speakers are named with --speaker ADDR (repeatable): speaker:HOST:PORT or HOST:PORT (the control port \
            'sim speaker' prints), tcp:HOST:PORT, or sim:speaker[:SEED] (a simulated speaker in this process); \
            without it, they are found by a discovery query on the local network (broadcast and multicast, port 45454). \
            Commands acting on one speaker pick it with --index N, --id ID or --group NAME --member N.
            Examples, with two speakers of 'tuneup sim speaker --count 2' at 127.0.0.1:P1 and 127.0.0.1:P2:
              $ tuneup speaker list --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2
              $ tuneup speaker volume 30 --speaker 127.0.0.1:P1 --format json
              $ tuneup speaker group Kitchen --index 0 --index 1 --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2
              $ tuneup speaker list              (discovery: speakers answering on the local network)
              $ tuneup speaker play song.wav --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2
              $ tuneup speaker pause             (from another shell: the playing 'speaker play' follows)
            """,
        subcommands: [List.self, Info.self, Volume.self, Mute.self, Unmute.self, Rename.self, Group.self,
                      Play.self, Pause.self, Resume.self, Stop.self, Status.self, Events.self, Hub.self, Receive.self],
        defaultSubcommand: List.self)

    /// How speakers are reached.
    struct Reach: ParsableArguments {
        @Option(name: [.customLong("speaker"), .customShort("d"), .customLong("device")], help: ArgumentHelp(
            "A speaker's address (repeatable): " + Devices.speakerForms.joined(separator: ", ") + "; HOST:PORT alone is speaker:HOST:PORT. None: discovery.",
            valueName: "addr"))
        var speakers: [String] = []
        @OptionGroup var capture: CaptureOption

        @Option(name: .customLong("discovery-target"), help: ArgumentHelp(
            "Send discovery queries to HOST:PORT instead of broadcast and multicast on port 45454 (repeatable).", valueName: "host:port"))
        var discoveryTargets: [String] = []

        @Option(help: ArgumentHelp("Seconds to collect discovery answers.", valueName: "seconds"))
        var window: Double = 1

        @Option(help: ArgumentHelp("Seconds to wait for each reply.", valueName: "seconds"))
        var timeout: Double = 2

        func validate() throws {
            try checkSeconds(window, "--window")
            try checkSeconds(timeout, "--timeout")
            _ = try reach()
        }

        /// The speakers named (parsed by the registry) or to discover, and how to talk to them; a bad address is one
        /// line (64).
        func reach() throws -> SpeakerReach {
            do {
                return try SpeakerReach(speakers: speakers, discoveryTargets: discoveryTargets, window: window,
                                        connection: ConnectionOptions(capture: capture.settings(.speaker)),
                                        requests: RequestOptions(timeout: .milliseconds(Int64(timeout * 1000)), retransmissions: 1))
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    /// Which one speaker.
    struct Selector: ParsableArguments {
        @Option(help: ArgumentHelp("The speaker at this position of the list (0-based).", valueName: "n"))
        var index: Int?
        @Option(help: ArgumentHelp("The speaker with this device id.", valueName: "id"))
        var id: UInt64?
        @Option(help: ArgumentHelp("The speaker in this group (with --member).", valueName: "name"))
        var group: String?
        @Option(help: ArgumentHelp("With --group: the member's position in the group (0-based).", valueName: "n"))
        var member: Int?

        var isEmpty: Bool { index == nil && id == nil && group == nil && member == nil }

        func validate() throws {
            if [index != nil, id != nil, group != nil].filter({ $0 }).count > 1 {
                throw ValidationError("choose one of --index, --id and --group")
            }
            if (group == nil) != (member == nil) { throw ValidationError("--group and --member go together") }
        }

        func resolve(_ c: SpeakerController) async throws -> DeviceInfo {
            if let index { return try await c.info(index: index) }
            if let id { return try await c.info(id: id) }
            if let group, let member { return try await c.info(group: group, member: member) }
            throw ValidationError("choose a speaker with --index, --id or --group NAME --member N")
        }
    }

    /// Runs `body` on the controller and closes it; failures become one line and the exit code.
    static func with<T>(_ reach: Reach, _ body: (SpeakerController) async throws -> T) async throws -> T {
        do { return try await reach.reach().with(body) } catch { throw failureExit(error) }
    }

    static func emitList(_ c: SpeakerController, json: Bool) async throws {
        let list = await SpeakerListReport.of(c)
        try Output.emit(list, json: json) { list.text }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the speakers with their id, name, model, address, volume and group.")
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await SpeakerCommand.with(reach) { try await SpeakerCommand.emitList($0, json: output.json) }
        }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "info", abstract: "Show every DeviceInfo field of one speaker (default: the first).")
        @OptionGroup var reach: Reach
        @OptionGroup var selector: Selector
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await SpeakerCommand.with(reach) { c in
                let info = selector.isEmpty ? try await c.info(index: 0) : try await selector.resolve(c)
                try Output.emit(SpeakerInfoReport(info), json: output.json) { SpeakerInfoReport.detail(info) }
            }
        }
    }

    struct Volume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "volume",
            abstract: "Show or set the volume (0-50) of one speaker, or of all (the average is reported).")
        // Every word no option took, so that a negative level (`volume -1`) reaches the range check instead of
        // being taken for an option; `validate` lets one integer through.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The new volume, 0...50; none: show.", valueName: "level"))
        var words: [String] = []
        @OptionGroup var reach: Reach
        @OptionGroup var selector: Selector
        @OptionGroup var output: OutputOptions

        var level: Int? { words.first.flatMap { Int($0) } }

        func validate() throws {
            guard let word = words.first else { return }
            guard words.count == 1 else { throw ValidationError("give one volume level, got '\(words.joined(separator: " "))'") }
            guard let level = Int(word) else {
                throw ValidationError(word.hasPrefix("-") && Double(word) == nil ? "Unknown option '\(word)'" : "the volume is a whole number 0...50, got '\(word)'")
            }
            if !(0...50).contains(level) { throw ValidationError("volume \(level) is outside 0...50") }
        }

        func run() async throws {
            try await SpeakerCommand.with(reach) { c in
                if selector.isEmpty {
                    if let level { try await c.setVolumeAll(level) }
                    try await SpeakerCommand.emitList(c, json: output.json)
                } else {
                    let info = try await selector.resolve(c)
                    if let level { try await c.setVolume(level, of: info.deviceId) }
                    let now = try await c.info(id: info.deviceId)
                    try Output.emit(SpeakerInfoReport(now), json: output.json) { "\(now.deviceName.value): volume \(now.volume.value)" }
                }
            }
        }
    }

    static func setMute(_ muted: Bool, _ reach: Reach, _ selector: Selector, _ output: OutputOptions) async throws {
        try await with(reach) { c in
            let targets = selector.isEmpty ? await c.devices : [try await selector.resolve(c)]
            let states = try await SpeakerMuteReport.setMute(muted, of: targets.map(\.deviceId), on: c)
            try Output.emit(states, json: output.json) { states.map(\.text).joined(separator: "\n") }
        }
    }

    struct Mute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "mute", abstract: "Mute one speaker, or all (each keeps its volume for unmute).")
        @OptionGroup var reach: Reach
        @OptionGroup var selector: Selector
        @OptionGroup var output: OutputOptions
        func run() async throws { try await SpeakerCommand.setMute(true, reach, selector, output) }
    }

    struct Unmute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unmute", abstract: "Unmute one speaker, or all (the volume comes back).")
        @OptionGroup var reach: Reach
        @OptionGroup var selector: Selector
        @OptionGroup var output: OutputOptions
        func run() async throws { try await SpeakerCommand.setMute(false, reach, selector, output) }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename one speaker (renaming one that plays interrupts playback).")
        @Argument(help: ArgumentHelp("The new name (1-255 bytes of UTF-8).", valueName: "name"))
        var name: String
        @OptionGroup var reach: Reach
        @OptionGroup var selector: Selector
        @OptionGroup var output: OutputOptions

        func validate() throws {
            do { _ = try WireText.speakerName(name) } catch { throw ValidationError(error.message) }
            if selector.isEmpty { throw ValidationError("choose the speaker with --index, --id or --group NAME --member N") }
        }

        func run() async throws {
            try await SpeakerCommand.with(reach) { c in
                let info = try await selector.resolve(c)
                try await c.rename(info.deviceId, to: name)
                let now = try await c.info(id: info.deviceId)
                try Output.emit(SpeakerInfoReport(now), json: output.json) { "\(now.deviceId): renamed \(now.deviceName.value)" }
            }
        }
    }

    struct Group: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "group",
            abstract: "List groups, put speakers in a group by name, or take one out (--leave).",
            discussion: """
                The group's id is the id of its first member. With --speaker HOST:PORT ... or discovery:
                  $ tuneup speaker group                              list the groups
                  $ tuneup speaker group Kitchen --index 0 --index 1  speakers 0 and 1 join 'Kitchen'
                  $ tuneup speaker group --leave --index 1            speaker 1 leaves its group (name 'harman')
                """)
        @Argument(help: ArgumentHelp("The group to join.", valueName: "name"))
        var name: String?
        @Option(help: ArgumentHelp("A speaker to act on, by list position (repeatable).", valueName: "n"))
        var index: [Int] = []
        @Option(help: ArgumentHelp("A speaker to act on, by device id (repeatable).", valueName: "id"))
        var id: [UInt64] = []
        @Flag(help: "Take the speakers out of their group.")
        var leave = false
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if leave && name != nil { throw ValidationError("--leave takes no group name") }
            if (leave || name != nil) && index.isEmpty && id.isEmpty { throw ValidationError("choose speakers with --index or --id") }
            if !leave && name == nil && !(index.isEmpty && id.isEmpty) { throw ValidationError("give the group's name, or --leave") }
            if let name {
                do { _ = try GroupAssignment.name(name) } catch { throw ValidationError(error.message + (name == "harman" ? " (--leave)" : "")) }
            }
        }

        func run() async throws {
            try await SpeakerCommand.with(reach) { c in
                let groups = leave || name != nil ? try await c.regroup(indices: index, ids: id, join: name) : await SpeakerGroupReport.of(c)
                try Output.emit(groups, json: output.json) { SpeakerGroupReport.text(groups) }
            }
        }
    }
}

// MARK: Playback

extension SpeakerCommand {
    /// How long an http(s) source may send nothing before `play` fails with it: less than the speakers wait for audio
    /// (3 s) before they give up on a stream, so that a stalled server is named, not the speakers' underrun.
    static let sourceStallTimeout: Duration = .seconds(2)

    struct Play: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "play",
            abstract: "Play an audio file or web stream on every speaker in sync, until its end, a stop, or Ctrl-C.",
            discussion: """
                Every speaker named (or discovered) joins the playback session; their clocks are synchronised and the \
                audio goes to each over UDP with presentation times, --buffer-ms ahead. It prints the state, the time \
                every second and speakers joining or lost (--format json: one JSON object per line). Other commands \
                (pause, resume, stop, volume) act on the playback from anywhere; this one follows. Files in WAV, AIFF, \
                FLAC, Ogg Vorbis, Opus or MP3 and http(s) streams (WAV, MP3, ...) are decoded (libsndfile) at their \
                own rate; a source that cannot be read is refused with one line before any speaker plays. A source \
                that fails while it plays (damaged data, a cut transfer, a server silent for 2 s) plays what it gave, \
                then ends the command with one line saying where it stopped, and exit 65 (data) or 69 (the server). \
                It ends when every speaker played the end; every speaker lost (none back within 3 s), or the stream \
                taken over by another controller (the hub, another play), stops it with one line and exit 69. \
                - reads standard input (a pipe: it cannot seek, so --from is refused): any of those formats, decoded to \
                44.1 kHz stereo 16-bit, or headerless PCM with --raw FORMAT:RATE:CHANNELS (s16le, s24le, s32le, f32le) \
                played at its own rate. Its end ends the play (exit 0); a read error exits 74, nothing for 2 s 69.
                  $ tuneup speaker play song.wav --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2
                  $ tuneup speaker play song.flac --from 30 --buffer-ms 300
                  $ tuneup speaker play http://radio.example/stream.wav
                  $ ffmpeg -i song.mp3 -f s16le -ar 48000 -ac 2 - | tuneup speaker play - --raw s16le:48000:2
                --encoding flac sends lossless FLAC frames instead of PCM (about half the bytes for music); every \
                speaker must speak protocol version 3, else the play is refused with one line (exit 65).
                  $ tuneup speaker play song.wav --encoding flac
                """)
        @Argument(help: ArgumentHelp("An audio file, an http(s) URL, or - (standard input).", valueName: "file-or-url"))
        var file: String
        @Option(help: ArgumentHelp("Standard input is headerless PCM: FORMAT:RATE:CHANNELS, FORMAT s16le, s24le, s32le or f32le.",
                                   valueName: "format"))
        var raw: String?
        @Option(parsing: .unconditional, help: ArgumentHelp("Start this many seconds into the file.", valueName: "seconds"))
        var from: Double = 0
        @Option(help: ArgumentHelp("How far ahead audio is sent (20...5000 ms): latency against jitter.", valueName: "ms"))
        var bufferMs: Int = 200
        @Option(help: ArgumentHelp("How the audio travels: pcm, or flac (lossless, about half the bytes; speakers of protocol version 3).",
                                   valueName: "encoding"))
        var encoding: AudioEncoding = .pcm
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard from.isFinite, from >= 0 else { throw ValidationError("--from must be 0 or more seconds, got \(from.formatted())") }
            guard (20...5000).contains(bufferMs) else { throw ValidationError("--buffer-ms must be 20...5000") }
            if let raw {
                guard file == "-" else { throw ValidationError("--raw reads standard input: give - as the source") }
                do { _ = try RawPCMFormat(raw) } catch { throw ValidationError(error.message) }
            }
            if file == "-", from > 0 { throw ValidationError("--from: standard input cannot seek (it is played as it comes)") }
        }

        func run() async throws {
            let source: AudioInputSource
            do {
                let format = try raw.map { text throws(AudioInputError) in try RawPCMFormat(text) }
                source = try await AudioInputSource.open(try AudioSourceAddress(file),
                                                         options: AudioInputOptions(stallTimeout: SpeakerCommand.sourceStallTimeout, raw: format))
            } catch {
                throw failureExit(error)
            }
            try await SpeakerCommand.with(reach) { c in
                try await c.setPlayerOptions(PlayerOptions(buffer: .milliseconds(bufferMs), encoding: encoding))
                try await c.addAllToSession()
                let events = try await c.playerEvents()
                try await c.play(source, title: source.source.title.isEmpty ? source.address.lastComponent : source.source.title, from: from)
                // A source that fails is the command's failure (not a speaker's): what it gave plays, then the command
                // ends with one line saying where the source stopped, and the failure's exit code. Ctrl-C or SIGTERM
                // (exit 130/143) stops the stream on every speaker, and the state it leaves is said.
                let json = output.json
                if let failure = try await c.followPlayback(events, sourceErrorLines: json, report: { line in
                    try Output.emitLine(line, json: json) { line.text }
                }) {
                    throw CommandFailure(message: failure.line, code: Exit.code(for: failure.category))
                }
            }
        }
    }

    struct Control: Encodable {
        var action: String
        var state: String
    }

    static func control(_ reach: Reach, _ output: OutputOptions, _ action: String,
                        _ body: @escaping (SpeakerController) async throws -> Void) async throws {
        try await with(reach) { c in
            try await body(c)
            try Output.emit(Control(action: action, state: "done"), json: output.json) { action }
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause",
            abstract: "Pause the playback the speakers play (started by any controller; it follows).",
            discussion: "  $ tuneup speaker pause --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2")
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions
        func run() async throws { try await SpeakerCommand.control(reach, output, "paused") { try await $0.pause() } }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "resume",
            abstract: "Resume a paused playback (the controller that streams it goes on from where it paused).",
            discussion: "  $ tuneup speaker resume --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2")
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions
        func run() async throws { try await SpeakerCommand.control(reach, output, "resumed") { try await $0.resume() } }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop",
            abstract: "Stop the playback (it cannot be resumed).",
            discussion: "  $ tuneup speaker stop --speaker 127.0.0.1:P1 --speaker 127.0.0.1:P2")
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions
        func run() async throws { try await SpeakerCommand.control(reach, output, "stopped") { try await $0.stop() } }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Each speaker's player state, stream, frames rendered and audio losses.",
            discussion: "  $ tuneup speaker status --speaker 127.0.0.1:P1 --format json")
        @OptionGroup var reach: Reach
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await SpeakerCommand.with(reach) { c in
                let rows = try await SpeakerStatusReport.of(c)
                try Output.emit(rows, json: output.json) { rows.map(\.text).joined(separator: "\n") }
            }
        }
    }
}

/// `speaker play --encoding pcm|flac`.
extension AudioEncoding: ExpressibleByArgument {}
