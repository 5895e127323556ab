/// An incremental decoder of SPP frames from a byte stream (sheet §1.6, hardened).
///
/// Feed it chunks of any size with `append(_:)` and pull packets with `next()`. It hunts for `FF 5A 00 00`,
/// rejects lengths outside 19...275, verifies the checksum, and on any failure skips one byte and hunts again,
/// so a valid frame right after garbage or inside a corrupted one is still found. Every skipped byte is counted
/// in `statistics`. It never traps on any input.
///
/// Zero-copy: chunks are scanned where they are, and a decoded packet's buffer is a slice of the chunk it arrived
/// in. Only a frame split across two chunks is copied (at most 275 + 275 bytes), so once `next()` has returned nil
/// the decoder holds at most one partial frame (< 275 bytes) plus the last chunk it was given.
public struct SPPStreamDecoder: Sendable {
    /// What the decoder has seen so far.
    public struct Statistics: Sendable, Hashable {
        /// Frames decoded.
        public var frames = 0
        /// Bytes skipped while hunting for a frame start (garbage, bad lengths, bad checksums).
        public var discardedBytes = 0
        /// Candidate frames rejected because their checksum did not match.
        public var checksumErrors = 0
        /// Candidate frames rejected because their length field was outside 19...275.
        public var lengthErrors = 0
        @inlinable public init() {}
    }

    /// Counters of decoded frames and dropped bytes.
    public var statistics: Statistics { counters }
    @usableFromInline var counters = Statistics()

    // Pending bytes are carry[carryIndex...] followed by chunk[chunkIndex...].
    // In carry mode, carry[0..<carryLimit] is a partial frame left from earlier chunks and the rest of carry is a
    // copy of up to 275 bytes taken from the front of the current chunk (already removed from it by chunkIndex).
    // Frame starts below carryLimit are decoded from carry; once the scan passes carryLimit, the copied bytes are
    // given back to the chunk and decoding continues in place.
    @usableFromInline var carry: [UInt8] = []
    @usableFromInline var carryIndex = 0
    @usableFromInline var carryLimit = 0
    @usableFromInline var chunk: ArraySlice<UInt8> = []
    @usableFromInline var chunkIndex = 0

    public init() {}

    /// Bytes held but not yet decoded or discarded.
    public var bufferedByteCount: Int { (carry.count - carryIndex) + (chunk.endIndex - chunkIndex) }

    /// Adds received bytes. The decoder keeps a reference to `bytes` instead of copying it.
    public mutating func append(_ bytes: ArraySlice<UInt8>) {
        guard !bytes.isEmpty else { return }
        if chunkIndex < chunk.endIndex {
            // Not drained: everything pending becomes carry.
            carry.removeSubrange(0..<carryIndex)
            carry.append(contentsOf: chunk[chunkIndex...])
            carryIndex = 0
            chunkIndex = chunk.endIndex
        } else if carryIndex > 0 {
            carry.removeSubrange(0..<carryIndex)
            carryIndex = 0
        }
        chunk = bytes
        chunkIndex = bytes.startIndex
        if !carry.isEmpty {
            carryLimit = carry.count
            let take = min(bytes.count, SPPFraming.maxFrameLength)
            carry.append(contentsOf: bytes.prefix(take))
            chunkIndex += take
        }
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: [UInt8]) { append(bytes[...]) }

    /// Adds received bytes (copied once).
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 { append(Array(bytes)[...]) }

    /// Decodes the next frame that starts in the carry buffer (a frame split across chunks). Returns nil when the
    /// carry is empty, is waiting for more bytes (carry stays non-empty), or has been left for the chunk (carry
    /// becomes empty and the bytes it borrowed from the chunk are given back).
    @inlinable @inline(__always)
    mutating func nextInCarry(_ stats: inout Statistics) -> (start: Int, length: Int)? {
        guard !carry.isEmpty else { return nil }
        var i = carryIndex
        let found = carry.withUnsafeBytes { Self.scan($0, from: &i, startLimit: carryLimit, statistics: &stats) }
        carryIndex = i
        if let found { return found }
        if i >= carryLimit {
            chunkIndex -= carry.count - i
            carry.removeAll(keepingCapacity: true)
            carryIndex = 0
            carryLimit = 0
        }
        return nil
    }

    /// After the chunk has no further complete frame: keep its partial tail (< 275 bytes) and release it.
    @usableFromInline
    mutating func finishChunk() {
        if chunkIndex < chunk.endIndex {
            carry.append(contentsOf: chunk[chunkIndex...])
            carryLimit = carry.count
        }
        chunk = []
        chunkIndex = 0
    }

    /// Returns the next complete, valid packet, or nil when more bytes are needed.
    /// The packet's buffer shares the received chunk (no copy).
    public mutating func next() -> Packet? {
        var stats = counters
        defer { counters = stats }
        if let (start, length) = nextInCarry(&stats) {
            return Self.packet(in: carry[...], frameAt: start, length: length)
        }
        guard carry.isEmpty else { return nil }
        let base = chunk.startIndex
        var i = chunkIndex - base
        let found = chunk.withUnsafeBytes { Self.scan($0, from: &i, startLimit: $0.count, statistics: &stats) }
        chunkIndex = i + base
        if let (start, length) = found {
            return Self.packet(in: chunk, frameAt: start + base, length: length)
        }
        finishChunk()
        return nil
    }

    /// Calls `body` with the header and a borrowed view of the buffer of every complete frame available,
    /// without allocating or reference counting per frame. The view is valid only during the call; copy what
    /// must outlive it. This is the fastest way through a stream (captures, analysis, the benchmark).
    @inlinable
    public mutating func forEachFrame(_ body: (Header, borrowing Span<UInt8>) throws -> Void) rethrows {
        var stats = counters
        defer { counters = stats }
        while let (start, length) = nextInCarry(&stats) {
            try carry.withUnsafeBufferPointer { try Self.visit($0, start, length, body) }
        }
        guard carry.isEmpty else { return }
        let base = chunk.startIndex
        var i = chunkIndex - base
        defer {
            chunkIndex = i + base
            finishChunk()
        }
        try chunk.withUnsafeBufferPointer { p in
            let raw = UnsafeRawBufferPointer(p)
            while let (start, length) = Self.scan(raw, from: &i, startLimit: raw.count, statistics: &stats) {
                try Self.visit(p, start, length, body)
            }
        }
    }

    @inlinable @inline(__always)
    static func visit(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ length: Int, _ body: (Header, borrowing Span<UInt8>) throws -> Void
    ) rethrows {
        let header = Header(unchecked: UnsafeRawBufferPointer(bytes), at: start + SPPFraming.transportHeaderSize)
        let first = start + SPPFraming.transportHeaderSize + Header.size
        try body(header, bytes.span.extracting(first..<(start + length - 1)))
    }

    /// Decodes every complete packet in the bytes added so far.
    public mutating func decodeAll() -> [Packet] {
        var packets: [Packet] = []
        while let p = next() { packets.append(p) }
        return packets
    }

    /// Gives up on a partially received frame: skips its first byte and hunts again.
    ///
    /// A corrupted length field can make the decoder wait for bytes that will never come; a session calls this
    /// when its receive times out so that frames already buffered behind the bogus start are found.
    /// Returns whether anything was skipped.
    @discardableResult
    public mutating func abandonPartialFrame() -> Bool {
        if carryIndex < carry.count {
            carryIndex += 1
        } else if chunkIndex < chunk.endIndex {
            chunkIndex += 1
        } else {
            return false
        }
        counters.discardedBytes += 1
        return true
    }

    private static func packet(in bytes: ArraySlice<UInt8>, frameAt start: Int, length: Int) -> Packet {
        let header = bytes.withUnsafeBytes { Header(unchecked: $0, at: start - bytes.startIndex + SPPFraming.transportHeaderSize) }
        let bufferStart = start + SPPFraming.transportHeaderSize + Header.size
        return Packet(uncheckedHeader: header, buffer: bytes[bufferStart..<(start + length - 1)])
    }

    /// Finds the next valid frame starting at or after `index` and before `startLimit`; returns its offset and
    /// length and moves `index` past it. Returns nil with `index < startLimit` when a frame start is waiting
    /// for more bytes, or with `index == startLimit` when no start remains below the limit.
    @inlinable @inline(__always)
    static func scan(_ b: UnsafeRawBufferPointer, from index: inout Int, startLimit: Int, statistics s: inout Statistics) -> (Int, Int)? {
        let end = b.count
        var i = index
        defer { index = i }
        while i < startLimit {
            let available = end &- i
            if available >= SPPFraming.transportHeaderSize && b.loadUnaligned(fromByteOffset: i, as: UInt32.self) == magicWord {
                // Fast path: a frame start with its length field.
                let length = Int(UInt16(bigEndian: b.loadUnaligned(fromByteOffset: i &+ 4, as: UInt16.self)))
                if length < SPPFraming.minFrameLength || length > SPPFraming.maxFrameLength {
                    s.lengthErrors += 1
                    s.discardedBytes += 1
                    i &+= 1
                    continue
                }
                if available < length { return nil }
                if byteSum(b, from: i, count: length) != 0 {
                    s.checksumErrors += 1
                    s.discardedBytes += 1
                    i &+= 1
                    continue
                }
                let start = i
                i &+= length
                s.frames &+= 1
                return (start, length)
            }
            if b[i] == 0xFF {
                // A start whose magic is wrong, or whose transport header has not fully arrived.
                if available >= 2 && b[i + 1] != 0x5A || available >= 3 && b[i + 2] != 0 || available >= 4 && b[i + 3] != 0
                    || available >= SPPFraming.transportHeaderSize {
                    s.discardedBytes += 1
                    i &+= 1
                    continue
                }
                return nil
            }
            // Hunt for the next magic byte.
            var j = i &+ 1
            while j < startLimit && b[j] != 0xFF { j &+= 1 }
            s.discardedBytes += j &- i
            i = j
        }
        return nil
    }

    /// The wrapping sum of `count` (at least 16) bytes at `start`, sixteen lanes at a time.
    /// Index arithmetic wraps: `start + count <= b.count` is guaranteed by the caller.
    @inlinable @inline(__always)
    static func byteSum(_ b: UnsafeRawBufferPointer, from start: Int, count: Int) -> UInt8 {
        var acc0 = SIMD16<UInt8>()
        var acc1 = SIMD16<UInt8>()
        var acc2 = SIMD16<UInt8>()
        var acc3 = SIMD16<UInt8>()
        var k = start
        let end = start &+ count
        while end &- k >= 64 {
            acc0 &+= b.loadUnaligned(fromByteOffset: k, as: SIMD16<UInt8>.self)
            acc1 &+= b.loadUnaligned(fromByteOffset: k &+ 16, as: SIMD16<UInt8>.self)
            acc2 &+= b.loadUnaligned(fromByteOffset: k &+ 32, as: SIMD16<UInt8>.self)
            acc3 &+= b.loadUnaligned(fromByteOffset: k &+ 48, as: SIMD16<UInt8>.self)
            k &+= 64
        }
        while end &- k >= 16 {
            acc0 &+= b.loadUnaligned(fromByteOffset: k, as: SIMD16<UInt8>.self)
            k &+= 16
        }
        let rest = end &- k
        if rest > 0 {
            // Load the last 16 bytes (overlapping what was summed) and keep only the `rest` new lanes.
            let tail = b.loadUnaligned(fromByteOffset: end &- 16, as: SIMD16<UInt8>.self)
            acc1 &+= tail & tailMask(rest)
        }
        let a = (acc0 &+ acc1) &+ (acc2 &+ acc3)
        let h8 = a.lowHalf &+ a.highHalf
        let h4 = h8.lowHalf &+ h8.highHalf
        let h2 = h4.lowHalf &+ h4.highHalf
        return h2[0] &+ h2[1]
    }

    /// `FF 5A 00 00` read as a little-endian word.
    @inlinable static var magicWord: UInt32 { UInt32(littleEndian: 0x0000_5AFF) }

    /// A mask keeping the last `n` (1...15) lanes of sixteen.
    @inlinable @inline(__always)
    static func tailMask(_ n: Int) -> SIMD16<UInt8> {
        // Built from two 64-bit halves with shifts: no table, no generic SIMD comparison (slow in Swift).
        let bits = UInt64(truncatingIfNeeded: n) &<< 3
        let high: UInt64 = bits >= 64 ? ~0 : ~(~UInt64(0) &>> bits)
        let low: UInt64 = bits > 64 ? ~(~UInt64(0) &>> (bits &- 64)) : 0
        return unsafeBitCast(SIMD2<UInt64>(low, high), to: SIMD16<UInt8>.self)
    }
}
