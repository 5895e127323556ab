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
///
/// The I/O shell of `ByteSourceMachine` (docs/architecture.md, "State machines as values"), which keeps these rules,
/// the transfer's and the source's state and the bytes; the shell keeps the thread (libcurl's transfer or the
/// descriptor's reads), the lock and its condition on which readers and the transfer wait, and the stall clock.
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

    /// The source's rules and bytes (guarded by `gate`).
    private var machine: ByteSourceMachine
    /// Readers blocked in `waitLocked` now (guarded by `gate`).
    private var waiters = 0
    /// The easy handle, touched only by the transfer thread.
    private var handle: UnsafeMutableRawPointer?

    static let limits = ByteSourceMachine.Limits(headerLimit: headerLimit, window: window, ahead: ahead, unknownLength: unknownLength)

    init(url: String, options: AudioInputOptions) {
        self.url = url
        self.descriptor = nil
        self.connectTimeout = options.connectTimeout
        self.stallTimeout = options.stallTimeout
        self.machine = ByteSourceMachine(name: url, limits: Self.limits)
    }

    /// The bytes of an open descriptor (standard input), read on a thread of its own as the transfer's are; its end
    /// is the stream's end, a read error the stream's failure (`.fileUnreadable`).
    init(descriptor: Int32, name: String, options: AudioInputOptions) {
        self.url = name
        self.descriptor = descriptor
        self.connectTimeout = options.connectTimeout
        self.stallTimeout = options.stallTimeout
        self.machine = ByteSourceMachine(name: name, limits: Self.limits)
    }

    deinit { abort() }

    // MARK: - The consumer's side

    /// Starts the transfer and waits for the response (its status and first body bytes, or its end). Throws for a
    /// failed connection, an error status, a text body, an empty body or a stall. Blocks: call on the blocking pool.
    func start() throws(AudioInputError) {
        if descriptor == nil { try AudioLibraries.requireCurl() }
        let spawned = gate.withLock { machine.start() }
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
            let fromDescriptor = descriptor != nil
            try waitLocked(until: { machine.startSettled })
            if case let .fail(error) = machine.startOutcome(fromDescriptor: fromDescriptor) {
                gate.broadcast()
                throw error
            }
        }
    }

    /// The first bytes of the body (at most `count`), for sniffing the format.
    func head(_ count: Int) -> [UInt8] {
        gate.withLock { machine.bufferStart == 0 ? Array(machine.buffer.prefix(count)) : [] }
    }

    /// The decoder has opened the source: from now on only a window behind the read position is kept.
    func finishOpening() {
        gate.withLock {
            machine.finishOpening()
            gate.broadcast()
        }
    }

    /// The failure that ended the transfer, if any (a stall, a lost connection), for the decoder to report.
    var error: AudioInputError? { gate.withLock { machine.failure } }

    /// Stops the transfer and wakes every waiter; reads then end. Idempotent, any thread.
    func abort() {
        gate.withLock {
            machine.abort()
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
            switch machine.beginRead(count: count) {
            case let .zeros(n):
                destination.initializeMemory(as: UInt8.self, repeating: 0, count: n)
                return n
            case .end:
                return 0
            case let .waitUntil(wanted):
                // A failed wait (a stall) has failed the source: the read below hands out what arrived, then the end.
                try? waitLocked(until: { machine.readable(wanted) })
            }
            let taken = machine.takeRead(count: count)
            guard case let .copy(offset, n) = taken else {
                gate.broadcast()
                return 0
            }
            machine.buffer.withUnsafeBytes { bytes in
                destination.copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            }
            machine.consumed(n)
            gate.broadcast()
            return n
        }
    }

    /// libsndfile's seek.
    func seek(_ offset: Int64, whence: Int32) -> Int64 {
        gate.withLock { () -> Int64 in
            let target = machine.seek(offset, whence: whence)
            if target >= 0 { gate.broadcast() }
            return target
        }
    }

    func tell() -> Int64 { gate.withLock { machine.position } }

    /// Bytes that have arrived and are not read yet (ahead of the read position).
    var available: Int64 { gate.withLock { machine.available } }

    /// Whether a reader is blocked waiting for bytes (for tests that act on a waiting reader).
    var isWaiting: Bool { gate.withLock { waiters > 0 } }

    /// Waits (holding the gate) until `condition`, failing with `.stalled` when no byte arrives for the stall timeout.
    private func waitLocked(until condition: () -> Bool) throws(AudioInputError) {
        waiters += 1
        defer { waiters -= 1 }
        var lastReceived = machine.received
        var deadline = ConditionLock.deadline(after: stallTimeout + (machine.hasResponded ? .zero : connectTimeout))
        while !condition() {
            if let failure = machine.failure { throw failure }
            if !gate.wait(until: deadline) {
                if machine.received != lastReceived {
                    lastReceived = machine.received
                    deadline = ConditionLock.deadline(after: stallTimeout)
                    continue
                }
                if condition() { break }
                let seconds = Double(stallTimeout.components.seconds) + Double(stallTimeout.components.attoseconds) / 1e18
                let error = machine.stalled(seconds: seconds)
                gate.broadcast()
                throw error
            }
            if machine.received != lastReceived {
                lastReceived = machine.received
                deadline = ConditionLock.deadline(after: stallTimeout)
            }
        }
    }

    private func fail(_ error: AudioInputError) {
        machine.fail(error)
        gate.broadcast()
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
                return source.gate.withLock { source.machine.failure != nil ? 1 : 0 }
            }
            return curl_easy_perform(curl)
        }
        var httpStatus = 0
        _ = tuneup_curl_get_long(curl, CURLINFO_RESPONSE_CODE, &httpStatus)
        let detail = errorText.cString
        let failure: AudioInputError?
        switch code {
        case CURLE_OK:
            failure = nil
        case CURLE_HTTP_RETURNED_ERROR:
            failure = AudioInputError(.httpStatus, "\(url): the server answered HTTP \(httpStatus)")
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_OPERATION_TIMEDOUT,
             CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            let why = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            failure = AudioInputError(code == CURLE_URL_MALFORMAT ? .badAddress : .connectionFailed, "\(url): \(why.lowercasedFirst)")
        default:
            let why = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            failure = AudioInputError(.connectionFailed, "\(url): the transfer failed: \(why.lowercasedFirst)")
        }
        gate.withLock {
            machine.transferEnded(failure: failure)
            gate.broadcast()
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
            let read: ByteSourceMachine.InputRead = n < 0
                ? .failed(AudioInputError(.fileUnreadable, "\(url): reading failed: \(POSIX.describe(code))"))
                : n == 0 ? .end : .bytes
            let stop = gate.withLock { () -> Bool in
                let stop = machine.inputRead(read)
                if stop { gate.broadcast() }
                return stop
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
            if !machine.hasResponded {
                var type: UnsafePointer<CChar>?
                var contentType: String?
                if handle != nil, tuneup_curl_get_string(handle, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK, let type {
                    contentType = String(cString: type)
                }
                machine.responded(contentType: contentType)
            }
            while true {
                switch machine.offer(bytes) {
                case .holdBack:
                    _ = gate.wait(until: ConditionLock.deadline(after: .seconds(1)))
                case .refuse:
                    gate.broadcast()
                    return 0
                case .kept:
                    gate.broadcast()
                    return bytes.count
                }
            }
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
