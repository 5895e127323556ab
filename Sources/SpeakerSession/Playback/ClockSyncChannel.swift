import Speaker
import Synchronization
import Transport

/// The controller's side of clock sync over UDP (protocol version 4, docs/speaker-protocol.md §6.1): one UDP socket
/// with kernel receive timestamps for every member of a player. A request goes to the speaker's control port number
/// (UDP) with t1 read just before it is sent (`UDPSocket.trySend`); the reply's t4 is the kernel's receive time when
/// the player's timeline is CLOCK_MONOTONIC, so neither the speaker's nor this process's scheduling (the reactor's
/// wake, a pool thread, the actor) lies inside a leg — only the two sends, which take the same path.
final class ClockSyncChannel: Sendable {
    private struct Key: Hashable {
        var t1: UInt64
        var port: UInt16
    }

    private struct Waiting {
        var continuation: CheckedContinuation<ClockSample?, Never>
        var timer: SessionTimer?
    }

    private let socket: UDPSocket
    private let waiting = Mutex<[Key: Waiting]>([:])
    private let receiver = Mutex<Task<Void, Never>?>(nil)
    private let clock: PlayerClock
    private let tap: SpeakerDatagramTap?

    /// Replies answered and exchanges that got none in time, over the channel's life.
    var counts: (answered: UInt64, unanswered: UInt64) { tally.withLock { $0 } }
    private let tally = Mutex<(answered: UInt64, unanswered: UInt64)>((0, 0))

    /// A channel on a socket of its own, timed on `clock` (t1, t4 when the kernel's cannot be used, the timeouts).
    /// - Throws: `TransportError` when no UDP socket can be opened.
    init(clock: PlayerClock, tap: SpeakerDatagramTap? = nil) throws(TransportError) {
        socket = try UDPSocket.bind(host: "0.0.0.0", port: 0, receiveTimestamps: true)
        self.clock = clock
        self.tap = tap
        let task = Task { [socket, weak self] in
            while !Task.isCancelled {
                guard let datagram = try? await socket.receive() else { return }
                self?.received(datagram)
            }
        }
        receiver.withLock { $0 = task }
    }

    /// One exchange with the speaker whose clock port is `host:port`: the sample, or nil when no reply came within
    /// `timeout` (or the request could not be sent).
    func exchange(host: String, port: UInt16, timeout: Duration) async -> ClockSample? {
        let now = clock.now
        return await withCheckedContinuation { (continuation: CheckedContinuation<ClockSample?, Never>) in
            var key: Key?
            let sent: Bool
            do {
                sent = try socket.trySend(toHost: host, port: port) {
                    let t1 = now()
                    let k = Key(t1: t1, port: port)
                    key = k
                    waiting.withLock { $0[k] = Waiting(continuation: continuation, timer: nil) }
                    let request = ClockDatagram.request(t1: t1).encode()
                    tap?(SpeakerDatagram(kind: .clock, host: host, port: port, outbound: true, bytes: request))
                    return request
                }
            } catch {
                sent = false
            }
            guard let key else {
                continuation.resume(returning: nil)
                return
            }
            guard sent else {
                waiting.withLock { $0.removeValue(forKey: key) }?.continuation.resume(returning: nil)
                return
            }
            let timer = clock.schedule(after: timeout) { [weak self] in self?.expire(key) }
            let answered = waiting.withLock { w -> Bool in
                guard w[key] != nil else { return true }
                w[key]!.timer = timer
                return false
            }
            if answered { timer.cancel() }
        }
    }

    private func received(_ datagram: UDPDatagram) {
        // t4: the kernel's receive time on a monotonic timeline, else the timeline's time now.
        let t4 = clock.isMonotonic ? datagram.receivedAt ?? clock.now() : clock.now()
        tap?(SpeakerDatagram(kind: .clock, host: datagram.host, port: datagram.port, outbound: false, bytes: datagram.bytes))
        guard case let .reply(reply)? = try? ClockDatagram.decode(datagram.bytes) else { return }
        guard let entry = waiting.withLock({ $0.removeValue(forKey: Key(t1: reply.t1, port: datagram.port)) }) else { return }
        entry.timer?.cancel()
        tally.withLock { $0.answered += 1 }
        entry.continuation.resume(returning: ClockSample(reply, receivedAt: t4))
    }

    private func expire(_ key: Key) {
        guard let entry = waiting.withLock({ $0.removeValue(forKey: key) }) else { return }
        tally.withLock { $0.unanswered += 1 }
        entry.continuation.resume(returning: nil)
    }

    /// Closes the socket; exchanges under way end with nil.
    func close() {
        receiver.withLock { $0 }?.cancel()
        socket.close()
        let pending = waiting.withLock { w in defer { w = [:] }; return w }
        for entry in pending.values {
            entry.timer?.cancel()
            entry.continuation.resume(returning: nil)
        }
    }
}
