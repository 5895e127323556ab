import ArgumentParser
import Foundation
import Glibc
import Spawn
import SpeakerPlayback
import SpeakerSession
import Support
import Synchronization
import Transport

/// `tuneup-bench speaker-vs-snapcast`: Tuneup's controller and receivers against snapserver and snapclients, the
/// same audio at the same time, CPU per process, in one run.
struct SpeakerVsSnapcast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speaker-vs-snapcast",
        abstract: "CPU of 'tuneup speaker play' and 'tuneup speaker receive' against snapserver and snapclient, side by side.",
        discussion: """
            Needs Debian's snapserver and snapclient (tools/install-deps.sh installs them). Like for like: both \
            systems carry the audio in the same encoding (--encoding pcm, the default: Tuneup's PCM against \
            snapserver's codec pcm; --encoding flac: FLAC against FLAC). For each signal (--signal: 'music', three \
            tones and their harmonics under a slow envelope with noise 50 dB down, as compressible as music; 'noise', \
            white noise at half scale, FLAC's worst case; 'both', the default) and each of --runs runs, it writes \
            --seconds of 48 kHz s16le stereo as a WAV file and as the same PCM headerless, then starts, all on \
            loopback and free ports: a snapserver whose source is a pipe (its 1000 ms buffer) with RECEIVERS \
            snapclients playing to files ('--player file'), and RECEIVERS 'tuneup speaker receive' each playing to \
            alsa-lib's file plugin over null (an asoundrc of the run's own). After --idle-seconds with nothing playing \
            (idle CPU), both systems play the same audio at once: 'tuneup speaker play SOURCE.wav --speaker ...' (its \
            default 200 ms buffer) and the PCM written into snapserver's pipe at the pace it reads. \
            CPU is utime + stime from /proc: the controller's whole process (start-up, clock sync and streaming; \
            the streaming part alone is printed beside it), snapserver, snapclients and receivers from the start of \
            the play until both streams ended plus 1.5 s. Figures are CPU seconds per audio second. Every receiver's \
            and every snapclient's output is compared with the source frame for frame (where the source starts in \
            it, how many frames follow in order, where it jumps). \
            Goals (issue 30 item 26), on the median of the runs of each signal: controller <= snapserver; a \
            receiver (mean) <= 1.0x a snapclient (mean); idle 0 %. \
            Exits 1 when a goal is missed, 69 when snapserver or snapclient is not installed.
            """)

    @Option(help: "Seconds of audio played in each run.") var seconds = 30.0
    @Option(help: "Receivers of each kind (snapclients, and 'tuneup speaker receive's).") var receivers = 8
    @Option(help: "Seconds measured idle, before the streams.") var idleSeconds = 5.0
    @Option(help: "The encoding on the wire of both systems: pcm (the default) or flac.") var encoding = "pcm"
    @Option(help: "snapserver's codec when it should differ from --encoding (pcm, flac, ogg or opus): not like for like.")
    var snapCodec: String?
    @Option(name: .customLong("signal"), help: "The signal played: music, noise, or both (the default: every run of each).")
    var signalKind = "both"
    @Option(help: "Runs of each signal (the spread and the median are reported).") var runs = 3
    @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

    func validate() throws {
        guard seconds >= 5, seconds <= 3600 else { throw ValidationError("--seconds must be 5...3600") }
        guard (1...32).contains(receivers) else { throw ValidationError("--receivers must be 1...32") }
        guard idleSeconds >= 1, idleSeconds <= 600 else { throw ValidationError("--idle-seconds must be 1...600") }
        guard ["pcm", "flac"].contains(encoding) else { throw ValidationError("--encoding must be pcm or flac") }
        if let snapCodec, !["flac", "pcm", "ogg", "opus"].contains(snapCodec) {
            throw ValidationError("--snap-codec must be flac, pcm, ogg or opus")
        }
        guard ["music", "noise", "both"].contains(signalKind) else { throw ValidationError("--signal must be music, noise or both") }
        guard (1...20).contains(runs) else { throw ValidationError("--runs must be 1...20") }
    }

    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    /// One run's figures (CPU seconds per audio second; idle in % of a core).
    struct Figures: Sendable {
        var controller: Double
        var streaming: Double
        var server: Double
        var clientMean: Double
        var clientMax: Double
        var receiverMean: Double
        var receiverMax: Double
        var serverIdle: Double
        var clientIdle: Double
        var receiverIdle: Double
        var controllerStatus: Int32
        var receiverOutputs: [OutputCheck]
        var clientOutputs: [OutputCheck]
        var controllerRatio: Double { server > 0 ? controller / server : .infinity }
        var receiverRatio: Double { clientMean > 0 ? receiverMean / clientMean : .infinity }
    }

    func run() async throws {
        let binary = try Bench.tuneupBinary(tuneup)
        guard let snapserver = Self.which("snapserver"), let snapclient = Self.which("snapclient") else {
            print("speaker-vs-snapcast: snapserver and snapclient are not installed (tools/install-deps.sh runtime installs them)")
            throw ExitCode(69)
        }
        signal(SIGPIPE, SIG_IGN)  // snapserver gone while its pipe is written: an error, not the end of this process
        let codec = snapCodec ?? encoding
        let signals = signalKind == "both" ? ["music", "noise"] : [signalKind]
        print("speaker-vs-snapcast: \(seconds.formatted()) s of \(Self.format) a run, \(runs) runs of each signal, "
              + "\(receivers) receivers of each kind, UDP/TCP loopback, both systems at the same time:")
        print("  Snapcast 0.26: snapserver (pipe source, codec \(codec), buffer 1000 ms) -> \(receivers) x snapclient --player file")
        print("  Tuneup: 'tuneup speaker play source.wav --encoding \(encoding)' (buffer 200 ms) -> \(receivers) x "
              + "'tuneup speaker receive' (ALSA file plugin over null)")
        if codec != encoding { print("  NOT like for like: snapserver sends \(codec), Tuneup \(encoding)") }
        var missed: [String] = []
        for kind in signals {
            var all: [Figures] = []
            for k in 1...runs {
                let run = Run(dir: NSTemporaryDirectory() + "tuneup-speaker-vs-snapcast-\(getpid())-\(kind)-\(k)")
                do {
                    let figures = try await measure(run, signal: kind, codec: codec, binary: binary, snapserver: snapserver, snapclient: snapclient)
                    try await Blocking.perform("stop") { run.stopAll() }
                    Self.report(figures, title: "\(kind), run \(k) of \(runs)")
                    all.append(figures)
                } catch {
                    _ = try? await Blocking.perform("stop") { run.stopAll() }
                    throw error
                }
            }
            missed += Self.summarize(all, signal: kind)
        }
        if missed.isEmpty { print("all goals met") } else {
            print("MISSED: " + missed.joined(separator: "; "))
            throw ExitCode(1)
        }
    }

    /// One run's lines.
    static func report(_ f: Figures, title: String) {
        print("\(title): CPU seconds per audio second (idle: % of one core, nothing playing)")
        print(String(format: "  controller 'tuneup speaker play'  %.4f (streaming from 'playing' on: %.4f)   snapserver %.4f   ratio %.2fx   idle snapserver %.3f %%",
                     f.controller, f.streaming, f.server, f.controllerRatio, f.serverIdle))
        print(String(format: "  'tuneup speaker receive' mean %.4f max %.4f   snapclient mean %.4f max %.4f   ratio %.2fx   idle %.3f %% / %.3f %%",
                     f.receiverMean, f.receiverMax, f.clientMean, f.clientMax, f.receiverRatio, f.receiverIdle, f.clientIdle))
        print("  output against the source, receivers: " + OutputCheck.summary(f.receiverOutputs))
        print("  output against the source, snapclients: " + OutputCheck.summary(f.clientOutputs))
        if f.controllerStatus != 0 { print("  the controller exited \(f.controllerStatus)") }
    }

    /// The spread and median of a signal's runs, and the goals missed on the medians.
    static func summarize(_ all: [Figures], signal: String) -> [String] {
        func spread(_ values: [Double]) -> String {
            let sorted = values.sorted()
            return String(format: "median %.2fx (%.2f-%.2f)", Percentile.of(sorted: sorted, 50) ?? .nan, sorted.first ?? .nan, sorted.last ?? .nan)
        }
        func median(_ values: [Double]) -> Double { Percentile.of(sorted: values.sorted(), 50) ?? .infinity }
        let controller = median(all.map(\.controllerRatio)), receiver = median(all.map(\.receiverRatio))
        let idle = all.map(\.receiverIdle).max() ?? 0
        let exactReceivers = all.allSatisfy { $0.receiverOutputs.allSatisfy(\.holdsTheSource) }
        print("\(signal), \(all.count) runs:")
        print("  controller / snapserver: \(spread(all.map(\.controllerRatio))) (goal <= 1)   \(controller <= 1 ? "MET" : "MISSED")")
        print("  receiver / snapclient (means): \(spread(all.map(\.receiverRatio))) (goal <= 1)   \(receiver <= 1 ? "MET" : "MISSED")")
        print(String(format: "  receiver idle: max %.3f %% of a core (goal 0 %%)   %@", idle, idle < 0.05 ? "MET" : "MISSED"))
        print("  every receiver played at least 99.9 % of the source in order: \(exactReceivers ? "yes" : "NO")")
        var missed: [String] = []
        if controller > 1 { missed.append(String(format: "%@: controller %.2fx snapserver", signal, controller)) }
        if receiver > 1 { missed.append(String(format: "%@: receiver %.2fx snapclient", signal, receiver)) }
        if idle >= 0.05 { missed.append(String(format: "%@: receiver idle %.3f %%", signal, idle)) }
        if !exactReceivers { missed.append("\(signal): a receiver's output differs from the source") }
        if all.contains(where: { $0.controllerStatus != 0 }) { missed.append("\(signal): the controller failed") }
        return missed
    }

    /// The children of a run, stopped at its end whatever happened.
    final class Run: Sendable {
        let dir: String
        private let children = Mutex<[(name: String, process: ChildProcess)]>([])
        init(dir: String) { self.dir = dir }

        func add(_ name: String, _ process: ChildProcess) { children.withLock { $0.append((name, process)) } }

        /// SIGTERM to every child still running, then each waited for (SIGKILL after 10 s); the directory removed
        /// (kept, and named, with TUNEUP_BENCH_KEEP=1: the outputs and logs to look at).
        func stopAll() {
            let all = children.withLock { list in defer { list = [] }; return list }
            for c in all where c.process.isRunning { c.process.terminate() }
            for c in all { c.process.waitUntilExit(within: 10, grace: 5) }
            if ProcessInfo.processInfo.environment["TUNEUP_BENCH_KEEP"] == "1" { print("  kept: \(dir)") } else {
                try? FileManager.default.removeItem(atPath: dir)
            }
        }
    }

    struct Started: Sendable {
        var server: pid_t
        var clients: [pid_t]
        var receivers: [pid_t]
        var receiverAddresses: [String]
    }

    func measure(_ run: Run, signal kind: String, codec: String, binary: String, snapserver: String, snapclient: String) async throws -> Figures {
        let dir = run.dir, seconds = seconds, count = receivers, encoding = encoding
        let format = Self.format
        let started = try await Blocking.perform("start") { () throws -> Started in
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Self.writeSource(dir: dir, format: format, signal: kind, seconds: seconds)
            // snapserver: its own configuration (no system file), a pipe source it creates, no control API.
            let port = try LoopbackPort.unused()
            try """
                [server]
                datadir = \(dir)
                threads = -1
                [stream]
                source = pipe://\(dir)/snapfifo?name=bench&mode=create
                codec = \(codec)
                sampleformat = 48000:16:2
                bind_to_address = 127.0.0.1
                port = \(port)
                [tcp]
                enabled = false
                [http]
                enabled = false
                [logging]
                sink = stderr

                """.write(toFile: dir + "/snapserver.conf", atomically: true, encoding: .utf8)
            let server = try ChildProcess(snapserver, ["-c", dir + "/snapserver.conf"], stdout: .file(dir + "/snapserver.log"), stderr: .stdout)
            run.add("snapserver", server)
            guard Self.waitForListener(port: port, seconds: 20) else {
                throw BenchError("snapserver did not listen on 127.0.0.1:\(port): \((try? String(contentsOfFile: dir + "/snapserver.log", encoding: .utf8)) ?? "")")
            }
            var clients: [pid_t] = []
            for k in 0..<count {
                let c = try ChildProcess(snapclient, ["-h", "127.0.0.1", "-p", "\(port)", "--hostID", "tuneup-bench-\(k)", "--instance", "\(k + 1)",
                                                      "--player", "file:filename=\(dir)/snapclient-\(k).raw", "--logsink", "stderr"],
                                         stdout: .file(dir + "/snapclient-\(k).log"), stderr: .stdout)
                run.add("snapclient \(k)", c)
                clients.append(c.processIdentifier)
            }
            // Tuneup's receivers: each its own asoundrc whose 'capture' device is the file plugin over null.
            var receivers: [pid_t] = [], addresses: [String] = []
            for k in 0..<count {
                let rc = "\(dir)/asoundrc-\(k)"
                try "pcm.capture { type file slave.pcm { type null } file \"\(dir)/receiver-\(k).raw\" format raw }\n"
                    .write(toFile: rc, atomically: true, encoding: .utf8)
                let r = try ChildProcess(binary, ["speaker", "receive", "--alsa-device", "capture", "--listen", "tcp:127.0.0.1:0",
                                                  "--audio-port", "0", "--discovery-port", "0", "--name", "bench-\(k)"],
                                         environment: ["ALSA_CONFIG_PATH": rc], stdin: .pipe, stderr: .pipe)
                run.add("receiver \(k)", r)
                guard let address = r.output!.linesBlocking(1, timeout: 60).first else {
                    throw BenchError("receiver \(k) printed no address: \(r.errors!.textBlocking(timeout: 5))")
                }
                receivers.append(r.processIdentifier)
                addresses.append(address)
            }
            // Unity gain on both sides (a receiver starts at volume 25 of 50; a snapclient at 100 %): the same samples
            // out as in, and no scaling that only one side does.
            let volume = try ChildProcess(binary, ["speaker", "volume", "50"] + addresses.flatMap { ["--speaker", $0] }, stderr: .pipe)
            volume.waitUntilExit()
            guard volume.shellStatus == 0 else { throw BenchError("'tuneup speaker volume 50' failed: \(volume.errors!.textBlocking(timeout: 5))") }
            return Started(server: server.processIdentifier, clients: clients, receivers: receivers, receiverAddresses: addresses)
        }
        // snapclients connect and settle; then idle: nothing plays.
        try await Task.sleep(for: .seconds(2))
        let pids = [started.server] + started.clients + started.receivers
        let cpu = { @Sendable () async throws -> [Double] in try await Blocking.perform("cpu") { pids.map { ProcessCPU.of($0) } } }
        let idle0 = try await cpu()
        let idleStart = monotonicNanoseconds()
        try await Task.sleep(for: .seconds(idleSeconds))
        let idleWall = Double(monotonicNanoseconds() - idleStart) / 1e9
        let idle = zip(try await cpu(), idle0).map { $0 - $1 }

        // Both streams at once.
        let play0 = try await cpu()
        let addresses = started.receiverAddresses
        let controller = try await Blocking.perform("play") { () throws -> ChildProcess in
            let p = try ChildProcess(binary, ["speaker", "play", dir + "/source.wav", "--format", "json", "--encoding", encoding] + addresses.flatMap { ["--speaker", $0] },
                                     stderr: .file(dir + "/play.log"))
            run.add("controller", p)
            return p
        }
        async let fed = Blocking.perform("snapfifo") { () throws -> Double in try Self.feed(dir: dir) }
        let (controllerCPU, streamingCPU, controllerStatus) = try await Blocking.perform("controller") { () -> (Double, Double, Int32) in
            // The streaming part: from its 'playing' state on.
            var atPlaying = 0.0
            var n = 1
            while true {
                let lines = controller.output!.linesBlocking(n, timeout: seconds + 60)
                if lines.contains(where: { $0.contains("\"playing\"") }) { atPlaying = ProcessCPU.of(controller.processIdentifier); break }
                if lines.count < n { break }  // ended (or timed out) without playing
                n = lines.count + 1
            }
            // Its whole CPU, read while it is a zombie (ended, not yet reaped: /proc still has its times).
            var info = siginfo_t()
            while waitid(P_PID, id_t(controller.processIdentifier), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
            let total = ProcessCPU.of(controller.processIdentifier)
            controller.waitUntilExit()
            return (total, total - atPlaying, controller.shellStatus)
        }
        _ = try await fed
        try await Task.sleep(for: .milliseconds(1500))  // snapclients' 1000 ms buffer, the receivers' last frames
        let playing = zip(try await cpu(), play0).map { $0 - $1 }
        let (receiverOutputs, clientOutputs) = try await Blocking.perform("outputs") { () throws -> ([OutputCheck], [OutputCheck]) in
            let source = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/source.raw")))
            let index = OutputCheck.Index(source: source)
            func check(_ path: String) -> OutputCheck {
                OutputCheck(output: FileManager.default.contents(atPath: path).map(Array.init) ?? [], source: source, index: index)
            }
            return ((0..<count).map { check("\(dir)/receiver-\($0).raw") }, (0..<count).map { check("\(dir)/snapclient-\($0).raw") })
        }

        let n = Double(count)
        let clients = playing[1...count].map { $0 / seconds }
        let ours = playing[(count + 1)...].map { $0 / seconds }
        return Figures(controller: controllerCPU / seconds, streaming: streamingCPU / seconds, server: playing[0] / seconds,
                       clientMean: clients.reduce(0, +) / n, clientMax: clients.max() ?? 0,
                       receiverMean: ours.reduce(0, +) / n, receiverMax: ours.max() ?? 0,
                       serverIdle: idle[0] / idleWall * 100, clientIdle: idle[1...count].reduce(0, +) / n / idleWall * 100,
                       receiverIdle: idle[(count + 1)...].reduce(0, +) / n / idleWall * 100, controllerStatus: controllerStatus,
                       receiverOutputs: receiverOutputs, clientOutputs: clientOutputs)
    }

    /// How one player's output (raw 48 kHz s16le stereo) holds the source: where the source's frames start in it, how
    /// many follow in order, the drift corrections (a frame played twice, one or a few left out), and what else: a jump
    /// elsewhere in the source, source frames never played, silence in the middle, frames that are no source frame.
    struct OutputCheck: Sendable {
        /// Source frames found in the output, each in its place after the one before.
        var inOrder = 0
        /// Frames played twice in a row (a drift correction).
        var repeated = 0
        /// Source frames left out one to four at a time (a drift correction).
        var skipped = 0
        /// Places where the output goes on elsewhere in the source.
        var jumps = 0
        /// Source frames never played (from the first played to the end), corrections apart.
        var missing = 0
        /// Audible output frames that are no source frame (neither silence nor the source).
        var foreign = 0
        /// Silent frames in the middle of the source (a gap: the output waited, then went on).
        var gaps = 0
        /// Source frames in all.
        var sourceFrames = 0
        /// The source whole and in order, drift corrections apart.
        var isExact: Bool { inOrder > 0 && jumps == 0 && missing == 0 && foreign == 0 && gaps == 0 }
        /// At least 99.9 % of the source in order (a frame left out or repeated now and then by a clock correction, or
        /// a few milliseconds of a resync after a thread woken late on a busy machine, is not a fault; a cut end or a
        /// lost second is).
        var holdsTheSource: Bool { inOrder * 1000 >= sourceFrames * 999 }

        static let keyFrames = 4

        /// Where each run of `keyFrames` source frames starts (its first place), to find the source in an output.
        struct Index: Sendable {
            var positions: [UInt64: Int] = [:]
            init(source: [UInt8]) {
                let frames = source.count / 4
                positions.reserveCapacity(frames)
                source.withUnsafeBytes { raw in
                    for f in 0..<max(0, frames - OutputCheck.keyFrames + 1) {
                        let key = OutputCheck.key(raw, f)
                        if positions[key] == nil { positions[key] = f }
                    }
                }
            }
        }

        static func key(_ raw: UnsafeRawBufferPointer, _ frame: Int) -> UInt64 {
            let a = raw.loadUnaligned(fromByteOffset: frame * 4, as: UInt64.self)
            let b = raw.loadUnaligned(fromByteOffset: frame * 4 + 8, as: UInt64.self)
            return (a &* 0x9E37_79B9_7F4A_7C15) ^ b
        }

        init(output: [UInt8], source: [UInt8], index: Index) {
            let outFrames = output.count / 4, sourceFrames = source.count / 4, k = Self.keyFrames
            self.sourceFrames = sourceFrames
            output.withUnsafeBytes { out in
                source.withUnsafeBytes { src in
                    func frame(_ raw: UnsafeRawBufferPointer, _ f: Int) -> UInt32 { raw.loadUnaligned(fromByteOffset: f * 4, as: UInt32.self) }
                    /// Whether output frames i..<i+k equal source frames s..<s+k.
                    func matches(_ i: Int, _ s: Int) -> Bool {
                        guard i + k <= outFrames, s >= 0, s + k <= sourceFrames else { return false }
                        return memcmp(out.baseAddress! + i * 4, src.baseAddress! + s * 4, k * 4) == 0
                    }
                    var i = 0, expected: Int? = nil
                    while i < outFrames {
                        let f = frame(out, i)
                        if let e = expected, e < sourceFrames, f == frame(src, e) {
                            inOrder += 1; expected = e + 1; i += 1; continue
                        }
                        if let e = expected, f == 0 {  // silence after the end, or a gap in the middle
                            if e < sourceFrames { gaps += 1 }
                            i += 1
                            continue
                        }
                        if expected != nil, i > 0, f == frame(out, i - 1) { repeated += 1; i += 1; continue }
                        if let e = expected, let d = (1...4).first(where: { matches(i, e + $0) }) { skipped += d; expected = e + d; continue }
                        if i + k <= outFrames, let at = index.positions[Self.key(out, i)], matches(i, at) {
                            if let e = expected {
                                jumps += 1
                                if at > e { missing += at - e }
                            } else {
                                missing += at  // the source's start, never played
                            }
                            expected = at
                            continue
                        }
                        if f != 0 { foreign += 1 }
                        i += 1
                    }
                    if let e = expected, e < sourceFrames { missing += sourceFrames - e }
                }
            }
            if inOrder == 0 { missing = sourceFrames }
        }

        static func summary(_ checks: [OutputCheck]) -> String {
            let exact = checks.filter(\.isExact).count
            let corrections = checks.map { $0.repeated + $0.skipped }.reduce(0, +)
            let worst = checks.max { ($0.jumps, $0.missing, $0.gaps, $0.foreign) < ($1.jumps, $1.missing, $1.gaps, $1.foreign) }
            return "\(exact) of \(checks.count) whole and in order (\(corrections) drift corrections in all)" + (worst.map { w in
                w.isExact ? "" : "; worst: \(w.inOrder) frames in order, \(w.jumps) jumps, \(w.missing) missing, \(w.gaps) silent in the middle, \(w.foreign) foreign"
            } ?? "")
        }
    }

    /// `dir/source.wav` and `dir/source.raw`: the same generated PCM, with and without a WAV header.
    static func writeSource(dir: String, format: AudioFormat, signal: String, seconds: Double) throws {
        let pcm = SpeakerFLACBench.signal(signal, seconds: seconds)
        guard pcm.count < Int(UInt32.max) else { throw BenchError("--seconds too long for one WAV file") }
        let raw = Data(pcm)
        try (Data(WAV.header(format: format, dataBytes: UInt32(pcm.count))) + raw).write(to: URL(fileURLWithPath: dir + "/source.wav"))
        try raw.write(to: URL(fileURLWithPath: dir + "/source.raw"))
    }

    /// Writes `dir/source.raw` into snapserver's pipe (which paces it: it reads in real time); returns the seconds it took.
    static func feed(dir: String) throws -> Double {
        let start = monotonicNanoseconds()
        let fd = open(dir + "/snapfifo", O_WRONLY)
        guard fd >= 0 else { throw BenchError("cannot open snapserver's pipe: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/source.raw"))
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, min(65536, buffer.count - offset))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BenchError("writing snapserver's pipe: \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
        return Double(monotonicNanoseconds() - start) / 1e9
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` within `seconds` (tried every 50 ms).
    static func waitForListener(port: Int, seconds: Double) -> Bool {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        while monotonicNanoseconds() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return true }
            usleep(50_000)
        }
        return false
    }

    /// The path of `name` on PATH (or in /usr/bin), nil when it is not there.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for d in path.split(separator: ":") + ["/usr/bin", "/usr/sbin"] {
            let candidate = "\(d)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
