import Failure

/// An error of the CFX publisher: a malformed broker URL, a spool that cannot be written.
public typealias CFXError = CodedFailure<CFXErrors>

public enum CFXErrors: ErrorDomain {
    public static func category(of code: CFXError.Code) -> FailureCategory {
        switch code {
        case .spool, .libraryMissing: .localFile
        case .thread: .connection
        default: .usage
        }
    }
}

extension ErrorCodeIn where Domain == CFXError {
    /// `--cfx` is not `amqp://[USER[:PASSWORD]@]HOST[:PORT]/ADDRESS`.
    public static let badURL = Self(rawValue: "cfx-bad-url")
    /// The spool directory or a message in it cannot be written or read.
    public static let spool = Self(rawValue: "cfx-spool")
    /// No thread could be started for the AMQP connection.
    public static let thread = Self(rawValue: "cfx-thread")
    /// Qpid Proton (Debian's libqpid-proton11) is not installed: it is opened when the publisher starts (CQpidProton).
    public static let libraryMissing = Self(rawValue: "cfx-library-missing")
}
