import BluetoothTransport
import Logging
import Simulator
import Support
import Transport
import Wearable
import WearableRecording
import WearableSimulator

/// Where `tuneup sim wearable` serves its simulated wearable.
public enum SimulatedWearableLink: Sendable, Hashable {
    /// A TCP listener (port 0: a free port).
    case tcp(host: String, port: UInt16)
    /// A pseudo-terminal (usable as serial:PATH).
    case pty
    /// A BLE peripheral on this adapter (hciN or its address): ATT over L2CAP, advertising.
    case ble(adapter: String)
}

extension WearableProfile {
    /// The profile that plays the recording at `path` back (`sim wearable --replay`): its samples and gestures, the
    /// device and sensors of its metadata (without metadata: those of `self`).
    /// - Throws: `RecordingError` (`.unreadable`: a file that cannot be read; `.notARecording`: one that is not a
    ///   recording, is cut short or empty, has nothing to replay, or describes no device Tuneup can be).
    public func replaying(recordingAt path: String) async throws -> WearableProfile {
        let text = try await Blocking.run("replay-read") { () -> Result<String, RecordingError> in
            Result { () throws(RecordingError) in try WearableRecordingContents.text(ofFile: path) }
        }.get()
        do throws(WearableRecordingContents.NotARecording) {
            let contents = try WearableRecordingContents(jsonLines: text, name: path)
            let parts = try contents.recordedSamples(name: path)
            guard let replay = WearableReplay(samples: parts.samples.map { .init(sensor: $0.sensor, deviceTime: $0.deviceTime, value: $0.value) },
                                              gestures: parts.gestures.map { .init(gesture: $0.gesture, deviceTime: $0.deviceTime) }) else {
                throw WearableRecordingContents.NotARecording(message: "\(path) holds no samples or gestures to replay")
            }
            var profile = self
            if let m = contents.metadata {
                guard let device = m.decodedDeviceInformation, let sensors = m.decodedSensorInformation else {
                    throw WearableRecordingContents.NotARecording(message: "\(path): its metadata does not describe a device Tuneup can be")
                }
                profile.deviceInformation = device
                profile.sensorInformation = sensors
                if let gestures = try? GestureInformation(m.availableGestures.compactMap(GestureType.init(name:)).map { .init(gesture: $0, payloadLength: 0) }) {
                    profile.gestureInformation = gestures
                }
            }
            return profile.replaying(replay)
        } catch {
            throw RecordingError(.notARecording, error.message)
        }
    }
}

/// A simulated wearable served on a link, as `tuneup sim wearable` runs it: started, driven by control lines, shut down.
public struct SimulatedWearables: Sendable {
    public let server: WearableSimulatorServer
    public let device: SimulatedWearable

    /// The control lines, for help and for a line that is none of them.
    public static let controlUsage = "tap, double-tap, stall SENSOR, resume SENSOR, drop-link, quit"

    /// The device's address (`tcp:HOST:PORT`, `serial:/dev/pts/N`, `ble:ADDRESS`).
    public var endpoints: [String] { server.endpoints }

    /// Runs `prepare` (a capture file made; `wrap` then wraps every link), then serves `device` on `link`;
    /// `linkLogger` traces the listener.
    public static func start(_ device: SimulatedWearable, on link: SimulatedWearableLink, logger: Logger, linkLogger: Logger?,
                             prepare: () async throws -> Void = {},
                             wrap: (@Sendable (any Transport) async throws -> any Transport)? = nil) async throws -> SimulatedWearables {
        try await prepare()
        let server = try WearableSimulatorServer(devices: [device], logger: logger)
        if let wrap { server.wrapLinks(wrap) }
        let listener: any TransportListener
        switch link {
        case .pty: listener = try PseudoTerminal.open(logger: linkLogger)
        case let .ble(adapter): listener = try await ATTListener.bind(adapter: adapter, name: device.deviceDescription, logger: linkLogger)
        case let .tcp(host, port): listener = try await TCPListener.bind(host: host, port: port, logger: linkLogger)
        }
        do {
            try server.attach(listener, toDevice: 0)
        } catch {
            listener.close()
            throw error
        }
        return SimulatedWearables(server: server, device: device)
    }

    /// Applies each control line (tap, double-tap, stall|resume SENSOR, drop-link) until `quit` or the lines' end,
    /// then shuts the server down; a bad line's one-line error goes to `refused` and the lines go on.
    public func follow(_ lines: AsyncStream<String>, refused: (String) -> Void) async {
        for await line in lines {
            let words = line.split(separator: " ").map(String.init)
            switch (words.first ?? "", words.count) {
            case ("quit", 1): await server.shutdown(); return
            case ("tap", 1): device.tap()
            case ("double-tap", 1): device.tap(double: true)
            case ("drop-link", 1): await device.dropLinks()
            case ("stall", 2), ("resume", 2):
                do { device.stall(try WearableText.sensorArgument(words[1]), words[0] == "stall") } catch { refused(error.message) }
            default:
                refused("unknown control line '\(line)' (\(Self.controlUsage))")
            }
        }
        await server.shutdown()
    }
}
