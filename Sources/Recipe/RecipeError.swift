import Failure

/// Where in a recipe file something is: `file:line:column` (line and column count from 1).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file as the caller named it.
    public var file: String
    /// Line, from 1.
    public var line: Int
    /// Column, from 1 (Unicode scalars, as libyaml counts).
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        (self.file, self.line, self.column) = (file, line, column)
    }

    /// `file:line:column`.
    public var description: String { "\(file):\(line):\(column)" }
}

/// A recipe that cannot be used: its file, its YAML, a key, a value, an image it names, or an identity it cannot
/// produce.
///
/// Contract: `message` is one line, `file:line:column: key: what is wrong` when the problem has a place in the
/// file (`location`) and a key (`key`, dotted: `settings.anc.level`, `tests[2].unit`). The category gives the CLI's
/// exit code: a bad recipe 64 (`.usage`), an unreadable file 74 (`.localFile`), an invalid image or key 65
/// (`.device`). Errors compare and hash by code only.
public struct RecipeError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<RecipeError>

    /// What kind of problem this is.
    public var code: Code
    /// One line for people (see the type's contract).
    public var message: String
    /// The place in the recipe file, when there is one.
    public var location: SourceLocation?
    /// The offending key (dotted path), when there is one.
    public var key: String?

    /// An error at a place in the file, naming a key: the message becomes `location: key: text`.
    public init(_ code: Code, _ text: String, at location: SourceLocation?, key: String?) {
        self.code = code
        self.location = location
        self.key = key
        var line = text
        if let key, !key.isEmpty { line = "\(key): \(line)" }
        if let location { line = "\(location): \(line)" }
        message = line
    }

    /// An error with a code and a one-line message and no place.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error with only a code (as the expected value in tests; errors compare by code).
    public init(_ code: Code) {
        self.init(code, code.rawValue)
    }

    /// Unreadable files are local (74), bad images and keys and identities the device cannot store are refused like
    /// a device (65), everything else is a bad recipe (64).
    public var category: FailureCategory {
        switch code {
        case .io: return .localFile
        case .badImage, .wrongModel, .deviceLimit: return .device
        default: return .usage
        }
    }
}

extension ErrorCodeIn where Domain == RecipeError {
    /// The file is not well-formed YAML (or has a duplicated key).
    public static var syntax: Self { Self(rawValue: "recipe-syntax") }
    /// A key the recipe format does not know.
    public static var unknownKey: Self { Self(rawValue: "unknown-key") }
    /// A required key is absent.
    public static var missingKey: Self { Self(rawValue: "missing-key") }
    /// A value of the wrong type (a text where a number belongs, a list where a mapping belongs, ...).
    public static var wrongType: Self { Self(rawValue: "wrong-type") }
    /// A value outside its range (ANC level, ambient step, gain, limits, counts).
    public static var outOfRange: Self { Self(rawValue: "out-of-range") }
    /// A serial pattern or name template that does not parse or lacks a required field.
    public static var badTemplate: Self { Self(rawValue: "bad-template") }
    /// A recipe, image or key file that cannot be read.
    public static var io: Self { Self(rawValue: "io") }
    /// An image or key that is invalid, or an image not signed by the recipe's key.
    public static var badImage: Self { Self(rawValue: "bad-image") }
    /// An image made for another model than the recipe's.
    public static var wrongModel: Self { Self(rawValue: "wrong-model") }
    /// The identity rules cannot produce this unit's identity: the counter outgrew its width, or the Bluetooth
    /// address block is used up.
    public static var identityExhausted: Self { Self(rawValue: "identity-exhausted") }

    /// The identity rules give a serial or Bluetooth name the device cannot store (longer than its 31 bytes, a
    /// serial that is not printable ASCII, a name with control characters): found when the recipe loads (65), so
    /// no unit is flashed only to fail at its identity.
    public static var deviceLimit: Self { Self(rawValue: "device-limit") }

    /// The codes this version knows.
    public static var allCases: [Self] {
        [.syntax, .unknownKey, .missingKey, .wrongType, .outOfRange, .badTemplate, .io, .badImage, .wrongModel, .identityExhausted,
         .deviceLimit]
    }
}
