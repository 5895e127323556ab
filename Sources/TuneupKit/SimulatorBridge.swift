import Foundation
import HeadsetSimulator
import Simulator
import Support
import Transport

/// Connects the CLI to the built-in simulated headset.
public enum SimulatorBridge {
    /// The per-user state file of the `sim` device: $XDG_STATE_HOME/tuneup/sim-headset.json
    /// (default ~/.local/state/tuneup/sim-headset.json).
    public static var defaultStatePath: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (env["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        return base + "/tuneup/sim-headset.json"
    }

    /// An in-process simulated headset on the state file `statePath` (nil: the per-user default, whose directory
    /// is created; a named file's directory must exist), as a transport. State-file problems are `SimulatorError`s
    /// (exit 74), as they are for `tuneup sim headset --state`.
    public static func openInProcess(statePath: String?) async throws -> any Transport {
        let path = statePath ?? defaultStatePath
        // File-system calls (stat, mkdir): on the blocking executor, not the pool this async function runs on.
        try await Blocking.perform("sim state path") { try checkStatePath(path, createDirectory: statePath == nil) }
        return try await SimulatorServer.inProcess(statePath: path)
    }

    /// Refuses a state path that is a directory, or whose directory is missing (created only for the default).
    /// Blocking (file-system calls): call it on the blocking executor.
    public static func checkStatePath(_ path: String, createDirectory: Bool) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw SimulatorError(.io, "the simulator state file \(path) is a directory; name a file (sim:PATH/state.json)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) else { return }
        guard createDirectory else {
            throw SimulatorError(.io, "cannot use the simulator state file \(path): its directory \(directory) does not exist")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SimulatorError(.io, "cannot create the directory of the simulator state file \(path): \(error.localizedDescription)")
        }
    }
}
