import Foundation
import Synchronization

/// A page's state as named sections (`tile:SLOT`, `totals`, `pareto`, `units`, ...), each with a version, and the
/// pages connected to it.
///
/// Whoever changes the state (a station's event handler, the line's refresh timer) only swaps values under a lock
/// and wakes the subscribers: nothing is encoded or sent on its path. Each connected page has a cursor (the version
/// of each section it was sent) and a wake-up stream that holds at most one pending wake-up, so a page that reads
/// slowly gets one message with every section changed since its last one (coalesced), never a queue, and the
/// writer never waits for it.
public final class Sections: Sendable {
    fileprivate struct Entry {
        var version: Int
        var value: any Encodable & Sendable
    }

    fileprivate struct State {
        var seq = 0
        /// How many changes (station events, refreshes) the state has taken.
        var changes = 0
        var order: [String] = []
        var entries: [String: Entry] = [:]
        var nextSubscriber = 0
        var subscribers: [Int: AsyncStream<Void>.Continuation] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Edits the sections under the lock (keep it short: no I/O, no encoding), then wakes every connected page.
    public func update(_ body: (inout Editor) -> Void) {
        let wake: [AsyncStream<Void>.Continuation] = state.withLock { s in
            // The state is moved into the editor and back (not copied: no copy-on-write of its dictionaries).
            var editor = Editor(state: State())
            swap(&editor.state, &s)
            body(&editor)
            swap(&editor.state, &s)
            s.changes += 1
            return Array(s.subscribers.values)
        }
        for w in wake { w.yield(()) }
    }

    /// Changes to the sections, made inside `update`.
    public struct Editor {
        fileprivate var state: State

        /// Sets a section (a new version, whether or not the value differs).
        public mutating func set(_ key: String, _ value: any Encodable & Sendable) {
            state.seq += 1
            if state.entries[key] == nil { state.order.append(key) }
            state.entries[key] = Entry(version: state.seq, value: value)
        }

        /// Sets a section only when its value differs from the one it holds.
        public mutating func setIfChanged<T: Encodable & Sendable & Equatable>(_ key: String, _ value: T) {
            if let old = state.entries[key]?.value as? T, old == value { return }
            set(key, value)
        }

        /// The value of a section, when it is a `T`.
        public func get<T>(_ key: String, as: T.Type = T.self) -> T? { state.entries[key]?.value as? T }

        /// The keys of the sections, in the order they were first set.
        public var keys: [String] { state.order }
    }

    /// The changes taken so far.
    public var changes: Int { state.withLock { $0.changes } }

    /// How many pages are connected.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// A connected page: its wake-ups (at most one pending) and its id for `unsubscribe`.
    public func subscribe() -> (id: Int, wakeups: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield(())  // the first message: everything
        let id = state.withLock { s in
            s.nextSubscriber += 1
            s.subscribers[s.nextSubscriber] = continuation
            return s.nextSubscriber
        }
        return (id, stream)
    }

    public func unsubscribe(_ id: Int) {
        let continuation = state.withLock { $0.subscribers.removeValue(forKey: id) }
        continuation?.finish()
    }

    /// Ends every page's stream (the server stops).
    public func finishAll() {
        let all = state.withLock { s in defer { s.subscribers = [:] }; return Array(s.subscribers.values) }
        for c in all { c.finish() }
    }

    /// One JSON message with every section changed since `cursor` (all of them for an empty cursor), and the
    /// cursor moved on; nil when nothing changed.
    ///
    /// `{"seq":N,"changes":K,"sections":{"KEY":VALUE,...}}`: `changes` counts the changes the state has taken (a
    /// client knows which station event it has seen by it).
    public func message(since cursor: inout [String: Int]) -> String? {
        let (picked, seq, changes): ([(String, any Encodable & Sendable)], Int, Int) = state.withLock { s in
            var picked: [(String, any Encodable & Sendable)] = []
            for key in s.order {
                guard let entry = s.entries[key], (cursor[key] ?? 0) < entry.version else { continue }
                cursor[key] = entry.version
                picked.append((key, entry.value))
            }
            return (picked, s.seq, s.changes)
        }
        guard !picked.isEmpty else { return nil }
        // Encoding happens here, on the page's own task, outside the lock.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        var text = "{\"seq\":\(seq),\"changes\":\(changes),\"sections\":{"
        var first = true
        for (key, value) in picked {
            guard let data = try? encoder.encode(value), let keyData = try? encoder.encode(key) else { continue }
            if !first { text += "," }
            first = false
            text += String(decoding: keyData, as: UTF8.self) + ":" + String(decoding: data, as: UTF8.self)
        }
        return text + "}}"
    }

    /// Everything, for the page's first load.
    public func fullMessage() -> String {
        var cursor: [String: Int] = [:]
        return message(since: &cursor) ?? "{\"seq\":0,\"changes\":0,\"sections\":{}}"
    }
}
