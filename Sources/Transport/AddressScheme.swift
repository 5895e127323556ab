/// One kind of device address: its name, the form people type, a one-line summary, and the parser that turns its
/// text into a canonical `DeviceAddress`.
///
/// A module adds a kind of device by registering a scheme with an `AddressSchemes` registry and an opener for the
/// scheme's name with a `TransportConnector`; neither needs an edit to this module. A scheme whose addresses are not
/// one of `DeviceAddress`'s built-in cases returns `.registered(RegisteredAddress(...))` from its parser.
public struct AddressScheme: Sendable {
    /// Parses the text after `NAME:` (`rest`; empty for the bare name of a scheme that stands alone) of `text`, the
    /// whole address as typed. Throws `TransportError(.invalidAddress)` with a one-line message naming the form.
    public typealias Parser = @Sendable (_ rest: String, _ text: String) throws(TransportError) -> DeviceAddress

    /// The scheme's name, the text before the address proper: `tcp`, `usb`, `sim:headset`. A name may hold a `:`
    /// (a kind under a family, e.g. `sim:speaker`); see `AddressSchemes` for how a text finds its scheme.
    public let name: String
    /// The form for help and error texts: `usb:VID:PID[:SERIAL] or usb:BUS-PORT[.PORT]`.
    public let form: String
    /// One line saying what the address reaches.
    public let summary: String
    /// Whether the bare name is a whole address (`sim`); otherwise the bare name is refused as incomplete.
    public let standsAlone: Bool
    private let parser: Parser

    /// A scheme named `name` (not empty, no surrounding `:`), typed as `form`, parsed by `parse`.
    public init(name: String, form: String, summary: String, standsAlone: Bool = false, parse: @escaping Parser) {
        self.name = name
        self.form = form
        self.summary = summary
        self.standsAlone = standsAlone
        self.parser = parse
    }

    /// The same scheme with another summary (a program saying what the address means there).
    public func summarized(_ summary: String) -> AddressScheme {
        AddressScheme(name: name, form: form, summary: summary, standsAlone: standsAlone, parse: parser)
    }

    /// Parses `rest`, the text after `NAME:` of `text` (see `Parser`).
    public func parse(_ rest: String, of text: String) throws(TransportError) -> DeviceAddress {
        try parser(rest, text)
    }
}

/// The address of a scheme registered outside Transport: its scheme's name, its canonical text, and whatever typed
/// value the scheme's parser made of it for its opener (read back with `value(as:)`).
///
/// Two registered addresses are equal when their scheme and canonical text are.
public struct RegisteredAddress: Sendable, Hashable, CustomStringConvertible {
    /// The name of the scheme that parsed it (the key of its opener).
    public let scheme: String
    /// The canonical text, which the scheme's parser maps back to an equal address.
    public let text: String
    private let value: any Sendable

    /// An address of `scheme` spelled `text` (canonical), carrying `value` for the opener.
    public init(scheme: String, text: String, value: any Sendable = ()) {
        self.scheme = scheme
        self.text = text
        self.value = value
    }

    /// The parser's value, when it is a `T`.
    public func value<T>(as type: T.Type) -> T? { value as? T }

    public var description: String { text }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.scheme == rhs.scheme && lhs.text == rhs.text }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(scheme)
        hasher.combine(text)
    }
}

/// A registry of address schemes, which parses address text.
///
/// Resolution rule: a text belongs to the registered scheme with the longest name `N` such that the text is `N`
/// or starts with `N:`; the rest after `N:` goes to that scheme's parser. So once `sim:speaker` is registered,
/// `sim:speaker:/tmp/s.json` is a speaker, while `sim:/tmp/h.json` (no scheme `sim:/tmp/h.json`) stays with `sim`,
/// the built-in headset with that state file. A bare name that is not a whole address (`tcp`) is refused as
/// incomplete; a text matching no scheme is refused with the registered forms. A scheme registered under a name
/// already present replaces it.
public struct AddressSchemes: Sendable {
    /// The schemes, in registration order (the order of help texts).
    public private(set) var schemes: [AddressScheme]

    /// A registry holding `schemes` (later ones replace earlier ones of the same name).
    public init(_ schemes: [AddressScheme] = []) {
        self.schemes = []
        for scheme in schemes { register(scheme) }
    }

    /// Adds `scheme`, replacing one of the same name in its place.
    public mutating func register(_ scheme: AddressScheme) {
        if let index = schemes.firstIndex(where: { $0.name == scheme.name }) {
            schemes[index] = scheme
        } else {
            schemes.append(scheme)
        }
    }

    /// This registry with `schemes` added.
    public func registering(_ schemes: AddressScheme...) -> AddressSchemes {
        var copy = self
        for scheme in schemes { copy.register(scheme) }
        return copy
    }

    /// The scheme named `name`, if registered.
    public func scheme(named name: String) -> AddressScheme? { schemes.first { $0.name == name } }

    /// The scheme `text` belongs to (see the resolution rule) and the text after its name and `:` (nil for the
    /// bare name).
    public func resolve(_ text: String) -> (scheme: AddressScheme, rest: String?)? {
        var best: (scheme: AddressScheme, rest: String?)?
        for scheme in schemes where scheme.name.count > (best?.scheme.name.count ?? -1) {
            if text == scheme.name {
                best = (scheme, nil)
            } else if text.hasPrefix(scheme.name + ":") {
                best = (scheme, String(text.dropFirst(scheme.name.count + 1)))
            }
        }
        return best
    }

    /// Parses `text` into the canonical address of its scheme. Throws `TransportError(.invalidAddress)` with one
    /// line naming the expected form(s).
    public func parse(_ text: String) throws(TransportError) -> DeviceAddress {
        guard let (scheme, rest) = resolve(text) else {
            if let colon = text.firstIndex(of: ":") {
                throw TransportError(.invalidAddress, "unknown address scheme '\(text[..<colon])'; expected \(prefixList)")
            }
            throw TransportError(.invalidAddress, "unknown device address '\(text)'; expected one of \(forms.sorted().joined(separator: ", "))")
        }
        guard let rest else {
            guard scheme.standsAlone else {
                throw TransportError(.invalidAddress, "'\(text)' needs more: expected \(scheme.form)")
            }
            return try scheme.parse("", of: text)
        }
        return try scheme.parse(rest, of: text)
    }

    /// Every scheme's form, in registration order.
    public var forms: [String] { schemes.map(\.form) }

    /// The first words of the registered names, as an address starts: `tcp:, serial:, sim, usb: or bt:` (a word
    /// that is a whole address by itself is shown bare).
    var prefixList: String {
        var words: [String] = []
        for scheme in schemes {
            let word = String(scheme.name.prefix { $0 != ":" })
            if !words.contains(word) { words.append(word) }
        }
        let shown = words.map { word in scheme(named: word)?.standsAlone == true ? word : word + ":" }
        guard shown.count > 1 else { return shown.first ?? "no address at all (no scheme is registered)" }
        return shown.dropLast().joined(separator: ", ") + " or " + shown[shown.count - 1]
    }
}

extension AddressSchemes {
    /// The schemes Transport knows: `tcp`, `serial`, `sim` (the built-in headset, the bare word or with a state
    /// file), `sim:headset` (its explicit form), `usb`, `bt`. Transport opens `tcp:` and `serial:` itself; the other
    /// openers are plugged into the `TransportConnector` by the caller.
    public static let builtIn = AddressSchemes([
        AddressScheme(name: "tcp", form: "tcp:HOST:PORT", summary: "a device on TCP; IPv6 hosts in brackets: tcp:[::1]:PORT",
                      parse: DeviceAddress.parseTCP(_:original:)),
        AddressScheme(name: "serial", form: "serial:PATH", summary: "a serial line, pty or /dev/rfcommN (raw mode, SPP framing)",
                      parse: DeviceAddress.parseSerial(_:original:)),
        AddressScheme(name: "sim", form: "sim[:STATEFILE]", summary: "the built-in simulated headset (short for sim:headset)",
                      standsAlone: true, parse: DeviceAddress.parseSimulator(_:original:)),
        AddressScheme(name: "sim:headset", form: "sim:headset[:STATEFILE]", summary: "the built-in simulated headset, in process",
                      standsAlone: true, parse: DeviceAddress.parseSimulator(_:original:)),
        AddressScheme(name: "usb", form: "usb:VID:PID[:SERIAL] or usb:BUS-PORT[.PORT]", summary: "a USB HID device, by ids or by port",
                      parse: DeviceAddress.parseUSB(_:original:)),
        AddressScheme(name: "bt", form: "bt:AA:BB:CC:DD:EE:FF[:CHANNEL]", summary: "Bluetooth RFCOMM (no CHANNEL: SDP finds it)",
                      parse: DeviceAddress.parseBluetooth(_:original:)),
    ])
}

extension AddressScheme {
    /// The scheme of in-process simulated devices told apart by a seed, `NAME[:SEED]` (a decimal SEED; none: 1), whose
    /// addresses carry the seed (`seed(of:scheme:device:)`). `device` names the device in errors ("simulated speaker").
    public static func seeded(_ name: String, device: String, summary: String) -> AddressScheme {
        AddressScheme(name: name, form: "\(name)[:SEED]", summary: summary, standsAlone: true) { rest, text throws(TransportError) in
            guard !rest.isEmpty else { return .registered(RegisteredAddress(scheme: name, text: name, value: UInt64(1))) }
            guard rest.allSatisfy({ $0.isASCII && $0.isNumber }), let seed = UInt64(rest) else {
                throw TransportError(.invalidAddress, "bad \(device) '\(text)': expected \(name)[:SEED] with a decimal SEED")
            }
            return .registered(RegisteredAddress(scheme: name, text: "\(name):\(seed)", value: seed))
        }
    }

    /// The seed of an address of the seeded scheme `name` (`seeded(_:device:summary:)`). Throws
    /// `TransportError(.invalidAddress)` for an address of any other scheme.
    public static func seed(of address: DeviceAddress, scheme name: String, device: String) throws(TransportError) -> UInt64 {
        guard case let .registered(r) = address, r.scheme == name else {
            throw TransportError(.invalidAddress, "\(address) is not a \(device)'s address")
        }
        return r.value(as: UInt64.self) ?? 1
    }
}
