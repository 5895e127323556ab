import CCurl
import Glibc
import Transport

/// The body of one HTTP(S) GET, fetched by libcurl on a thread of its own and read by libsndfile through its virtual
/// I/O as if it were a file: a position that moves forward, short backward seeks inside what is kept, and no known
/// end (a live stream has none).
///
/// While the decoder opens the source every byte is kept (it seeks back to the start after sniffing the format), up
/// to `headerLimit`; after `finishOpening()` only `window` bytes behind the read position are. The transfer runs at
/// most `ahead` bytes ahead of the reader (libcurl's write waits), so a slow consumer holds memory constant. A reader
/// that waits longer than the stall timeout for a byte fails the transfer with `.stalled`.
final class HTTPByteSource: @unchecked Sendable {
    /// The length libsndfile is told (a stream's is unknown): 1 PiB, far beyond any stream, small enough for mpg123's
    /// arithmetic. Reads near it end the stream (mpg123 peeks at the end for an ID3v1 tag).
    static let unknownLength: Int64 = 1 << 50
    static let headerLimit = 16 << 20
    static let window = 1 << 20
    static let ahead = 4 << 20

    /// What the messages call the source: the URL, or "standard input".
    let url: String
    /// A descriptor read instead of an HTTP transfer (standard input: a pipe), not closed here.
    private let descriptor: Int32?
    private let connectTimeout: Duration
    private let stallTimeout: Duration
    private let gate = ConditionLock()

    // Guarded by `gate`.
    private var buffer: [UInt8] = []
    private var bufferStart: Int64 = 0
    private var position: Int64 = 0
    private var keepAll = true
    private var responded = false
    private var finished = false
    private var aborted = false
    /// `abort()` was called: the consumer is done, nothing more is read.
    private var closedByConsumer = false
    private var failure: AudioInputError?
    private var status = 0
    private var contentType: String?
    private var started = false
    /// Readers blocked in `waitLocked` now.
    private var waiters = 0
    /// The easy handle, touched only by the transfer thread.
    private var handle: UnsafeMutableRawPointer?

    init(url: String, options: AudioInputOptions) {
        self.url = url
        self.descriptor = nil
        self.connectTimeout = options.connectTimeout
        self.stallTimeout = options.stallTimeout
    }

    /// The bytes of an open descriptor (standard input), read on a thread of its own as the transfer's are; its end
    /// is the stream's end, a read error the stream's failure (`.fileUnreadable`).
    init(descriptor: Int32, name: String, options: AudioInputOptions) {
        self.url = name
        self.descriptor = descriptor
        self.connectTimeout = options.connectTimeout
        self.stallTimeout = options.stallTimeout
    }

    deinit { abort() }

    private var received: Int64 { bufferStart + Int64(buffer.count) }

    // MARK: - The consumer's side

    /// Starts the transfer and waits for the response (its status and first body bytes, or its end). Throws for a
    /// failed connection, an error status, a text body, an empty body or a stall. Blocks: call on the blocking pool.
    func start() throws(AudioInputError) {
        if descriptor == nil { try AudioLibraries.requireCurl() }
        let spawned = gate.withLock { () -> Bool in
            guard !started else { return false }
            started = true
            return true
        }
        if spawned {
            do {
                if let descriptor {
                    try DedicatedThread.spawn(name: "tuneup-stdin") { [self] in readDescriptor(descriptor) }
                } else {
                    try DedicatedThread.spawn(name: "tuneup-http") { [self] in transfer() }
                }
            } catch {
                throw AudioInputError(.decoderFailed, "\(url): cannot start the transfer: \(error.message)")
            }
        }
        try gate.withLock { () throws(AudioInputError) in
            try waitLocked(until: { responded || finished || failure != nil })
            // A transfer cut right after its first bytes (a race with this wait) still hands over what arrived: the
            // decoder plays it and then reports the failure. Only a failure before any body byte fails the start.
            if let failure, buffer.isEmpty || !responded { throw failure }
            if let type = contentType?.lowercased(), type.hasPrefix("text/") || type.contains("html") {
                let kind = type.split(separator: ";").first.map(String.init) ?? type
                let error = AudioInputError(.notAudio, "\(url): the server sent \(kind), not audio")
                fail(error)
                throw error
            }
            if finished && buffer.isEmpty {
                throw AudioInputError(.empty, descriptor == nil ? "\(url): the server sent an empty body" : "\(url): is empty (no bytes)")
            }
        }
    }

    /// The first bytes of the body (at most `count`), for sniffing the format.
    func head(_ count: Int) -> [UInt8] {
        gate.withLock { bufferStart == 0 ? Array(buffer.prefix(count)) : [] }
    }

    /// The decoder has opened the source: from now on only a window behind the read position is kept.
    func finishOpening() {
        gate.withLock {
            keepAll = false
            trimLocked()
            gate.broadcast()
        }
    }

    /// The failure that ended the transfer, if any (a stall, a lost connection), for the decoder to report.
    var error: AudioInputError? { gate.withLock { failure } }

    /// Stops the transfer and wakes every waiter; reads then end. Idempotent, any thread.
    func abort() {
        gate.withLock {
            aborted = true
            closedByConsumer = true
            if failure == nil { failure = AudioInputError(.cancelled, "\(url): the stream was closed") }
            gate.broadcast()
        }
    }

    /// libsndfile's read: blocks until `count` bytes at the position have arrived, the body ends, or it fails.
    ///
    /// A read is short only at the end, as a file's is: libsndfile's virtual I/O divides the byte count by the item
    /// size and does not read again, so a short read in the middle of a sample (or of a frame) would drop it and
    /// shift every sample after it.
    func read(into destination: UnsafeMutableRawPointer, count: Int) -> Int {
        guard count > 0 else { return 0 }
        return gate.withLock { () -> Int in
            if position >= Self.unknownLength - Int64(Self.headerLimit) {
                // The made-up end of a stream (mpg123 peeks at the last 128 bytes for an ID3v1 tag and refuses a
                // source whose peek fails): zeros there, which are no tag. The stream's real end still ends reads.
                let n = Int(min(Int64(count), max(0, Self.unknownLength - position)))
                destination.initializeMemory(as: UInt8.self, repeating: 0, count: n)
                position += Int64(n)
                return n
            }
            // While the decoder opens the source it sees only what has arrived: a jump past it (the WAV parser looks
            // for chunks after the audio data) finds the end at once instead of waiting for the whole body.
            if keepAll && position > received { return 0 }
            let wanted = position + Int64(min(count, Self.ahead))   // the transfer never runs further ahead
            // A transfer that fails (the connection cut, the server stalled) still hands over every byte that arrived
            // before the failure: the decoder plays them, then reads the end and reports the failure (`error`). Only
            // the consumer's own `abort()` ends reads at once.
            try? waitLocked(until: { received >= wanted || finished || failure != nil })
            if closedByConsumer { return 0 }
            guard position >= bufferStart else {
                fail(AudioInputError(.corrupt, "\(url): the decoder seeks back to byte \(position), which a stream no longer holds"))
                return 0
            }
            guard position < received else { return 0 }
            let offset = Int(position - bufferStart)
            let n = min(count, buffer.count - offset)
            buffer.withUnsafeBytes { bytes in
                destination.copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            }
            position += Int64(n)
            trimLocked()
            gate.broadcast()
            return n
        }
    }

    /// libsndfile's seek.
    func seek(_ offset: Int64, whence: Int32) -> Int64 {
        gate.withLock { () -> Int64 in
            let target: Int64
            switch whence {
            case SEEK_SET: target = offset
            case SEEK_CUR: target = position &+ offset
            case SEEK_END: target = Self.unknownLength &+ offset
            default: return -1
            }
            guard target >= 0 else { return -1 }
            position = target
            gate.broadcast()
            return target
        }
    }

    func tell() -> Int64 { gate.withLock { position } }

    /// Bytes that have arrived and are not read yet (ahead of the read position).
    var available: Int64 { gate.withLock { max(0, received - position) } }

    /// Whether a reader is blocked waiting for bytes (for tests that act on a waiting reader).
    var isWaiting: Bool { gate.withLock { waiters > 0 } }

    /// Waits (holding the gate) until `condition`, failing with `.stalled` when no byte arrives for the stall timeout.
    private func waitLocked(until condition: () -> Bool) throws(AudioInputError) {
        waiters += 1
        defer { waiters -= 1 }
        var lastReceived = received
        var deadline = ConditionLock.deadline(after: stallTimeout + (responded ? .zero : connectTimeout))
        while !condition() {
            if aborted, let failure { throw failure }
            if !gate.wait(until: deadline) {
                if received != lastReceived {
                    lastReceived = received
                    deadline = ConditionLock.deadline(after: stallTimeout)
                    continue
                }
                if condition() { break }
                let seconds = Double(stallTimeout.components.seconds) + Double(stallTimeout.components.attoseconds) / 1e18
                let error = AudioInputError(.stalled, "\(url) sent nothing for \(seconds) s")
                fail(error)
                throw error
            }
            if received != lastReceived {
                lastReceived = received
                deadline = ConditionLock.deadline(after: stallTimeout)
            }
        }
    }

    private func fail(_ error: AudioInputError) {
        if failure == nil { failure = error }
        aborted = true
        gate.broadcast()
    }

    private func trimLocked() {
        guard !keepAll else { return }
        let keepFrom = max(bufferStart, min(position, received) - Int64(Self.window))
        let drop = Int(keepFrom - bufferStart)
        if drop >= Self.window {
            buffer.removeFirst(drop)
            bufferStart = keepFrom
        }
    }

    // MARK: - The transfer thread

    private func transfer() {
        HTTPByteSource.globalInit
        guard let curl = curl_easy_init() else {
            gate.withLock { fail(AudioInputError(.decoderFailed, "\(url): libcurl cannot start")) }
            return
        }
        handle = curl
        defer { handle = nil; curl_easy_cleanup(curl) }
        var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let code: CURLcode = errorText.withUnsafeMutableBufferPointer { errorBuffer in
            _ = tuneup_curl_set_string(curl, CURLOPT_URL, url)
            _ = tuneup_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = tuneup_curl_set_string(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            _ = tuneup_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 1)
            _ = tuneup_curl_set_long(curl, CURLOPT_MAXREDIRS, 5)
            _ = tuneup_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            _ = tuneup_curl_set_long(curl, CURLOPT_FAILONERROR, 1)
            _ = tuneup_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, Int(max(1, Self.milliseconds(connectTimeout))))
            _ = tuneup_curl_set_string(curl, CURLOPT_USERAGENT, "tuneup")
            _ = tuneup_curl_set_string(curl, CURLOPT_ACCEPT_ENCODING, "identity")
            _ = tuneup_curl_set_pointer(curl, CURLOPT_ERRORBUFFER, errorBuffer.baseAddress)
            _ = tuneup_curl_set_pointer(curl, CURLOPT_WRITEDATA, me)
            _ = tuneup_curl_set_write_function(curl) { data, size, count, context in
                guard let data, let context else { return 0 }
                let source = Unmanaged<HTTPByteSource>.fromOpaque(context).takeUnretainedValue()
                return source.deliver(UnsafeRawBufferPointer(start: data, count: size * count))
            }
            _ = tuneup_curl_set_pointer(curl, CURLOPT_XFERINFODATA, me)
            _ = tuneup_curl_set_long(curl, CURLOPT_NOPROGRESS, 0)
            _ = tuneup_curl_set_progress_function(curl) { context, _, _, _, _ in
                guard let context else { return 1 }
                let source = Unmanaged<HTTPByteSource>.fromOpaque(context).takeUnretainedValue()
                return source.gate.withLock { source.aborted ? 1 : 0 }
            }
            return curl_easy_perform(curl)
        }
        var httpStatus = 0
        _ = tuneup_curl_get_long(curl, CURLINFO_RESPONSE_CODE, &httpStatus)
        let detail = errorText.cString
        gate.withLock {
            finished = true
            defer { gate.broadcast() }
            guard code != CURLE_OK, !aborted else { return }
            switch code {
            case CURLE_HTTP_RETURNED_ERROR:
                fail(AudioInputError(.httpStatus, "\(url): the server answered HTTP \(httpStatus)"))
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_OPERATION_TIMEDOUT,
                 CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
                let why = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
                fail(AudioInputError(code == CURLE_URL_MALFORMAT ? .badAddress : .connectionFailed, "\(url): \(why.lowercasedFirst)"))
            default:
                let why = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
                fail(AudioInputError(.connectionFailed, "\(url): the transfer failed: \(why.lowercasedFirst)"))
            }
        }
    }

    /// The descriptor's reading thread: blocking reads (this thread's own, never the cooperative pool's) until the
    /// end, a read error, or the consumer's abort.
    private func readDescriptor(_ fd: Int32) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            let code = errno
            let stop = gate.withLock { () -> Bool in
                if aborted { return true }
                if n < 0 {
                    fail(AudioInputError(.fileUnreadable, "\(url): reading failed: \(POSIX.describe(code))"))
                    return true
                }
                if n == 0 {
                    responded = true
                    finished = true
                    gate.broadcast()
                    return true
                }
                return false
            }
            if stop { return }
            let kept = chunk.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            if kept < n { return }
        }
    }

    /// libcurl's write callback: keeps the bytes, waits while the reader is far behind. Returning less than the count
    /// aborts the transfer.
    private func deliver(_ bytes: UnsafeRawBufferPointer) -> Int {
        gate.withLock { () -> Int in
            if !responded {
                responded = true
                var type: UnsafePointer<CChar>?
                if handle != nil, tuneup_curl_get_string(handle, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK, let type {
                    contentType = String(cString: type)
                }
            }
            while !aborted && !keepAll && received - position > Int64(Self.ahead) {
                _ = gate.wait(until: ConditionLock.deadline(after: .seconds(1)))
            }
            if aborted { return 0 }
            if keepAll && buffer.count + bytes.count > Self.headerLimit {
                fail(AudioInputError(.notAudio, "\(url): no audio format found in the first \(Self.headerLimit >> 20) MiB"))
                return 0
            }
            buffer.append(contentsOf: bytes)
            gate.broadcast()
            return bytes.count
        }
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()
}

extension [CChar] {
    /// The text up to the first NUL.
    var cString: String {
        String(decoding: prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension String {
    var lowercasedFirst: String {
        guard let first else { return self }
        return first.lowercased() + dropFirst()
    }
}

/// A pthread mutex with its condition variable, for the threads that block on a byte source.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Wakes every waiter (call holding the lock).
    func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits (holding the lock) for a broadcast or the deadline; false when the deadline passed.
    func wait(until deadline: timespec) -> Bool {
        var d = deadline
        return pthread_cond_timedwait(condition, mutex, &d) != ETIMEDOUT
    }

    /// A CLOCK_MONOTONIC time `duration` from now.
    static func deadline(after duration: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, atto) = duration.components
        var nanos = Int64(now.tv_nsec) + atto / 1_000_000_000
        var secs = Int64(now.tv_sec) + seconds + nanos / 1_000_000_000
        nanos %= 1_000_000_000
        if secs < 0 { secs = 0 }
        return timespec(tv_sec: Int(secs), tv_nsec: Int(nanos))
    }
}
