import Crypto
import Foundation

/// The rules of a run's traceability (work order, lot, fixture, metadata), of attachments and of releases: one
/// place, used by both stores, the station and the command line, so a bad value is refused with the same line
/// wherever it comes from. Pure.
public enum Traceability {
    /// At most this many metadata entries per run.
    public static let maxMetadataEntries = 32
    /// A key: 1...64 characters of `A-Z a-z 0-9 _ . -`.
    public static let maxKeyLength = 64
    /// A value (metadata, work order, lot, fixture, operator, a release's reason): one line of at most 256 characters.
    public static let maxValueLength = 256
    /// An attachment's content: at most 4 MiB.
    public static let maxAttachmentBytes = 4 << 20
    /// An attachment's name: 1...128 characters of `A-Z a-z 0-9 _ . -`.
    public static let maxAttachmentNameLength = 128
    /// At most this many attachments per run.
    public static let maxAttachments = 64

    /// Whether `text` is a usable key (metadata key, attachment name up to `maxLength`).
    public static func isKey(_ text: String, maxLength: Int = maxKeyLength) -> Bool {
        !text.isEmpty && text.count <= maxLength
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_.-".unicodeScalars.contains($0)) }
    }

    /// Why `text` is not a usable one-line value of `what`, or nil when it is.
    public static func problem(value text: String, what: String, maxLength: Int = maxValueLength) -> String? {
        if text.count > maxLength { return "\(what) is longer than \(maxLength) characters" }
        if text.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) || $0 == "\u{2028}" || $0 == "\u{2029}" }) {
            return "\(what) must be one line (no line breaks or control characters)"
        }
        return nil
    }

    /// Checks a run's traceability; throws `RecordsError.invalidArgument` with one line naming the first problem.
    public static func check(_ start: RunStart) throws {
        for (what, value) in [("operator", start.operatorName), ("work order", start.workOrder ?? ""), ("lot", start.lot ?? ""),
                              ("fixture", start.fixture ?? "")] {
            if let problem = problem(value: value, what: what) { throw RecordsError(.invalidArgument, problem) }
        }
        try check(metadata: start.metadata)
    }

    /// Checks metadata entries (keys, values, count).
    public static func check(metadata: [String: String]) throws {
        guard metadata.count <= maxMetadataEntries else {
            throw RecordsError(.invalidArgument, "\(metadata.count) metadata entries; at most \(maxMetadataEntries)")
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            guard isKey(key) else {
                throw RecordsError(.invalidArgument, "metadata key '\(key)': use 1...\(maxKeyLength) characters of A-Z a-z 0-9 _ . -")
            }
            if let problem = problem(value: value, what: "metadata \(key)") { throw RecordsError(.invalidArgument, problem) }
        }
    }

    /// Checks an attachment before it is stored.
    public static func check(_ attachment: Attachment) throws {
        guard isKey(attachment.name, maxLength: maxAttachmentNameLength) else {
            throw RecordsError(
                .invalidArgument, "attachment name '\(attachment.name)': use 1...\(maxAttachmentNameLength) characters of A-Z a-z 0-9 _ . -")
        }
        guard isMediaType(attachment.mediaType) else {
            throw RecordsError(.invalidArgument, "attachment \(attachment.name): '\(attachment.mediaType)' is not a media type such as text/plain")
        }
        guard let content = attachment.content else { throw RecordsError(.invalidArgument, "attachment \(attachment.name) has no content") }
        guard content.count <= maxAttachmentBytes else {
            throw RecordsError(.invalidArgument, "attachment \(attachment.name) is \(content.count) bytes; at most \(maxAttachmentBytes) (4 MiB)")
        }
    }

    /// `type/subtype` (RFC 6838 names, at most 100 characters, no parameters).
    public static func isMediaType(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard text.count <= 100, parts.count == 2 else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "!#$&-^_.+".unicodeScalars.contains($0)) }
        }
    }

    /// The media type of a file name's extension (text/plain for .log and .txt, text/csv, application/json, ...;
    /// application/octet-stream otherwise).
    public static func mediaType(ofFile name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "txt", "log": "text/plain"
        case "csv": "text/csv"
        case "json": "application/json"
        case "xml": "application/xml"
        case "png": "image/png"
        case "svg": "image/svg+xml"
        case "wav": "audio/wav"
        case "pdf": "application/pdf"
        default: "application/octet-stream"
        }
    }

    /// SHA-256 of `data`, lowercase hex.
    public static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// A metadata map as one text, `key=value` pairs by key, separated by `; ` (CSV and terminal output).
    public static func text(_ metadata: [String: String]) -> String {
        metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
    }
}

/// Rework and quarantine: how many times a unit failed since it was last released. Pure.
public enum Rework {
    /// The unit's failed or erred runs that ended after its last release (all of them when it was never released).
    /// Aborted runs are interruptions, not failures; open runs have no verdict yet.
    public static func failuresSinceRelease(runs: [RunRecord], releases: [Release]) -> Int {
        let since = releases.map(\.releasedAt).max()
        return runs.filter { run in
            guard run.outcome == .fail || run.outcome == .error else { return false }
            guard let since else { return true }
            return (run.endedAt ?? run.start.startedAt) > since
        }.count
    }

    /// Whether a unit with these runs and releases is quarantined under `maxRework` failures.
    public static func isQuarantined(runs: [RunRecord], releases: [Release], maxRework: Int) -> Bool {
        failuresSinceRelease(runs: runs, releases: releases) >= maxRework
    }
}
