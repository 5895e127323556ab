/// An error from the simulator (state file, lock, profile, fault-spec or control-line parsing), with a stable code and a
/// one-line message that names the file or text at fault.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable classification.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The state file exists but is not valid JSON of the expected shape, or holds values out of range.
        case corruptState = "corrupt-state"
        /// The state file was written by a different (newer or older) schema version.
        case unsupportedStateVersion = "unsupported-state-version"
        /// Another owner held the state file's lock for longer than the lock timeout.
        case stateLocked = "state-locked"
        /// Reading, writing or locking the state file failed at the operating-system level.
        case io
        /// A behaviour-profile string could not be parsed.
        case invalidProfile = "invalid-profile"
        /// A control line could not be parsed.
        case invalidControlLine = "invalid-control-line"
        /// A server argument is out of range (device count, port range).
        case invalidArgument = "invalid-argument"
        /// A fault-injection spec (`FaultPlan`) could not be parsed.
        case invalidFaults = "invalid-faults"
    }

    /// The failure class.
    public var code: Code
    /// A human-readable, single-line explanation.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// Errors compare by code only.
    public static func == (lhs: SimulatorError, rhs: SimulatorError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
