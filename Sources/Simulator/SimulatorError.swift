import Failure
/// An error from the simulator (state file, lock, profile, fault-spec or control-line parsing), with a stable code and a
/// one-line message that names the file or text at fault.
public typealias SimulatorError = CodedFailure<SimulatorErrors>

/// The categories of `SimulatorError`'s codes.
public enum SimulatorErrors: ErrorDomain {
    /// State-file problems are local files; bad profiles, fault specs, control lines and arguments are usage.
    public static func category(of code: SimulatorError.Code) -> FailureCategory {
        switch code {
        case .corruptState, .unsupportedStateVersion, .stateLocked, .io: .localFile
        default: .usage
        }
    }
}

extension ErrorCodeIn where Domain == SimulatorError {

    /// The state file exists but is not valid JSON of the expected shape, or holds values out of range.
    public static var corruptState: Self { Self(rawValue: "corrupt-state") }
    /// The state file was written by a different (newer or older) schema version.
    public static var unsupportedStateVersion: Self { Self(rawValue: "unsupported-state-version") }
    /// Another owner held the state file's lock for longer than the lock timeout.
    public static var stateLocked: Self { Self(rawValue: "state-locked") }
    /// Reading, writing or locking the state file failed at the operating-system level.
    public static var io: Self { Self(rawValue: "io") }
    /// A behaviour-profile string could not be parsed.
    public static var invalidProfile: Self { Self(rawValue: "invalid-profile") }
    /// A control line could not be parsed.
    public static var invalidControlLine: Self { Self(rawValue: "invalid-control-line") }
    /// A server argument is out of range (device count, port range).
    public static var invalidArgument: Self { Self(rawValue: "invalid-argument") }
    /// A fault-injection spec (`FaultPlan`) could not be parsed.
    public static var invalidFaults: Self { Self(rawValue: "invalid-faults") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] { [.corruptState, .unsupportedStateVersion, .stateLocked, .io, .invalidProfile, .invalidControlLine, .invalidArgument, .invalidFaults] }
}
