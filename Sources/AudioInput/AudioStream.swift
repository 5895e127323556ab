import Speaker
import Synchronization
import Transport
import Support

/// A run of decoded PCM in the stream's output format.
public struct AudioChunk: Sendable, Hashable {
    /// Index of the chunk's first frame among the stream's output frames (0 = the start position).
    public let firstFrame: UInt64
    /// The format of `pcm`: the stream's output format.
    public let format: AudioFormat
    /// Interleaved PCM, little-endian, `format.sampleFormat` (s16le: 2 bytes a sample, s24le: 3), ready for an
    /// `AudioPacket`.
    public let pcm: [UInt8]

    public init(firstFrame: UInt64, format: AudioFormat, pcm: [UInt8]) {
        self.firstFrame = firstFrame
        self.format = format
        self.pcm = pcm
    }

    /// Frames in the chunk.
    public var frameCount: Int { pcm.count / format.bytesPerFrame }

    /// The samples as integers, interleaved (s16le: -32768...32767, s24le: -8388608...8388607).
    public var samples: [Int32] {
        let width = format.sampleFormat.bytesPerSample
        var out = [Int32]()
        out.reserveCapacity(pcm.count / width)
        var i = 0
        while i + width <= pcm.count {
            if width == 2 {
                out.append(Int32(Int16(bitPattern: UInt16(pcm[i]) | UInt16(pcm[i + 1]) << 8)))
            } else {
                let raw = UInt32(pcm[i]) | UInt32(pcm[i + 1]) << 8 | UInt32(pcm[i + 2]) << 16
                out.append(Int32(bitPattern: raw << 8) >> 8)
            }
            i += width
        }
        return out
    }
}

/// An open source, decoded on demand to the output format. One consumer reads it with `next(maxFrames:)` until it
/// returns nil; `close()` ends it early (and aborts a network transfer at once). Decoding runs on Tuneup's blocking
/// pool, never on the cooperative pool.
public final class AudioStream: Sendable {
    /// The source as its container describes it.
    public let source: AudioSourceDescription
    /// The PCM format every chunk has.
    public let output: AudioFormat
    /// The source frame the stream started at (`startAt` × the source's rate, rounded down).
    public let startFrame: Int64

    private let pipeline: Mutex<DecodePipeline?>
    private let network: HTTPByteSource?
    private let stopped = Atomic<Bool>(false)

    init(pipeline: DecodePipeline, output: AudioFormat) {
        self.source = pipeline.description
        self.output = output
        self.startFrame = pipeline.startFrame
        self.network = pipeline.network
        self.pipeline = Mutex(pipeline)
    }

    /// The next chunk of at most `maxFrames` frames (at least one), or nil at the end of the source.
    ///
    /// Throws `.corrupt` for audio data the decoder cannot read, `.stalled` or `.connectionFailed` when a network
    /// source stops, `.cancelled` after `close()` or when the calling task is cancelled — which also ends the stream.
    public func next(maxFrames: Int = 4096) async throws(AudioInputError) -> AudioChunk? {
        guard maxFrames > 0 else { throw AudioInputError(.badOption, "maxFrames must be positive, got \(maxFrames)") }
        guard !stopped.load(ordering: .acquiring) else { throw AudioInputError(.cancelled, "\(source.title): the stream is closed") }
        return try await AudioBlocking.run("audio decode", onCancel: { [self] in stop() }) { [self] () throws(AudioInputError) -> AudioChunk? in
            try pipeline.withLock { (current: inout DecodePipeline?) throws(AudioInputError) -> AudioChunk? in
                guard let current else { throw AudioInputError(.cancelled, "\(source.title): the stream is closed") }
                return try current.next(maxFrames: maxFrames)
            }
        }
    }

    /// Whether decoding is blocked waiting for bytes from the network (false for files).
    package var waitingForNetwork: Bool { network?.isWaiting ?? false }

    /// Ends the stream: aborts a network transfer, then releases the decoder (on the blocking pool). Idempotent.
    public func close() async {
        stop()
        _ = try? await AudioBlocking.run("audio close") { [self] () throws(AudioInputError) -> Bool in
            pipeline.withLock { $0 = nil }
            return true
        }
    }

    private func stop() {
        stopped.store(true, ordering: .releasing)
        network?.abort()
    }

    deinit {
        network?.abort()
        // The decoder's last reference may drop here, on any thread: release it on the blocking pool.
        if let left = pipeline.withLock({ $0.take() }) {
            try? BlockingPool.shared.submit(name: "audio close") { _ = left }
        }
    }
}

/// Blocking work for the audio input on the bounded `BlockingPool`, with typed errors.
enum AudioBlocking {
    static func run<T: Sendable>(
        _ name: String,
        onCancel: @escaping @Sendable () -> Void = {},
        _ body: @escaping @Sendable () throws(AudioInputError) -> T
    ) async throws(AudioInputError) -> T {
        let result: Result<T, AudioInputError>
        do {
            result = try await withTaskCancellationHandler {
                try await Blocking.run(name) { () -> Result<T, AudioInputError> in
                    Result<T, AudioInputError> { () throws(AudioInputError) -> T in try body() }
                }
            } onCancel: {
                onCancel()
            }
        } catch is CancellationError {
            throw AudioInputError(.cancelled, "cancelled")
        } catch {
            throw AudioInputError(.decoderFailed, "cannot run the decoder: \(error)")
        }
        return try result.get()
    }
}
