import Failure

/// The errors of the label printer: a value that cannot be put in a barcode (exit 64), the label folder or file
/// (74), a printer that does not take the label (69).
public typealias LabelError = CodedFailure<LabelErrors>

/// The codes of `LabelError`.
public enum LabelErrors: ErrorDomain {
    public static func category(of code: LabelError.Code) -> FailureCategory {
        switch code {
        case .unprintable: .usage
        case .printer: .connection
        default: .localFile
        }
    }
}

extension ErrorCodeIn where Domain == LabelError {
    /// A value has characters a barcode of this kind cannot carry, or is too long for the label.
    public static let unprintable = Self(rawValue: "unprintable")
    /// The label printer refused the connection, did not answer or dropped it.
    public static let printer = Self(rawValue: "printer")
    /// The label folder or a label file could not be written.
    public static let file = Self(rawValue: "label-file")
}

/// How a label carries the unit's identity.
public enum LabelSymbology: String, Sendable, Hashable, CaseIterable {
    /// Two Code 128 symbols: the serial, then the Bluetooth address (each with its text under it).
    case code128
    /// One GS1 DataMatrix: AI (21) the serial and AI (91) the Bluetooth address, with both as text beside it.
    case datamatrix
}

/// What one unit's label shows.
public struct LabelContent: Sendable, Hashable {
    /// The product's display name (the recipe's product name, else its model).
    public var product: String
    public var serial: String
    /// `AA:BB:CC:DD:EE:FF` (nil: the unit has none; the label then carries the serial only).
    public var bluetoothAddress: String?

    public init(product: String, serial: String, bluetoothAddress: String?) {
        self.product = product
        self.serial = serial
        self.bluetoothAddress = bluetoothAddress
    }

    /// The GS1 element string of the DataMatrix: `(21)SERIAL` and `(91)ADDRESS` when there is one.
    public var gs1Elements: [(ai: String, value: String)] {
        var elements = [(ai: "21", value: serial)]
        if let bluetoothAddress { elements.append((ai: "91", value: bluetoothAddress)) }
        return elements
    }

    /// The characters barcode values may hold: GS1's character set 82 without the ones ZPL gives a meaning
    /// (`^` `~` `>` `\`) — serials (`A-Z a-z 0-9 - _ . /`) and addresses always fit.
    static func isPrintable(_ value: String) -> Bool {
        !value.isEmpty && value.unicodeScalars.allSatisfy { s in
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || "!\"%&'()*+,-./:;<=?_".unicodeScalars.contains(s))
        }
    }

    /// Refuses a value no barcode of the label can carry (before anything is written or sent).
    public func check() throws(LabelError) {
        if !Self.isPrintable(serial) || serial.count > 32 {
            throw LabelError(.unprintable, "serial '\(serial)' cannot be printed as a barcode (1...32 characters of A-Z a-z 0-9 and - _ . /)")
        }
        if let bluetoothAddress, !Self.isPrintable(bluetoothAddress) || bluetoothAddress.count > 17 {
            throw LabelError(.unprintable, "Bluetooth address '\(bluetoothAddress)' cannot be printed as a barcode")
        }
    }
}

/// The label's size and where things go on it, in printer dots (a 3 × 1.5 inch label at 203 dpi).
public struct LabelLayout: Sendable, Hashable {
    public var width = 609
    public var height = 305
    public var margin = 24
    /// The product name's line.
    public var titleY = 16
    public var titleSize = 28
    /// Code 128: the top of each symbol, the bars' height, and the text's size under them.
    public var firstBarcodeY = 56
    public var secondBarcodeY = 172
    public var barHeight = 70
    public var textSize = 22
    /// DataMatrix: the module size in dots.
    public var matrixModule = 6

    public init() {}

    /// The widest module (1...3 dots) at which a symbol of `modules` modules fits between the margins.
    public func moduleWidth(forModules modules: Int) -> Int? {
        (1...3).reversed().first { $0 * modules <= width - 2 * margin }
    }
}
