import Foundation
import Simulator
import SpeakerSession
import SpeakerSimulator
import Synchronization
import Testing
import TestSupport
import Transport

/// Collects a session's events in the background, for `waitUntil`.
final class EventLog: Sendable {
    private final class Store: Sendable {
        let events = Mutex<[SpeakerEvent]>([])
    }
    private let store = Store()
    private let task: Task<Void, Never>

    init(_ session: SpeakerSession) async {
        let stream = await session.events()
        let store = self.store
        task = Task { for await e in stream { store.events.withLock { $0.append(e) } } }
    }

    var all: [SpeakerEvent] { store.events.withLock { $0 } }

    /// Waits until an event equal to `event` arrived.
    func waitFor(_ event: SpeakerEvent) async throws {
        try await waitUntil("event \(event)", within: 20) { all.contains(event) }
    }

    deinit { task.cancel() }
}

/// One simulated speaker served in process over an in-memory link.
struct InProcessSpeaker {
    let server: SimulatedDeviceServer<SimulatedSpeaker>
    var speaker: SimulatedSpeaker { server.devices[0] }

    init(clock: DACClock = DACClock(), stateFile: SpeakerStateFile? = nil) throws {
        let speaker = SimulatedSpeaker(.init(identity: .simulated(index: 0, seed: 7), clock: clock), stateFile: stateFile)
        speaker.setControlPort(45455)
        server = try SimulatedDeviceServer(devices: [speaker])
    }

    /// A raw link to the speaker.
    func link() throws -> any Transport {
        let (a, b) = InMemoryTransport.pair()
        try server.serve(link: b, onDevice: 0)
        return a
    }

    /// A session (hello done). The in-process speaker answers every request: a long timeout keeps a loaded machine's
    /// delays from looking like a lost reply.
    func session() async throws -> SpeakerSession {
        try await SpeakerSession.open(transport: try link(), address: "in-process", options: RequestOptions(timeout: .seconds(30)))
    }
}

func scratchPath(_ name: String) -> String {
    let dir = (try? TemporaryDirectory.make("tuneup-speaker")) ?? "/nonexistent/tuneup-speaker-could-not-be-made"
    return dir + "/" + name
}

/// What a virtual-time run and its analysis computed (values that need not be Sendable), handed from the blocking
/// executor to the test.
struct Computed<T>: @unchecked Sendable { let value: T }

/// Runs `body` (a playback simulation and its analysis: seconds of computation in a debug build) on `input` off the
/// cooperative pool.
func computed<I, T>(_ input: I, _ body: @escaping @Sendable (I) -> T) async throws -> T {
    let boxed = Computed(value: input)
    return try await offThePool { Computed(value: body(boxed.value)) }.value
}

/// A virtual-time speaker that lost at least `atLeast` packets on the way got every one of them again in time and
/// played the source sample for sample (every frame not played as the source is a counted drift correction).
func expectEveryLossRecovered(_ s: VirtualPlayback.SpeakerResult, _ fidelity: PlaybackAnalysis.Fidelity, atLeast: UInt64,
                              _ report: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let stats = s.log.statistics
    #expect(s.recovery.missing >= atLeast, "\(report)", sourceLocation: sourceLocation)
    #expect(stats.recoveredPackets == s.recovery.missing, "\(report)", sourceLocation: sourceLocation)
    #expect(s.recovery.expired == 0 && stats.lostFrames == 0 && stats.lateFrames == 0, "\(report)", sourceLocation: sourceLocation)
    #expect(fidelity.isExact(given: stats) && fidelity.mismatchedFrames == 0, "\(report)", sourceLocation: sourceLocation)
}
