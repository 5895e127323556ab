import Foundation
import Simulator
import Transport

/// Connects the CLI to the built-in simulated headset.
enum SimulatorBridge {
    /// The per-user state file of the `sim` device: $XDG_STATE_HOME/tuneup/sim-headset.json
    /// (default ~/.local/state/tuneup/sim-headset.json).
    static var defaultStatePath: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (env["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        return base + "/tuneup/sim-headset.json"
    }

    /// An in-process simulated headset on the state file `statePath` (nil: the per-user default), as a transport.
    static func openInProcess(statePath: String?) async throws -> any Transport {
        let path = statePath ?? defaultStatePath
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        } catch {
            throw TransportError(.io, "cannot create the directory of the simulator state file \(path): \(error.localizedDescription)")
        }
        do {
            return try await SimulatorServer.inProcess(statePath: path)
        } catch let error as SimulatorError {
            throw TransportError(.io, error.message)
        }
    }
}
