import Failure

/// An environment variable the tools read (`TUNEUP_USB_IDS`) holds a value that cannot be used. It is the caller's
/// setting, not the device's or the link's fault: its category is usage (the CLI exits 64), and nothing was sent.
public struct SettingError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<SettingError>

    /// The variable at fault.
    public let variable: String
    /// One line naming the variable, the bad value and the expected form.
    public let message: String

    public var code: Code { .badEnvironment }
    public var category: FailureCategory { .usage }

    /// `variable` is wrong, as `message` (one line) says.
    public init(variable: String, message: String) {
        self.variable = variable
        self.message = message
    }
}

extension ErrorCodeIn where Domain == SettingError {
    /// An environment variable holds a value that cannot be used.
    public static var badEnvironment: Self { Self(rawValue: "bad-environment") }
}
