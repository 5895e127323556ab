import CALSA
import Failure
import Glibc
import Speaker
import Synchronization

/// Errors of the speaker receiver.
public typealias ReceiverError = CodedFailure<ReceiverErrors>

/// The codes of `ReceiverError`.
public enum ReceiverErrors: ErrorDomain {
    public static func category(of code: ReceiverError.Code) -> FailureCategory {
        switch code {
        case .invalidArgument: .usage
        case .libraryMissing: .localFile
        default: .connection
        }
    }
}

extension ErrorCodeIn where Domain == ReceiverError {
    /// The ALSA device does not exist or cannot be opened (busy, no permission).
    public static let deviceUnavailable = Self(rawValue: "device-unavailable")
    /// The device refused the stream's format, or a write failed for good.
    public static let deviceFailed = Self(rawValue: "device-failed")
    /// A bad option (latency, address).
    public static let invalidArgument = Self(rawValue: "invalid-argument")
    /// alsa-lib (Debian's libasound2) is not installed: it is opened when a sound card is first used (CALSA).
    public static let libraryMissing = Self(rawValue: "library-missing")
}

/// One ALSA playback PCM, blocking mode, interleaved writes: opened by name (`default`, `hw:0`, a plugin defined in
/// an asoundrc), set to a stream's format, written to and asked for its position. Every call blocks or may block: it
/// is used by one thread at a time, the receiver's writer thread (or `Blocking.perform` for the check at start).
final class ALSAPCM {
    private let pcm: OpaquePointer
    let device: String
    private(set) var format: AudioFormat?
    /// Frames the device's ring buffer holds.
    private(set) var bufferFrames = 0

    private static let quiet: Void = tuneup_alsa_quiet()

    /// Opens `device` for playback.
    /// - Throws: `ReceiverError.deviceUnavailable` with ALSA's reason; `libraryMissing` without alsa-lib.
    init(device: String) throws(ReceiverError) {
        if let why = tuneup_alsa_load() { throw ReceiverError(.libraryMissing, String(cString: why)) }
        _ = Self.quiet
        var handle: OpaquePointer?
        let rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc >= 0, let handle else {
            throw ReceiverError(.deviceUnavailable, "ALSA device '\(device)' cannot be opened: \(Self.text(rc))")
        }
        pcm = handle
        self.device = device
    }

    deinit { snd_pcm_close(pcm) }

    static func text(_ rc: Int32) -> String { String(cString: snd_strerror(rc)) }

    /// Sets the device to `format` with a ring buffer of about `bufferMicroseconds`; playback starts with the first
    /// frame written (start threshold 1), and an underrun stops it (it is then prepared again by `write`).
    /// - Throws: `ReceiverError.deviceFailed` when the device refuses the format.
    func configure(_ format: AudioFormat, bufferMicroseconds: UInt32) throws(ReceiverError) {
        let sample = format.sampleFormat == .s16le ? SND_PCM_FORMAT_S16_LE : SND_PCM_FORMAT_S24_3LE
        var rc = snd_pcm_set_params(pcm, sample, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(format.channels), format.sampleRate,
                                    1, bufferMicroseconds)
        guard rc >= 0 else { throw ReceiverError(.deviceFailed, "ALSA device '\(device)' cannot play \(format): \(Self.text(rc))") }
        var buffer: snd_pcm_uframes_t = 0, period: snd_pcm_uframes_t = 0
        snd_pcm_get_params(pcm, &buffer, &period)
        bufferFrames = Int(buffer)
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        rc = snd_pcm_sw_params_current(pcm, sw)
        if rc >= 0 { rc = snd_pcm_sw_params_set_start_threshold(pcm, sw, 1) }
        if rc >= 0 { rc = snd_pcm_sw_params(pcm, sw) }
        guard rc >= 0 else { throw ReceiverError(.deviceFailed, "ALSA device '\(device)' refused its start threshold: \(Self.text(rc))") }
        self.format = format
    }

    /// Frames written and not yet played (snd_pcm_delay): the device's own position report. After an underrun the
    /// device is prepared again and 0 is returned; nil when the device failed for good (`lastError`).
    func delay() -> Int? {
        var frames: snd_pcm_sframes_t = 0
        var rc = snd_pcm_delay(pcm, &frames)
        if rc < 0 {
            rc = snd_pcm_recover(pcm, rc, 1)
            guard rc >= 0 else { lastError = Self.text(rc); return nil }
            return 0
        }
        return max(0, Int(frames))
    }

    /// The state is not running (prepared after an underrun, or never started).
    var isRunning: Bool { snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING }

    /// ALSA's text for the last failure.
    private(set) var lastError = ""

    /// Writes `pcm` (whole frames), blocking while the ring buffer is full. An underrun is recovered from (the device
    /// is prepared again and the write goes on); returns false when the device failed for good (`lastError`).
    func write(_ bytes: [UInt8]) -> Bool {
        guard let format, !bytes.isEmpty else { return true }
        let bpf = format.bytesPerFrame
        var offset = 0
        return bytes.withUnsafeBytes { raw -> Bool in
            while offset < raw.count {
                let frames = (raw.count - offset) / bpf
                let n = snd_pcm_writei(pcm, raw.baseAddress! + offset, snd_pcm_uframes_t(frames))
                if n < 0 {
                    let rc = snd_pcm_recover(pcm, Int32(n), 1)
                    if rc < 0 { lastError = Self.text(rc); return false }
                    continue
                }
                offset += Int(n) * bpf
            }
            return true
        }
    }

    /// Plays what is queued to the end, then stops.
    func drain() { snd_pcm_drain(pcm) }

    /// Stops at once, dropping what is queued.
    func drop() { snd_pcm_drop(pcm) }
}
