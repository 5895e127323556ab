import Failure

/// An error of the unit records: the store could not be opened, is busy, or refused a change.
public typealias RecordsError = CodedFailure<RecordsErrors>

/// The categories of `RecordsError`'s codes.
public enum RecordsErrors: ErrorDomain {
    /// A store that is busy or cannot be reached is a connection failure; one that cannot be opened or written, local.
    public static func category(of code: RecordsError.Code) -> FailureCategory {
        switch code {
        case .busy, .unreachable, .stationLive: .connection
        case .cannotOpen, .notADatabase, .newerSchema, .storage: .localFile
        default: .usage
        }
    }
}

extension ErrorCodeIn where Domain == RecordsError {
    /// The database file cannot be opened or created (missing directory, permissions).
    public static let cannotOpen = Self(rawValue: "records-cannot-open")
    /// The file exists but is not an SQLite database, or is corrupt.
    public static let notADatabase = Self(rawValue: "records-not-a-database")
    /// The database was written by a newer Tuneup (it has migrations this version does not know).
    public static let newerSchema = Self(rawValue: "records-newer-schema")
    /// Another station held the database longer than the busy timeout.
    public static let busy = Self(rawValue: "records-busy")
    /// Another live station of the same name holds the records (`StationLock`).
    public static let stationLive = Self(rawValue: "records-station-live")
    /// The database server cannot be reached (PostgreSQL; not used by SQLite).
    public static let unreachable = Self(rawValue: "records-unreachable")
    /// Any other failure of the database (disk full, I/O error).
    public static let storage = Self(rawValue: "records-storage")
    /// No candidate value was free: every one offered is already issued (or voided) somewhere.
    public static let poolExhausted = Self(rawValue: "records-pool-exhausted")
    /// A record named by id does not exist (run, step, identity, lease).
    public static let notFound = Self(rawValue: "records-not-found")
    /// A change that the record's state forbids (commit an identity never written, finish a finished run).
    public static let invalidTransition = Self(rawValue: "records-invalid-transition")
    /// A station's record contradicts the line's server (an identity another unit or station holds, or voided).
    public static let conflict = Self(rawValue: "records-conflict")
    /// An argument is unusable (empty hardware id, empty value, a non-positive block size).
    public static let invalidArgument = Self(rawValue: "records-invalid-argument")
}
