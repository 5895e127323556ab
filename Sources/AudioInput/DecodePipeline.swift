import Synchronization
import CSndfile
import Glibc
import Speaker
import Transport

/// One open source: libsndfile decoding to doubles, channel mapping and libsoxr resampling to the output format.
/// Blocking; used by one thread at a time (`AudioStream` serialises every call and runs it on the blocking pool).
final class DecodePipeline: @unchecked Sendable {
    let description: AudioSourceDescription
    let startFrame: Int64
    let network: HTTPByteSource?
    /// A local file's descriptor (libsndfile's: it closes it), to tell where its decoding stopped.
    private let descriptor: Int32?
    /// Bytes per source frame of a stream in a PCM container (WAV, AIFF, raw...): its reads can be sized to the bytes
    /// that have arrived. nil for files and compressed streams.
    private let streamBytesPerFrame: Int?

    private let output: AudioFormat
    private let name: String
    private var file: OpaquePointer?
    private let sourceChannels: Int
    private let outputChannels: Int
    private var resampler: Resampler?
    private var readBuffer: [Double]
    /// Decoded output samples (interleaved, output channels and rate) not yet handed out, from `queueHead`.
    private var queue: [Double] = []
    private var queueHead = 0
    private var sourceDone = false
    private var delivered: UInt64 = 0
    /// Source frames decoded since the start position (a network source's length is checked against its header's).
    private var decodedSourceFrames: Int64 = 0
    /// A failure met while frames decoded before it were still queued: thrown once they are handed out.
    private var pendingError: AudioInputError?

    private static let blockFrames = 4096

    private init(file: OpaquePointer, network: HTTPByteSource?, descriptor: Int32?, info: SF_INFO, name: String,
                 description: AudioSourceDescription, output: AudioFormat, startFrame: Int64, resampler: Resampler?) {
        self.file = file
        self.network = network
        self.descriptor = descriptor
        self.name = name
        self.description = description
        self.output = output
        self.startFrame = startFrame
        self.sourceChannels = Int(info.channels)
        self.outputChannels = Int(output.channels)
        self.readBuffer = [Double](repeating: 0, count: Self.blockFrames * Int(info.channels))
        self.resampler = resampler
        self.streamBytesPerFrame = network == nil ? nil : Self.pcmBytesPerFrame(info)
    }

    /// The bytes of one frame of `info`'s format when it is PCM (or a-law, µ-law, float) in a container whose audio
    /// bytes are the samples themselves; nil for compressed formats.
    static func pcmBytesPerFrame(_ info: SF_INFO) -> Int? {
        let containers: Set<Int32> = [Int32(SF_FORMAT_WAV), Int32(SF_FORMAT_WAVEX), Int32(SF_FORMAT_AIFF), Int32(SF_FORMAT_RAW),
                                      Int32(SF_FORMAT_AU), Int32(SF_FORMAT_W64), Int32(SF_FORMAT_RF64), Int32(SF_FORMAT_CAF)]
        guard containers.contains(info.format & Int32(SF_FORMAT_TYPEMASK)) else { return nil }
        let sample: Int
        switch info.format & Int32(SF_FORMAT_SUBMASK) {
        case Int32(SF_FORMAT_PCM_S8), Int32(SF_FORMAT_PCM_U8), Int32(SF_FORMAT_ULAW), Int32(SF_FORMAT_ALAW): sample = 1
        case Int32(SF_FORMAT_PCM_16): sample = 2
        case Int32(SF_FORMAT_PCM_24): sample = 3
        case Int32(SF_FORMAT_PCM_32), Int32(SF_FORMAT_FLOAT): sample = 4
        case Int32(SF_FORMAT_DOUBLE): sample = 8
        default: return nil
        }
        return info.channels > 0 ? sample * Int(info.channels) : nil
    }

    deinit {
        if let file { sf_close(file) }
    }

    // MARK: - Opening

    static func open(_ source: AudioSourceAddress, network: HTTPByteSource?, output: AudioFormat,
                     startAt: Duration, raw: RawPCMFormat? = nil) throws(AudioInputError) -> DecodePipeline {
        try AudioLibraries.requireSndfile()
        let name = source.description
        var info = SF_INFO()
        if let raw {
            // Headerless PCM: libsndfile is told what it is instead of sniffing.
            let encoding: Int32 = switch raw.encoding {
            case .s16le: Int32(SF_FORMAT_PCM_16)
            case .s24le: Int32(SF_FORMAT_PCM_24)
            case .s32le: Int32(SF_FORMAT_PCM_32)
            case .f32le: Int32(SF_FORMAT_FLOAT)
            }
            info.format = Int32(SF_FORMAT_RAW) | encoding | Int32(bitPattern: UInt32(SF_ENDIAN_LITTLE))
            info.samplerate = Int32(raw.sampleRate)
            info.channels = Int32(raw.channels)
        }
        let file: OpaquePointer
        var fileDescriptor: Int32?
        switch source {
        case .file(let path):
            let descriptor = try openFile(path)
            fileDescriptor = descriptor
            let head = readHead(descriptor)
            // libsndfile keeps a failed open's error in one process-wide place (sf_error(NULL)): an open and the
            // reading of its error are one step, or a concurrent open's error is reported for this file.
            // The descriptor is libsndfile's from here on (close_desc): sf_close closes it, and a failed sf_open_fd
            // closes it too, whatever close_desc says (libsndfile 1.2.0). Closing it again here closed whatever
            // another thread had opened under that number meanwhile (a concurrent read failed "Bad file descriptor").
            let attempt = Self.openLock.withLock { _ -> Result<OpaquePointer, AudioInputError> in
                guard let opened = sf_open_fd(descriptor, Int32(SFM_READ), &info, 1) else {
                    return .failure(openFailure(name: name, head: head))
                }
                return .success(opened)
            }
            guard case let .success(opened) = attempt else {
                if case let .failure(failure) = attempt { throw failure }
                throw AudioInputError(.decoderFailed, "\(name): cannot open")
            }
            file = opened
            if let truncation = truncation(of: opened, name: name) {
                sf_close(opened)
                throw truncation
            }
        case .url, .standardInput:
            guard let network else { throw AudioInputError(.decoderFailed, "\(name): no transfer") }
            try network.start()
            var io = virtualIO
            let opened = sf_open_virtual(&io, Int32(SFM_READ), &info, Unmanaged.passUnretained(network).toOpaque())
            // A transfer that failed after its first bytes (a cut, a stall) does not fail an open that succeeded:
            // what arrived is decoded first, then the failure is reported (`checkReadError`).
            guard let opened else { throw network.error ?? openFailure(name: name, head: network.head(512)) }
            file = opened
            network.finishOpening()
        }
        let isNetwork = network != nil
        let description = describe(file, info: info, source: source, isNetwork: isNetwork)
        let rate = Int64(info.samplerate)
        let (seconds, atto) = startAt.components
        let startFrame = seconds * rate + Int64((Int128(atto) * Int128(rate)) / 1_000_000_000_000_000_000)
        if startFrame > 0, let frames = description.frames, startFrame >= frames {
            sf_close(file)
            throw AudioInputError(.startBeyondEnd, "\(name): the start \(startAt) is at or past the end (\(description.duration ?? .zero))")
        }
        // The resampler is made before the pipeline: from then on the pipeline owns the file and its deinit closes it
        // (a pipeline whose initialiser throws after initialising itself is deinitialised, and was closed twice).
        let resampler: Resampler?
        do {
            resampler = Int(info.samplerate) == Int(output.sampleRate) ? nil
                : try Resampler(from: Double(info.samplerate), to: Double(output.sampleRate),
                                channels: min(Int(info.channels), Int(output.channels)), name: name)
        } catch {
            sf_close(file)
            throw error
        }
        let pipeline = DecodePipeline(file: file, network: network, descriptor: fileDescriptor, info: info, name: name,
                                      description: description, output: output, startFrame: startFrame, resampler: resampler)
        try pipeline.seek(to: startFrame, isNetwork: isNetwork)
        // Decode the first frames now: whatever is wrong with the audio data shows before anything plays.
        try pipeline.fill(atLeast: 1)
        if let failure = pipeline.pendingError { throw failure }
        if pipeline.queuedFrames == 0 {
            throw startFrame > 0
                ? AudioInputError(.startBeyondEnd, "\(name): the start \(startAt) is at or past the end")
                : AudioInputError(.empty, "\(name): holds no audio frames")
        }
        return pipeline
    }

    /// Opens a local file for reading: not found, not a regular file, unreadable, empty are told apart here.
    ///
    /// Opened non-blocking, so that a named pipe (FIFO) with no writer — or a device — is refused at once instead of
    /// blocking the open forever; a regular file is then read blocking, as before.
    private static func openFile(_ path: String) throws(AudioInputError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw AudioInputError(.fileNotFound, "\(path): no such file")
            case EACCES, EPERM: throw AudioInputError(.fileUnreadable, "\(path): permission denied")
            default: throw AudioInputError(.fileUnreadable, "\(path): \(POSIX.describe(code))")
            }
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let code = errno
            POSIX.close(fd)
            throw AudioInputError(.fileUnreadable, "\(path): \(POSIX.describe(code))")
        }
        let type = st.st_mode & S_IFMT
        guard type == S_IFREG else {
            POSIX.close(fd)
            if type == S_IFIFO {
                throw AudioInputError(.notAFile, "\(path): is a named pipe (FIFO), not a file; give it as standard input (- < \(path))")
            }
            throw AudioInputError(.notAFile, "\(path): is \(type == S_IFDIR ? "a directory" : "not a regular file"), not an audio file")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        guard st.st_size > 0 else {
            POSIX.close(fd)
            throw AudioInputError(.empty, "\(path): is empty (0 bytes)")
        }
        return fd
    }

    private static func readHead(_ fd: Int32) -> [UInt8] {
        var head = [UInt8](repeating: 0, count: 512)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return Array(head.prefix(max(0, n)))
    }

    /// Held while a file is opened and a failed open's process-wide error is read.
    private static let openLock = Mutex(())

    /// The error for a source libsndfile could not open: a known but unsupported container, text, a truncated or
    /// damaged header, or bytes that are no audio format at all.
    private static func openFailure(name: String, head: [UInt8]) -> AudioInputError {
        let code = sf_error(nil)
        let reason = String(cString: sf_strerror(nil))
        var log = [CChar](repeating: 0, count: 4096)
        _ = sf_command(nil, Int32(SFC_GET_LOG_INFO), &log, Int32(log.count))
        let logText = log.cString
        if let container = FormatSniffer.unsupportedContainer(head) {
            return AudioInputError(.unsupportedFormat, "\(name): \(container) is not supported (\(FormatSniffer.supportedList))")
        }
        if let text = FormatSniffer.textKind(head) {
            return AudioInputError(.notAudio, "\(name): holds \(text), not audio")
        }
        let known = FormatSniffer.knownContainer(head)
        if let known, logText.contains("short count") {
            return AudioInputError(.truncated, "\(name): the \(known) header is cut short (the source ends inside it)")
        }
        switch Int(code) {
        case Int(SF_ERR_UNSUPPORTED_ENCODING):
            return AudioInputError(.unsupportedFormat, "\(name): \(known.map { "a \($0) file with " } ?? "")an encoding libsndfile does not decode (\(FormatSniffer.supportedList))")
        case Int(SF_ERR_UNRECOGNISED_FORMAT) where known == nil:
            return AudioInputError(.notAudio, "\(name): not an audio format Tuneup reads (\(FormatSniffer.supportedList))")
        default:
            if let known {
                return AudioInputError(.corrupt, "\(name): a damaged \(known) file: \(reason.lowercasedFirst)")
            }
            return AudioInputError(.notAudio, "\(name): not an audio format Tuneup reads (\(FormatSniffer.supportedList))")
        }
    }

    /// A WAV or AIFF file whose header announces more audio than the file holds (libsndfile would play the part that
    /// is there; Tuneup says the file is truncated instead).
    private static func truncation(of file: OpaquePointer, name: String) -> AudioInputError? {
        var log = [CChar](repeating: 0, count: 16384)
        _ = sf_command(file, Int32(SFC_GET_LOG_INFO), &log, Int32(log.count))
        for line in log.cString.split(separator: "\n") {
            let trimmed = line.drop(while: { $0 == " " })
            guard trimmed.hasPrefix("data :") || trimmed.hasPrefix("SSND :"), let open = trimmed.firstRange(of: "(should be ") else { continue }
            let stated = Int64(trimmed[trimmed.index(trimmed.startIndex, offsetBy: 6)..<open.lowerBound].trimmingSpaces) ?? 0
            let actual = Int64(trimmed[open.upperBound...].prefix(while: { $0.isNumber })) ?? 0
            if actual < stated {
                return AudioInputError(.truncated, "\(name): is truncated: its header announces \(stated) bytes of audio, the file holds \(actual)")
            }
        }
        return nil
    }

    /// What a local file is (container, encoding, rate, channels, length, title), from its header only: nothing is
    /// decoded. Blocking: call it off the cooperative pool.
    static func describeFile(_ path: String) throws(AudioInputError) -> AudioSourceDescription {
        try AudioLibraries.requireSndfile()
        let descriptor = try openFile(path)
        let head = readHead(descriptor)
        var info = SF_INFO()
        let attempt = Self.openLock.withLock { _ -> Result<OpaquePointer, AudioInputError> in
            guard let opened = sf_open_fd(descriptor, Int32(SFM_READ), &info, 1) else {
                return .failure(openFailure(name: path, head: head))
            }
            return .success(opened)
        }
        switch attempt {
        case .failure(let failure):
            throw failure
        case .success(let file):
            defer { sf_close(file) }
            return describe(file, info: info, source: .file(path), isNetwork: false)
        }
    }

    private static func describe(_ file: OpaquePointer, info: SF_INFO, source: AudioSourceAddress, isNetwork: Bool) -> AudioSourceDescription {
        let major = info.format & Int32(SF_FORMAT_TYPEMASK)
        let minor = info.format & Int32(SF_FORMAT_SUBMASK)
        let container = FormatNames.container(major: major, minor: minor) ?? formatName(file, major)
        let encoding = FormatNames.encoding(minor) ?? formatName(file, minor)
        var frames: Int64? = info.frames > 0 && info.frames < Int64(Int32.max) * 1024 ? info.frames : nil
        // Over HTTP the decoder is not told the length: only a PCM container's own header counts its frames.
        if isNetwork && (major == Int32(SF_FORMAT_MPEG) || major == Int32(SF_FORMAT_OGG)) { frames = nil }
        func tag(_ kind: Int32) -> String? {
            guard let value = sf_get_string(file, kind) else { return nil }
            let text = String(cString: value).trimmingSpaces
            return text.isEmpty ? nil : text
        }
        let tags = AudioTags(title: tag(Int32(SF_STR_TITLE)), artist: tag(Int32(SF_STR_ARTIST)), album: tag(Int32(SF_STR_ALBUM)))
        return AudioSourceDescription(container: container, encoding: encoding, sampleRate: Int(info.samplerate),
                                      channels: Int(info.channels), frames: frames, title: tags.title ?? source.lastComponent,
                                      isNetworkStream: isNetwork, tags: tags)
    }

    private static func formatName(_ file: OpaquePointer, _ format: Int32) -> String {
        var info = SF_FORMAT_INFO()
        info.format = format
        guard sf_command(file, Int32(SFC_GET_FORMAT_INFO), &info, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0, let name = info.name else {
            return String(format, radix: 16)
        }
        return String(cString: name)
    }

    // MARK: - Decoding

    private var queuedFrames: Int { (queue.count - queueHead) / outputChannels }

    private func seek(to frame: Int64, isNetwork: Bool) throws(AudioInputError) {
        guard frame > 0, let file else { return }
        if !isNetwork, sf_seek(file, frame, SEEK_SET) == frame { return }
        // Not seekable (a stream): decode and drop.
        var left = frame
        while left > 0 {
            let want = min(left, Int64(Self.blockFrames))
            let got = readBuffer.withUnsafeMutableBufferPointer { sf_readf_double(file, $0.baseAddress, want) }
            if got <= 0 {
                try checkReadError()
                throw AudioInputError(.startBeyondEnd, "\(name): the start is at or past the end (\(frame - left) frames)")
            }
            left -= got
        }
    }

    /// The next chunk of at most `maxFrames` output frames, or nil at the end.
    ///
    /// A source that fails (damaged data, a cut or stalled transfer) first hands out every frame decoded before the
    /// failure, then throws it.
    func next(maxFrames: Int) throws(AudioInputError) -> AudioChunk? {
        try fill(atLeast: maxFrames)
        let n = min(maxFrames, queuedFrames)
        guard n > 0 else {
            if let failure = pendingError { throw failure }
            return nil
        }
        let count = n * outputChannels
        let pcm = queue.withUnsafeBufferPointer { all in
            PCMEncoding.encode(UnsafeBufferPointer(rebasing: all[queueHead..<(queueHead + count)]), as: output.sampleFormat)
        }
        queueHead += count
        if queueHead >= 65536 || queueHead == queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        let chunk = AudioChunk(firstFrame: delivered, format: output, pcm: pcm)
        delivered += UInt64(n)
        return chunk
    }

    /// Decodes until `frames` output frames are queued or the source ends — for a stream, or until some are queued and
    /// no more bytes have arrived: what arrived is handed out now, not after the wait for more (a stalled server's
    /// last bytes were held until the stall timeout, too late to be played).
    func fill(atLeast frames: Int) throws(AudioInputError) {
        while queuedFrames < frames && !sourceDone {
            if queuedFrames > 0, let network, network.available < Int64(streamBytesPerFrame ?? 1) { return }
            do {
                try decodeBlock()
            } catch {
                // The frames already decoded are the source's too: they go out first (with the resampler's tail).
                sourceDone = true
                if let resampler, let tail = try? resampler.flush() {
                    append(ChannelMap.map(tail, from: sourceChannels, to: outputChannels, stage: .up))
                }
                guard queuedFrames > 0 else { throw error }
                pendingError = error
            }
        }
    }

    private func decodeBlock() throws(AudioInputError) {
        guard let file else { sourceDone = true; return }
        var frames = Self.blockFrames
        if let bytes = streamBytesPerFrame, let network {
            // A PCM stream: the whole frames that have arrived (at least one: then it waits for it), so a block is
            // never held waiting for bytes that may not come.
            frames = Int(max(1, min(Int64(Self.blockFrames), network.available / Int64(bytes))))
        }
        let got = readBuffer.withUnsafeMutableBufferPointer { sf_readf_double(file, $0.baseAddress, Int64(frames)) }
        if got <= 0 {
            try checkReadError()
            try checkLength()
            if let resampler {
                append(ChannelMap.map(try resampler.flush(), from: sourceChannels, to: outputChannels, stage: .up))
            }
            sourceDone = true
            return
        }
        decodedSourceFrames += got
        var samples = Array(readBuffer[0..<(Int(got) * sourceChannels)])
        samples = ChannelMap.map(samples, from: sourceChannels, to: outputChannels, stage: .down)
        if let resampler { samples = try resampler.process(samples) }
        append(ChannelMap.map(samples, from: sourceChannels, to: outputChannels, stage: .up))
        // A read that failed part of the way (a FLAC frame that does not decode inside the block: a start not on a
        // frame boundary, an encoder's other block size) returns the frames before it with the error set, and
        // libsndfile clears the error at the next read, which then only finds the end: the failure is taken here.
        try checkDecoderError()
    }

    private func append(_ samples: [Double]) {
        queue.append(contentsOf: samples)
    }

    /// A source whose header counts its frames exactly (a FLAC file's STREAMINFO; over HTTP, a WAV, AIFF or FLAC
    /// header) and that ends before them was cut: libFLAC ends a cut file quietly, and a server that closes a response
    /// with no Content-Length early looks like its end to the transfer. (A cut WAV or AIFF file fails in `open`; Ogg
    /// and MP3 lengths are estimates, and over HTTP unknown.) Headers of live streams that announce a placeholder
    /// length (hours of audio) are not held to it.
    private func checkLength() throws(AudioInputError) {
        guard countsFramesExactly, let frames = description.frames, frames < Self.placeholderFrames else { return }
        let expected = frames - startFrame
        guard decodedSourceFrames < expected else { return }
        // A local file whose decoding ends before its last bytes is damaged there, not cut.
        if let left = bytesLeft, left > 0 { throw damaged(reason: "the decoder stops there, \(left) bytes before the end of the file") }
        throw truncated
    }

    /// Where the decoding stopped, in seconds of the source.
    private var stoppedAt: String {
        Self.seconds(Double(startFrame + decodedSourceFrames) / Double(max(1, description.sampleRate)))
    }

    /// The source ends before the audio its header announces.
    private var truncated: AudioInputError {
        guard let frames = description.frames else { return AudioInputError(.truncated, "\(name): is truncated: the audio ends at \(stoppedAt) s") }
        let total = Self.seconds(Double(frames) / Double(max(1, description.sampleRate)))
        return AudioInputError(.truncated, "\(name): is truncated: the audio ends at \(stoppedAt) s of the \(total) s its header announces")
    }

    /// The audio data cannot be decoded from `stoppedAt` on.
    private func damaged(reason: String) -> AudioInputError {
        AudioInputError(.corrupt, "\(name): the audio data is damaged at \(stoppedAt) s: \(reason)")
    }

    /// For a local file: the bytes the decoder has not read (0: it read to the end, where a cut file fails; nil for a
    /// stream). libsndfile reads the descriptor in order (a block ahead of the frames decoded), so a failure with
    /// bytes left is damage in the middle.
    private var bytesLeft: Int64? {
        guard let descriptor else { return nil }
        var st = stat()
        let offset = lseek(descriptor, 0, SEEK_CUR)
        guard offset >= 0, fstat(descriptor, &st) == 0 else { return nil }
        return max(0, Int64(st.st_size) - Int64(offset))
    }

    /// Whether `description.frames` is the header's exact count (see `checkLength`).
    private var countsFramesExactly: Bool {
        network != nil || description.container == "FLAC"   // (over HTTP, MPEG and Ogg lengths are nil: `describe`)
    }

    /// Frames beyond which a stream's header count is taken for a live stream's placeholder (2^28: 1.5 h at 48 kHz).
    private static let placeholderFrames: Int64 = 1 << 28

    /// Seconds with one decimal.
    private static func seconds(_ value: Double) -> String {
        let tenths = Int64((value * 10).rounded(.down))
        return "\(tenths / 10).\(tenths % 10)"
    }

    private func checkReadError() throws(AudioInputError) {
        if let error = network?.error { throw error }
        try checkDecoderError()
    }

    /// The decoder's own failure, if the last read had one.
    private func checkDecoderError() throws(AudioInputError) {
        guard let file else { return }
        let code = sf_error(file)
        if code != 0 {
            // A decoder that fails having read a local file to its end ran out of bytes: the file was cut (libFLAC
            // says it "lost sync" either way).
            if bytesLeft == 0 { throw truncated }
            throw AudioInputError(.corrupt, "\(name): the audio data cannot be decoded: \(String(cString: sf_error_number(code)).lowercasedFirst)")
        }
    }
}

/// libsndfile's virtual I/O over an `HTTPByteSource` (the user data).
private let virtualIO = SF_VIRTUAL_IO(
    get_filelen: { _ in HTTPByteSource.unknownLength },
    seek: { offset, whence, context in
        Unmanaged<HTTPByteSource>.fromOpaque(context!).takeUnretainedValue().seek(offset, whence: whence)
    },
    read: { destination, count, context in
        guard let destination, count > 0 else { return 0 }
        return Int64(Unmanaged<HTTPByteSource>.fromOpaque(context!).takeUnretainedValue().read(into: destination, count: Int(count)))
    },
    write: { _, _, _ in 0 },
    tell: { context in Unmanaged<HTTPByteSource>.fromOpaque(context!).takeUnretainedValue().tell() })

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" || $0 == "\0" }).reversed().drop(while: { $0 == " " || $0 == "\t" || $0 == "\0" }).reversed())
    }
}
