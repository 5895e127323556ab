import Foundation
import Headset
import Support

// What `tuneup flash` reports, with its text for people: a program that updates headsets says what tuneup says
// without writing it again.

extension UpdateResult {
    /// `Updated.` and a table of what was written, or that the version was there already.
    public var text: String {
        if alreadyInstalled {
            return "Already installed: the device runs \(newVersion ?? "this version"); nothing was written (--force flashes it again)."
        }
        var rows: [(String, String)] = [
            ("Image", "\(image) (\(imageBytes) bytes, \(sectors) sectors, \(region.rawValue) region)"),
            ("Version", (previousVersion ?? "unknown") + " → " + (newVersion ?? "unknown")),
            ("Written", "\(bytesWritten) bytes in \(String(format: "%.2f", transferSeconds)) s"
                + (bytesPerSecond > 0 ? String(format: " (%.1f KiB/s)", bytesPerSecond / 1024) : "")),
        ]
        if skippedSectors > 0 { rows.append(("Resumed", "\(skippedSectors) sectors were already on the device")) }
        rows.append(("Total", String(format: "%.2f s", seconds) + ", window up to \(maxWindow)"
                     + (resent > 0 ? ", \(resent) resent" : "") + (redoneSectors > 0 ? ", \(redoneSectors) sectors redone" : "")
                     + (reconnects > 0 ? ", \(reconnects) reconnects" : "")))
        return "Updated.\n" + TextTable.aligned(rows)
    }

    /// The result as one JSON Lines event: its fields and `"type": "result"` (after the progress events).
    public var resultEvent: ResultEvent { ResultEvent(result: self) }

    /// `{"type":"result", ...the result's fields}`.
    public struct ResultEvent: Encodable, Sendable {
        public var result: UpdateResult
        public func encode(to encoder: Encoder) throws {
            try result.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode("result", forKey: .type)
        }
        enum Key: String, CodingKey { case type }
    }
}

/// What an update stopped part way leaves behind.
public enum UpdateInterruption {
    /// What an update stopped by `stopped` (e.g. "stopped by SIGINT") leaves, by the phase it was in: whether the
    /// device changed, and what to run next.
    public static func message(_ stopped: String, during phase: UpdatePhase?) -> String {
        switch phase {
        case nil, .connect?, .authenticate?:
            return "\(stopped) before the update began; the device is unchanged"
        case .enterBootloader?:
            return "\(stopped) while entering the bootloader; the application is unchanged but the device may wait in "
                + "its bootloader: run the same command again to update it, or 'tuneup bootloader leave'"
        case .commit?:
            return "\(stopped) while committing; the device is in its bootloader: run the same command again to verify and commit"
        case .reboot?, .confirm?, .done?:
            return "\(stopped) after the new image was committed; the device is starting it (check with 'tuneup probe')"
        case let phase?:
            return "\(stopped) during \(phase.rawValue); the device is in its bootloader with a partial image: "
                + "run the same command again to resume"
        }
    }

    /// The stable code of an update failure, for the JSON error event (nil: not an updater's or a headset's error).
    public static func errorCode(_ error: any Error) -> String? {
        (error as? UpdateError)?.code.rawValue ?? (error as? HeadsetError)?.code.rawValue
    }
}
