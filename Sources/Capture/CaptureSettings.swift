import Transport

/// What `--capture FILE` asks of the code that opens links: the file, the family of the links (for byte streams whose
/// address does not say it: `tcp:`, `serial:`), the side writing it, and where its one warning goes.
///
/// Every link opened with the same path in a process shares one file (one interface each): the file is created by the
/// first link (refused then if it exists, `OutputFileError`, exit 74), later links of the command add interfaces.
public struct CaptureSettings: Sendable {
    public var path: String
    public var family: CaptureFamily
    public var role: CaptureRole
    /// `shb_userappl`: "tuneup <version>".
    public var application: String
    /// Where the one warning of a capture that ended (a full disk) goes: one line.
    public var warn: @Sendable (String) -> Void

    public init(path: String, family: CaptureFamily = .lightX, role: CaptureRole = .host, application: String = "tuneup",
                warn: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.family = family
        self.role = role
        self.application = application
        self.warn = warn
    }

    /// The writer of `path`, created on first use (shared by every later use in this process).
    public func writer() async throws -> CaptureWriter {
        try await CaptureFiles.shared.writer(self)
    }

    /// `transport` wrapped in a `CapturingTransport` on a new interface of the file: links of `family` (default: these
    /// settings'), named `name` (default: the transport's `peerDescription`).
    public func wrap(_ transport: any Transport, family: CaptureFamily? = nil, name: String? = nil) async throws -> any Transport {
        let writer: CaptureWriter
        do {
            writer = try await self.writer()
        } catch {
            await transport.close()
            throw error
        }
        return LinkCapture(writer: writer, family: family ?? self.family, role: role).wrap(transport, name: name)
    }

    /// The family of a link opened by an address of `scheme`: its own when the scheme says it (speakers, BLE and the
    /// simulated wearable and speaker), else these settings'.
    public func family(ofScheme scheme: String) -> CaptureFamily {
        switch scheme {
        case "speaker", "sim:speaker": .speaker
        case "ble", "sim:wearable": .wearable
        case "usb", "bt", "sim", "sim:headset": .lightX
        default: family
        }
    }
}

/// The capture files open in this process, by path.
actor CaptureFiles {
    static let shared = CaptureFiles()
    private var writers: [String: Task<CaptureWriter, any Error>] = [:]

    func writer(_ settings: CaptureSettings) async throws -> CaptureWriter {
        if let task = writers[settings.path] { return try await task.value }
        let task = Task { () async throws -> CaptureWriter in
            try await CaptureWriter.create(path: settings.path, application: settings.application, warn: settings.warn)
        }
        writers[settings.path] = task
        do {
            return try await task.value
        } catch {
            writers[settings.path] = nil  // refused: a later attempt says so again
            throw error
        }
    }
}
