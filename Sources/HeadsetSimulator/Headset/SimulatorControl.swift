import Simulator
/// The control lines a running simulator reads from its standard input (the CLI wires stdin to `parse`).
///
/// Grammar (words separated by spaces or tabs, case-insensitive; DEVICE is the 0-based device index, default 0):
/// - `press anc [DEVICE]`, `press ambient [DEVICE]` — press a button on the device;
/// - `battery PERCENT [DEVICE]` — set the battery level, 0...100;
/// - `power-cut [DEVICE]` — cut the device's power: links drop, RAM is lost, it powers up again after a short delay;
/// - `reboot [DEVICE]` — reset the device (like a power cut, without the time off);
/// - `quit` — stop the simulator.
public enum SimulatorControl {
    /// A parsed control line.
    public enum Command: Sendable, Hashable {
        /// Press `button` on device `device`.
        case press(HeadsetButton, device: Int)
        /// Set device `device`'s battery to `percent`.
        case battery(percent: UInt32, device: Int)
        /// Cut device `device`'s power (`SimulatedHeadset.powerCut()`).
        case powerCut(device: Int)
        /// Reset device `device` (`SimulatedHeadset.reboot()`).
        case reboot(device: Int)
        /// Stop the simulator.
        case quit
    }

    /// A one-line summary of the grammar, for error messages and help texts.
    public static let usage = "press anc|ambient [DEVICE], battery PERCENT [DEVICE], power-cut [DEVICE], reboot [DEVICE], quit"

    /// Parses one line. Throws `SimulatorError(.invalidControlLine)` quoting the line and the accepted forms.
    public static func parse(_ line: String) throws(SimulatorError) -> Command {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" })
            .map { $0.lowercased() }
        func bad(_ why: String) -> SimulatorError {
            SimulatorError(.invalidControlLine, "bad control line '\(line)': \(why); expected \(usage)")
        }
        func device(_ at: Int) throws(SimulatorError) -> Int {
            guard words.count > at else { return 0 }
            guard words.count == at + 1 else { throw bad("too many words") }
            guard words[at].allSatisfy(\.isASCIIDigit), let n = Int(words[at]) else {
                throw bad("device '\(words[at])' is not a device index (0, 1, ...)")
            }
            return n
        }
        guard let verb = words.first else { throw bad("the line is empty") }
        switch verb {
        case "press":
            guard words.count >= 2 else { throw bad("press needs a button: anc or ambient") }
            guard let button = HeadsetButton(rawValue: words[1]) else {
                throw bad("unknown button '\(words[1])' (buttons: anc, ambient)")
            }
            return .press(button, device: try device(2))
        case "battery":
            guard words.count >= 2 else { throw bad("battery needs a level in percent, 0...100") }
            guard words[1].allSatisfy(\.isASCIIDigit), let percent = UInt32(words[1]), percent <= 100 else {
                throw bad("battery level '\(words[1])' is not a percentage 0...100")
            }
            return .battery(percent: percent, device: try device(2))
        case "power-cut":
            return .powerCut(device: try device(1))
        case "reboot":
            return .reboot(device: try device(1))
        case "quit":
            guard words.count == 1 else { throw bad("quit takes no argument") }
            return .quit
        default:
            throw bad("unknown command '\(verb)'")
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
