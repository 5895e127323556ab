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
            Needs Debian's snapserver and snapclient (tools/install-deps.sh installs them). Writes --seconds of \
            generated 48 kHz s16le stereo audio (noise: every sample differs) as a WAV file and as the same PCM \
            headerless, then starts, all on loopback and free ports: a snapserver whose source is a pipe (its \
            default codec FLAC, --snap-codec; its 1000 ms buffer) with RECEIVERS snapclients playing to files \
            ('--player file'), and RECEIVERS 'tuneup speaker receive' each playing to alsa-lib's file plugin over null \
            (an asoundrc of the run's own). After --idle-seconds with nothing playing (idle CPU), both systems play \
            the same audio at once: 'tuneup speaker play SOURCE.wav --speaker ...' (its default 200 ms buffer) and \
            the PCM written into snapserver's pipe at the pace it reads. \
            CPU is utime + stime from /proc: the controller's whole process (start-up, clock sync and streaming; \
            the streaming part alone is printed beside it), snapserver, snapclients and receivers from the start of \
            the play until both streams ended plus 1.5 s. Figures are CPU seconds per audio second. \
            Goals (issue 19 §5): controller <= snapserver; a receiver (mean) <= 2x a snapclient (mean). \
            Exits 1 when a goal is missed, 69 when snapserver or snapclient is not installed.
            """)

    @Option(help: "Seconds of audio played.") var seconds = 60.0
    @Option(help: "Receivers of each kind (snapclients, and 'tuneup speaker receive's).") var receivers = 8
    @Option(help: "Seconds measured idle, before the streams.") var idleSeconds = 5.0
    @Option(help: "snapserver's codec on the wire: flac (its default), pcm, ogg or opus.") var snapCodec = "flac"
    @Option(help: "'tuneup speaker play --encoding': pcm (its default) or flac.") var encoding = "pcm"
    @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

    func validate() throws {
        guard seconds >= 5, seconds <= 3600 else { throw ValidationError("--seconds must be 5...3600") }
        guard (1...32).contains(receivers) else { throw ValidationError("--receivers must be 1...32") }
        guard idleSeconds >= 1, idleSeconds <= 600 else { throw ValidationError("--idle-seconds must be 1...600") }
        guard ["flac", "pcm", "ogg", "opus"].contains(snapCodec) else { throw ValidationError("--snap-codec must be flac, pcm, ogg or opus") }
        guard ["pcm", "flac"].contains(encoding) else { throw ValidationError("--encoding must be pcm or flac") }
    }

    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    func run() async throws {
        let binary = try Bench.tuneupBinary(tuneup)
        guard let snapserver = Self.which("snapserver"), let snapclient = Self.which("snapclient") else {
            print("speaker-vs-snapcast: snapserver and snapclient are not installed (tools/install-deps.sh runtime installs them)")
            throw ExitCode(69)
        }
        signal(SIGPIPE, SIG_IGN)  // snapserver gone while its pipe is written: an error, not the end of this process
        let run = Run(dir: NSTemporaryDirectory() + "tuneup-speaker-vs-snapcast-\(getpid())")
        do {
            try await measure(run, binary: binary, snapserver: snapserver, snapclient: snapclient)
            try await Blocking.perform("stop") { run.stopAll() }
        } catch {
            _ = try? await Blocking.perform("stop") { run.stopAll() }
            throw error
        }
    }

    /// The children of a run, stopped at its end whatever happened.
    final class Run: Sendable {
        let dir: String
        private let children = Mutex<[(name: String, process: ChildProcess)]>([])
        init(dir: String) { self.dir = dir }

        func add(_ name: String, _ process: ChildProcess) { children.withLock { $0.append((name, process)) } }

        /// SIGTERM to every child still running, then each waited for (SIGKILL after 10 s); the directory removed.
        func stopAll() {
            let all = children.withLock { list in defer { list = [] }; return list }
            for c in all where c.process.isRunning { c.process.terminate() }
            for c in all { c.process.waitUntilExit(within: 10, grace: 5) }
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    struct Started: Sendable {
        var server: pid_t
        var clients: [pid_t]
        var receivers: [pid_t]
        var receiverAddresses: [String]
    }

    func measure(_ run: Run, binary: String, snapserver: String, snapclient: String) async throws {
        let dir = run.dir, seconds = seconds, count = receivers, codec = snapCodec
        let format = Self.format
        let started = try await Blocking.perform("start") { () throws -> Started in
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Self.writeSource(dir: dir, format: format, seconds: seconds)
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
        let playStart = monotonicNanoseconds()
        let addresses = started.receiverAddresses
        let controller = try await Blocking.perform("play") { () throws -> ChildProcess in
            let p = try ChildProcess(binary, ["speaker", "play", dir + "/source.wav", "--format", "json", "--encoding", encoding] + addresses.flatMap { ["--speaker", $0] },
                                     stderr: .file(dir + "/play.log"))
            run.add("controller", p)
            return p
        }
        async let fed = Blocking.perform("snapfifo") { () throws -> Double in try Self.feed(dir: dir) }
        let (controllerCPU, streamingCPU, controllerWall, controllerStatus) = try await Blocking.perform("controller") { () -> (Double, Double, Double, Int32) in
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
            let wall = Double(monotonicNanoseconds() - playStart) / 1e9
            controller.waitUntilExit()
            return (total, total - atPlaying, wall, controller.shellStatus)
        }
        let fedSeconds = try await fed
        try await Task.sleep(for: .milliseconds(1500))  // snapclients' 1000 ms buffer, the receivers' last frames
        let playWall = Double(monotonicNanoseconds() - playStart) / 1e9
        let playing = zip(try await cpu(), play0).map { $0 - $1 }
        let summaries = try await Blocking.perform("outputs") { () -> [String] in
            (0..<count).map { k in
                let r = Self.audibleSeconds(path: "\(dir)/receiver-\(k).raw"), c = Self.audibleSeconds(path: "\(dir)/snapclient-\(k).raw")
                return String(format: "%.2f/%.2f", r, c)
            }
        }

        // Report.
        let n = Double(count)
        let server = playing[0] / seconds
        let clients = playing[1...count].map { $0 / seconds }
        let ours = playing[(count + 1)...].map { $0 / seconds }
        let controllerRate = controllerCPU / seconds
        let clientMean = clients.reduce(0, +) / n, oursMean = ours.reduce(0, +) / n
        print("speaker-vs-snapcast: \(seconds.formatted()) s of \(format) (generated noise), \(count) receivers of each kind, UDP/TCP loopback, at the same time:")
        print("  Snapcast 0.26: snapserver (pipe source, codec \(codec), buffer 1000 ms) -> \(count) x snapclient --player file")
        print("  Tuneup: 'tuneup speaker play source.wav' (buffer 200 ms) -> \(count) x 'tuneup speaker receive' (ALSA file plugin over null)")
        if controllerStatus != 0 {
            print("  the controller exited \(controllerStatus): \((try? await Blocking.perform("log") { try? String(contentsOfFile: dir + "/play.log", encoding: .utf8) }) ?? nil ?? "")")
        }
        print(String(format: "CPU seconds per audio second (idle: %% of one core over %.1f s, nothing playing):", idleWall))
        print(String(format: "  controller  'tuneup speaker play'   %.4f  (%.2f s in %.1f s, the whole process; streaming from 'playing' on: %.4f)",
                     controllerRate, controllerCPU, controllerWall, streamingCPU / seconds))
        print(String(format: "  snapserver                          %.4f  (%.2f s in %.1f s; pipe fed in %.1f s)   idle %.3f %%",
                     server, playing[0], playWall, fedSeconds, idle[0] / idleWall * 100))
        print(String(format: "  snapclient                mean %.4f  max %.4f   idle mean %.3f %%", clientMean, clients.max() ?? 0,
                     idle[1...count].reduce(0, +) / n / idleWall * 100))
        print(String(format: "  'tuneup speaker receive'  mean %.4f  max %.4f   idle mean %.3f %%", oursMean, ours.max() ?? 0,
                     idle[(count + 1)...].reduce(0, +) / n / idleWall * 100))
        print("  audible seconds written per receiver, ours/snapclient's: " + summaries.joined(separator: " "))
        let controllerRatio = server > 0 ? controllerRate / server : .infinity
        let receiverRatio = clientMean > 0 ? oursMean / clientMean : .infinity
        var missed: [String] = []
        print(String(format: "controller / snapserver: %.2fx (goal <= 1)   %@", controllerRatio, controllerRatio <= 1 ? "MET" : "MISSED"))
        if controllerRatio > 1 { missed.append(String(format: "controller %.2fx snapserver", controllerRatio)) }
        print(String(format: "receiver / snapclient (means): %.2fx (goal <= 2)   %@", receiverRatio, receiverRatio <= 2 ? "MET" : "MISSED"))
        if receiverRatio > 2 { missed.append(String(format: "receiver %.2fx snapclient", receiverRatio)) }
        if controllerStatus != 0 { missed.append("the controller exited \(controllerStatus)") }
        if missed.isEmpty { print("all goals met") } else {
            print("MISSED: " + missed.joined(separator: "; "))
            throw ExitCode(1)
        }
    }

    /// `dir/source.wav` and `dir/source.raw`: the same generated PCM, with and without a WAV header.
    static func writeSource(dir: String, format: AudioFormat, seconds: Double) throws {
        let signal = GeneratedSignal(format: format, seconds: seconds, seed: 1)
        let total = signal.totalFrames!
        let dataBytes = total * UInt64(format.bytesPerFrame)
        guard dataBytes < UInt64(UInt32.max) else { throw BenchError("--seconds too long for one WAV file") }
        FileManager.default.createFile(atPath: dir + "/source.wav", contents: Data(WAV.header(format: format, dataBytes: UInt32(dataBytes))))
        FileManager.default.createFile(atPath: dir + "/source.raw", contents: nil)
        guard let wav = FileHandle(forWritingAtPath: dir + "/source.wav"), let raw = FileHandle(forWritingAtPath: dir + "/source.raw") else {
            throw BenchError("cannot write the source files in \(dir)")
        }
        defer { try? wav.close(); try? raw.close() }
        try wav.seekToEnd()
        var frame: UInt64 = 0
        while frame < total {
            let n = Int(min(UInt64(format.sampleRate), total - frame))
            let bytes = Data(signal.frames(frame, count: n))
            try wav.write(contentsOf: bytes)
            try raw.write(contentsOf: bytes)
            frame += UInt64(n)
        }
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

    /// Seconds of frames that are not silent (both channels 0) in a raw 48 kHz s16le stereo file.
    static func audibleSeconds(path: String) -> Double {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        let audible = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Int in
            let frames = raw.bindMemory(to: UInt32.self)
            var n = 0
            for f in frames where f != 0 { n += 1 }
            return n
        }
        return Double(audible) / 48_000
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
