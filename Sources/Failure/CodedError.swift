/// One shape for the errors of every Tuneup module: a stable, extensible code for programs, a category that says
/// what kind of failure it is (and so the CLI's exit code), and one line for people.
///
/// Codes are open sets of named constants (`ErrorCode`), not enums: a newer module may add codes without breaking a
/// caller's `switch`, which matches the codes it handles and has a `default`. Their raw values are kebab-case strings,
/// part of the JSON output, and never change meaning.
public protocol CodedError: Error, Sendable, CustomStringConvertible {
    associatedtype Code: ErrorCode
    /// The stable code.
    var code: Code { get }
    /// What kind of failure this is.
    var category: FailureCategory { get }
    /// One line, naming what failed and why.
    var message: String { get }
}

extension CodedError {
    /// The message.
    public var description: String { message }
    /// The code's raw value (the same for every module's errors: "connection-refused", "bad-signature", ...).
    public var codeName: String { code.rawValue }
}

/// Errors compare and hash by code only, so tests and callers can match on the class of a failure whatever its
/// message or details.
extension CodedError where Self: Hashable {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// A stable error code: a named string constant (see `CodedError`).
public protocol ErrorCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible where RawValue == String {
    init(rawValue: String)
}

extension ErrorCode {
    public var description: String { rawValue }
}

/// What a failure means for the caller; the CLI's exit code follows from it (docs/cli.md).
public enum FailureCategory: String, Sendable, Hashable, Codable, CaseIterable {
    /// The request or its arguments are wrong; nothing was sent (exit 64).
    case usage
    /// The device refused or answered with something unusable, or an image or key is invalid (exit 65).
    case device
    /// The device could not be reached, stopped answering, or is busy; it may work later (exit 69).
    case connection
    /// A local file or directory could not be read or written (exit 74).
    case localFile = "local-file"
}

/// The code type of every module's errors: `Domain` (the error type) only keeps the sets apart; each module
/// declares its codes as static members in `extension ErrorCodeIn where Domain == TheError`.
public struct ErrorCodeIn<Domain>: ErrorCode {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// What a module whose errors are a code and a message says about them: the category of each of its codes.
/// (`CodedFailure<Domain>` is then the module's error type: `public typealias LightXError = CodedFailure<LightXErrors>`,
/// its codes declared in `extension ErrorCodeIn where Domain == LightXError`.)
public protocol ErrorDomain: Sendable {
    /// The category of an error with `code` (and so the CLI's exit code).
    static func category(of code: CodedFailure<Self>.Code) -> FailureCategory
}

/// The error type of a module whose failures are a stable code and one line (`Domain` says each code's category).
/// Compares and hashes by code only.
public struct CodedFailure<Domain: ErrorDomain>: CodedError, Hashable {
    /// Stable classification: the module's codes.
    public typealias Code = ErrorCodeIn<CodedFailure<Domain>>

    /// What kind of failure this is, for programs.
    public var code: Code
    /// One line for people: names what failed (a file, a field, a device) and why.
    public var message: String

    /// An error with a code and a one-line message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error with only a code (the expected value in a test: errors compare by code).
    public init(_ code: Code) {
        self.init(code, code.rawValue)
    }

    /// What kind of failure this is (the module's rule for its codes).
    public var category: FailureCategory { Domain.category(of: code) }
}
