import Synchronization
import Transport

/// A transport that holds its first send (after the bytes went through) until `release()`, and records every send.
public final class HeldTransport: Transport {
    public let inner: any Transport
    private let state = Mutex((sends: [[UInt8]](), holding: false, released: false, waiter: CheckedContinuation<Void, Never>?.none))
    public init(_ inner: any Transport) { self.inner = inner }
    public var peerDescription: String { inner.peerDescription }
    public var framing: LinkFraming { inner.framing }
    /// Every send so far, in order.
    public var sends: [[UInt8]] { state.withLock { $0.sends } }
    /// Whether the first send is being held.
    public var holding: Bool { state.withLock { $0.holding } }

    public func send(_ bytes: [UInt8]) async throws {
        try await inner.send(bytes)
        let hold = state.withLock { s -> Bool in
            s.sends.append(bytes)
            return s.sends.count == 1 && !s.released
        }
        guard hold else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let go = state.withLock { s -> Bool in
                if s.released { return true }
                s.holding = true
                s.waiter = c
                return false
            }
            if go { c.resume() }
        }
    }

    /// Lets the held send (and every later one) return.
    public func release() {
        let waiter = state.withLock { s in
            s.released = true
            s.holding = false
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    public func receive() async throws -> [UInt8] { try await inner.receive() }
    public func close() async {
        release()
        await inner.close()
    }
}
