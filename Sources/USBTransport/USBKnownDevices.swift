import Transport

/// The table of USB headsets the host recognises: each entry pairs an application product id with the product id
/// the same device uses while its bootloader runs.
///
/// Contract:
/// - `standard` holds the simulated headset: vendor 0x1209 (pid.codes test VID), application 0x0001, bootloader
///   0x0002.
/// - Opening `usb:VID:PID[:SERIAL]` matches `PID` and its partner from this table (the application id of a
///   bootloader id and vice versa), so a host reconnecting after a jump to the bootloader finds the device again.
/// - `tuneup devices` lists the devices whose ids appear here (either side of an entry).
/// - More entries come from the environment variable `TUNEUP_USB_IDS`: `VVVV:PPPP[/BBBB],...` with 1-4 hex digits
///   per id, where `BBBB` is the bootloader product id. Whitespace around entries is ignored; an empty variable adds
///   nothing; anything else malformed is an `.invalidAddress` error naming the bad entry (never a crash).
public struct USBKnownDevices: Sendable, Hashable {
    /// One known headset model.
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        /// The USB vendor id.
        public var vendorID: UInt16
        /// The product id while the application runs.
        public var applicationProductID: UInt16
        /// The product id while the bootloader runs, if the model re-enumerates with another id.
        public var bootloaderProductID: UInt16?

        /// Creates an entry.
        public init(vendorID: UInt16, applicationProductID: UInt16, bootloaderProductID: UInt16? = nil) {
            self.vendorID = vendorID
            self.applicationProductID = applicationProductID
            self.bootloaderProductID = bootloaderProductID
        }

        /// `vvvv:pppp/bbbb` (or `vvvv:pppp` without a bootloader id), lowercase hex, as `TUNEUP_USB_IDS` takes it.
        public var description: String {
            let ids = "\(usbHex4(vendorID)):\(usbHex4(applicationProductID))"
            return bootloaderProductID.map { "\(ids)/\(usbHex4($0))" } ?? ids
        }
    }

    /// What a product id means for a known model.
    public enum Role: String, Sendable, Hashable, Codable {
        /// The device runs its application firmware.
        case application
        /// The device runs its bootloader.
        case bootloader
    }

    /// The entries, in order: `standard`'s first, then the environment's.
    public var entries: [Entry]

    /// Creates a table with exactly these entries.
    public init(_ entries: [Entry]) {
        self.entries = entries
    }

    /// The simulated headset only: 1209:0001 (application) / 1209:0002 (bootloader).
    public static let standard = USBKnownDevices([Entry(vendorID: 0x1209, applicationProductID: 0x0001, bootloaderProductID: 0x0002)])

    /// The name of the environment variable that adds entries.
    public static let environmentVariable = "TUNEUP_USB_IDS"

    /// `standard` plus the entries parsed from `TUNEUP_USB_IDS` in `environment`.
    ///
    /// - Throws: `TransportError(.invalidAddress)` naming the malformed entry.
    public static func fromEnvironment(_ environment: [String: String]) throws(TransportError) -> USBKnownDevices {
        var table = standard
        if let text = environment[environmentVariable] {
            table.entries += try parse(text)
        }
        return table
    }

    /// Parses `VVVV:PPPP[/BBBB],...`. An empty or all-blank text yields no entries.
    ///
    /// - Throws: `TransportError(.invalidAddress)` naming the malformed entry and the expected form.
    public static func parse(_ text: String) throws(TransportError) -> [Entry] {
        var entries: [Entry] = []
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = raw.trimmingBlanks()
            if item.isEmpty {
                if text.trimmingBlanks().isEmpty { continue }
                throw TransportError(.invalidAddress, "\(environmentVariable) has an empty entry in '\(text)'; expected VVVV:PPPP[/BBBB],...")
            }
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            let pids = parts.count == 2 ? parts[1].split(separator: "/", omittingEmptySubsequences: false) : []
            guard parts.count == 2, (1...2).contains(pids.count),
                  let vid = parseUSBHex16(parts[0]), let app = parseUSBHex16(pids[0]) else {
                throw TransportError(.invalidAddress, "bad \(environmentVariable) entry '\(item)': expected VVVV:PPPP[/BBBB] in hex, e.g. 1209:0001/0002")
            }
            var boot: UInt16?
            if pids.count == 2 {
                guard let b = parseUSBHex16(pids[1]) else {
                    throw TransportError(.invalidAddress, "bad bootloader id in \(environmentVariable) entry '\(item)': expected VVVV:PPPP/BBBB in hex")
                }
                boot = b
            }
            entries.append(Entry(vendorID: vid, applicationProductID: app, bootloaderProductID: boot))
        }
        return entries
    }

    /// The role of `productID` under `vendorID`, or nil when the table does not know the pair.
    /// The first entry that names the pair decides.
    public func role(vendorID: UInt16, productID: UInt16) -> Role? {
        for entry in entries where entry.vendorID == vendorID {
            if entry.applicationProductID == productID { return .application }
            if entry.bootloaderProductID == productID { return .bootloader }
        }
        return nil
    }

    /// Whether the table knows the pair (either role).
    public func contains(vendorID: UInt16, productID: UInt16) -> Bool {
        role(vendorID: vendorID, productID: productID) != nil
    }

    /// The product ids that an address naming `productID` matches: the id itself, then every partner the table
    /// pairs it with (the bootloader id of an application id and vice versa), without repeats.
    public func matchingProductIDs(vendorID: UInt16, productID: UInt16) -> [UInt16] {
        var ids = [productID]
        for entry in entries where entry.vendorID == vendorID {
            guard let boot = entry.bootloaderProductID else { continue }
            let partner: UInt16? = entry.applicationProductID == productID ? boot
                : boot == productID ? entry.applicationProductID : nil
            if let partner, !ids.contains(partner) { ids.append(partner) }
        }
        return ids
    }

    /// Every entry written as `vvvv:pppp/bbbb`, comma-separated (for messages).
    public var summary: String {
        entries.map(\.description).joined(separator: ", ")
    }
}

/// Four lowercase hex digits.
func usbHex4(_ value: UInt16) -> String {
    let s = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - s.count)) + s
}

/// Two uppercase hex digits.
func usbHex2(_ value: UInt8) -> String {
    let s = String(value, radix: 16, uppercase: true)
    return s.count == 1 ? "0" + s : s
}

/// 1-4 hex digits, nothing else.
func parseUSBHex16(_ text: Substring) -> UInt16? {
    guard (1...4).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
    return UInt16(text, radix: 16)
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and newlines.
    func trimmingBlanks() -> Substring {
        let blanks: Set<Character> = [" ", "\t", "\n", "\r", "\r\n"]
        var s = Substring(self)
        while let first = s.first, blanks.contains(first) { s = s.dropFirst() }
        while let last = s.last, blanks.contains(last) { s = s.dropLast() }
        return s
    }
}
