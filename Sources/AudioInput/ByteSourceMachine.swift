import Glibc

/// The rules of an `HTTPByteSource` as a value (docs/architecture.md, "State machines as values"): where the transfer
/// is, whether the source failed or its consumer closed it, whether the decoder is still opening it, and the bytes
/// kept around the read position. One mutating function per event, each answering what the shell does (wait, hand
/// out these bytes, stop the transfer); the shell keeps the thread, libcurl or the descriptor, the lock and its
/// condition, and the clock (a stall is an event it reports). Nothing here blocks, reads a clock or traps.
package struct ByteSourceMachine: Sendable {
    /// How much is kept, how far the transfer runs ahead, and the length a stream is said to have.
    package struct Limits: Sendable, Hashable {
        /// Every byte is kept while the decoder opens the source (it seeks back to the start), up to this many.
        package var headerLimit: Int
        /// Once the source is open, bytes behind the read position are dropped in steps of this size.
        package var window: Int
        /// The transfer waits while it is this many bytes ahead of the reader.
        package var ahead: Int
        /// The length libsndfile is told (a stream has none); reads near it are zeros.
        package var unknownLength: Int64

        package init(headerLimit: Int, window: Int, ahead: Int, unknownLength: Int64) {
            (self.headerLimit, self.window, self.ahead, self.unknownLength) = (headerLimit, window, ahead, unknownLength)
        }
    }

    /// The server's response (a descriptor's first bytes or end count as one, without a type).
    package struct Response: Sendable, Hashable {
        package var contentType: String?
        package init(contentType: String?) { self.contentType = contentType }
    }

    /// Where the transfer is.
    package enum Transfer: Sendable, Hashable {
        /// Not started.
        case idle
        /// Started; nothing came yet.
        case connecting
        /// The response came; bytes arrive.
        case receiving(Response)
        /// The transfer ended (the body's end, or a failure), after a response or without one.
        case ended(Response?)
    }

    /// Whether the source still works.
    package enum Health: Sendable, Hashable {
        case ok
        /// The transfer failed (connection, status, stall, not audio, a seek behind what is kept): what arrived before
        /// is still read, then the end; the decoder reports the failure.
        case failed(AudioInputError)
        /// The consumer closed the source: reads end at once. The failure reported: the first one, or "closed".
        case closed(AudioInputError)
    }

    /// Whether the decoder is still opening the source (every byte kept, no reading past what arrived).
    package enum Reader: Sendable, Hashable {
        case opening
        case playing
    }

    /// The answer to `startOutcome`.
    package enum StartOutcome: Sendable, Hashable {
        /// The response, its end or a failure is not there yet.
        case wait
        case ready
        case fail(AudioInputError)
    }

    /// The answer to `offer`.
    package enum Offer: Sendable, Hashable {
        /// Kept: wake the readers.
        case kept
        /// The reader is too far behind: wait (a while, or until it reads) and offer again.
        case holdBack
        /// Refused: the source failed or was closed; the transfer stops.
        case refuse
    }

    /// What a descriptor's reading thread read.
    package enum InputRead: Sendable, Hashable {
        case bytes
        case end
        case failed(AudioInputError)
    }

    /// The answer to `beginRead`.
    package enum ReadStart: Sendable, Hashable {
        /// At the made-up end of a stream: write this many zeros (the position moved past them).
        case zeros(Int)
        /// Nothing to read (the decoder opening the source looked past what arrived).
        case end
        /// Wait until `readable(wanted)`, then `takeRead`.
        case waitUntil(wanted: Int64)
    }

    /// The answer to `takeRead`.
    package enum ReadTake: Sendable, Hashable {
        case end
        /// Copy `count` bytes of `buffer` from `offset`, then `consumed(count)`.
        case copy(offset: Int, count: Int)
    }

    /// What the messages call the source.
    package let name: String
    package let limits: Limits
    package private(set) var transfer: Transfer = .idle
    package private(set) var health: Health = .ok
    package private(set) var reader: Reader = .opening
    /// The bytes kept, from `bufferStart` on; the read position.
    package private(set) var buffer: [UInt8] = []
    package private(set) var bufferStart: Int64 = 0
    package private(set) var position: Int64 = 0

    package init(name: String, limits: Limits) {
        (self.name, self.limits) = (name, limits)
    }

    /// Bytes received so far (kept or dropped).
    package var received: Int64 { bufferStart + Int64(buffer.count) }
    /// Bytes that have arrived and are not read yet.
    package var available: Int64 { max(0, received - position) }
    /// The failure the decoder reports (nil while the source works).
    package var failure: AudioInputError? {
        switch health {
        case .ok: nil
        case let .failed(error), let .closed(error): error
        }
    }
    package var hasResponded: Bool {
        switch transfer {
        case .idle, .connecting, .ended(nil): false
        case .receiving, .ended(.some): true
        }
    }
    package var hasEnded: Bool {
        if case .ended = transfer { return true }
        return false
    }

    // MARK: Events

    /// The consumer starts the source: true when the transfer's thread must be started (only the first time).
    package mutating func start() -> Bool {
        guard transfer == .idle else { return false }
        transfer = .connecting
        return true
    }

    /// Whether `start()` has its answer: the response, the transfer's end or a failure is there.
    package var startSettled: Bool { hasResponded || hasEnded || failure != nil }

    /// What `start()` answers once the response, the transfer's end or a failure is there. A transfer cut right after
    /// its first bytes still hands them over (the decoder plays them, then reports the failure): only a failure before
    /// any body byte fails the start. A text body fails the source.
    package mutating func startOutcome(fromDescriptor: Bool) -> StartOutcome {
        guard startSettled else { return .wait }
        if let failure, buffer.isEmpty || !hasResponded { return .fail(failure) }
        if let type = contentType?.lowercased(), type.hasPrefix("text/") || type.contains("html") {
            let kind = type.split(separator: ";").first.map(String.init) ?? type
            let error = AudioInputError(.notAudio, "\(name): the server sent \(kind), not audio")
            fail(error)
            return .fail(error)
        }
        if hasEnded && buffer.isEmpty {
            return .fail(AudioInputError(.empty, fromDescriptor ? "\(name): is empty (no bytes)" : "\(name): the server sent an empty body"))
        }
        return .ready
    }

    /// The response's media type, once it came.
    package var contentType: String? {
        switch transfer {
        case let .receiving(response), let .ended(response?): response.contentType
        case .idle, .connecting, .ended(nil): nil
        }
    }

    /// The first bytes arrived (with the response's media type). Later calls change nothing.
    package mutating func responded(contentType: String?) {
        switch transfer {
        case .idle, .connecting: transfer = .receiving(Response(contentType: contentType))
        case .receiving, .ended: break
        }
    }

    /// The transfer offers received bytes.
    package mutating func offer<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Offer {
        if failure != nil { return .refuse }
        switch reader {
        case .playing:
            if received - position > Int64(limits.ahead) { return .holdBack }
        case .opening:
            if buffer.count + bytes.count > limits.headerLimit {
                fail(AudioInputError(.notAudio, "\(name): no audio format found in the first \(limits.headerLimit >> 20) MiB"))
                return .refuse
            }
        }
        buffer.append(contentsOf: bytes)
        return .kept
    }

    /// libcurl's transfer ended, completely (`failure` nil) or with the failure its code means (ignored when the source
    /// failed or was closed already).
    package mutating func transferEnded(failure: AudioInputError?) {
        switch transfer {
        case .idle, .connecting: transfer = .ended(nil)
        case let .receiving(response): transfer = .ended(response)
        case .ended: break
        }
        if let failure { fail(failure) }
    }

    /// The descriptor's thread read something: true when it stops reading (the source ended, failed, or was closed).
    package mutating func inputRead(_ read: InputRead) -> Bool {
        if self.failure != nil { return true }
        switch read {
        case .bytes:
            return false
        case .end:
            responded(contentType: nil)
            transferEnded(failure: nil)
            return true
        case let .failed(error):
            fail(error)
            return true
        }
    }

    /// The decoder opened the source: from now on only a window behind the read position is kept.
    package mutating func finishOpening() {
        reader = .playing
        trim()
    }

    /// The consumer closes the source (any time, any number of times).
    package mutating func abort() {
        switch health {
        case .ok: health = .closed(AudioInputError(.cancelled, "\(name): the stream was closed"))
        case let .failed(error): health = .closed(error)
        case .closed: break
        }
    }

    /// The source fails (the first failure is the one reported).
    package mutating func fail(_ error: AudioInputError) {
        if case .ok = health { health = .failed(error) }
    }

    /// No byte came for `seconds` while a reader waited.
    package mutating func stalled(seconds: Double) -> AudioInputError {
        let error = AudioInputError(.stalled, "\(name) sent nothing for \(seconds) s")
        fail(error)
        return error
    }

    /// libsndfile reads `count` bytes (count > 0).
    package mutating func beginRead(count: Int) -> ReadStart {
        if position >= limits.unknownLength - Int64(limits.headerLimit) {
            // The made-up end of a stream (mpg123 peeks at the last 128 bytes for an ID3v1 tag and refuses a source
            // whose peek fails): zeros there, which are no tag. The stream's real end still ends reads.
            let n = Int(min(Int64(count), max(0, limits.unknownLength - position)))
            position += Int64(n)
            return .zeros(n)
        }
        // While the decoder opens the source it sees only what has arrived: a jump past it (the WAV parser looks for
        // chunks after the audio data) finds the end at once instead of waiting for the whole body.
        if reader == .opening && position > received { return .end }
        // A read is short only at the end, as a file's is; the transfer never runs further ahead than `ahead`.
        return .waitUntil(wanted: position + Int64(min(count, limits.ahead)))
    }

    /// Whether a read waiting for `wanted` bytes may go on: they arrived, or the transfer ended or failed.
    package func readable(_ wanted: Int64) -> Bool {
        received >= wanted || hasEnded || failure != nil
    }

    /// After the wait: what the read hands out. A failed transfer still hands over every byte that arrived before the
    /// failure; only the consumer's close ends reads at once. A position behind what is kept fails the source.
    package mutating func takeRead(count: Int) -> ReadTake {
        if case .closed = health { return .end }
        guard position >= bufferStart else {
            fail(AudioInputError(.corrupt, "\(name): the decoder seeks back to byte \(position), which a stream no longer holds"))
            return .end
        }
        guard position < received else { return .end }
        let offset = Int(position - bufferStart)
        return .copy(offset: offset, count: min(count, buffer.count - offset))
    }

    /// The read copied `count` bytes.
    package mutating func consumed(_ count: Int) {
        position += Int64(count)
        trim()
    }

    /// libsndfile's seek: the new position, or -1.
    package mutating func seek(_ offset: Int64, whence: Int32) -> Int64 {
        let target: Int64
        switch whence {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position &+ offset
        case SEEK_END: target = limits.unknownLength &+ offset
        default: return -1
        }
        guard target >= 0 else { return -1 }
        position = target
        return target
    }

    /// Drops what is more than a window behind the read position, in steps of a window (not while opening).
    mutating func trim() {
        guard reader == .playing else { return }
        let keepFrom = max(bufferStart, min(position, received) - Int64(limits.window))
        let drop = Int(keepFrom - bufferStart)
        if drop >= limits.window {
            buffer.removeFirst(drop)
            bufferStart = keepFrom
        }
    }
}
