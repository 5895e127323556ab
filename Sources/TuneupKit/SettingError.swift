import Failure

/// A setting outside the command line is wrong: an environment variable such as `TUNEUP_USB_IDS`. Nothing was sent
/// to any device; the CLI exits 64, as for a bad argument.
public struct SettingError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<SettingError>

    /// The failure class.
    public var code: Code
    /// One line naming the setting, the bad value and the expected form.
    public var message: String

    /// Creates an error; `message` should be one line.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Always a usage error.
    public var category: FailureCategory { .usage }
}

extension ErrorCodeIn where Domain == SettingError {
    /// An environment variable holds a value that cannot be used.
    public static var badEnvironment: Self { Self(rawValue: "bad-environment") }
}
