import LightX
import Logging
import Synchronization
import Transport

/// The typed API of a LightX headset over a `LightXSession`.
///
/// Every setter checks its argument against what the device reports (band count, gain range, ambient steps)
/// before anything is sent, and every failing device status becomes a `HeadsetError` naming the command.
/// All methods throw `HeadsetError` (or `CancellationError` when the calling task is cancelled).
public final class Headset: Sendable {
    public let session: LightXSession
    private let cache = Mutex(Cache())

    private struct Cache {
        var limits: GraphicEQLimits?
        var ambientSteps: Int?
    }

    /// Wraps an existing session.
    public init(session: LightXSession) {
        self.session = session
    }

    /// Opens the device at `address` and starts a session.
    public static func open(
        _ address: DeviceAddress, connector: TransportConnector = TransportConnector(),
        options: LightXSession.Options = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> Headset {
        let transport: any Transport
        do {
            transport = try await connector.open(address)
        } catch let error as TransportError {
            throw HeadsetError.transport(error, while: "")
        } catch let error as HeadsetError {
            throw error
        }
        return Headset(session: LightXSession(transport: transport, options: options, logger: logger))
    }

    /// Closes the session and the link.
    public func close() async { await session.close() }

    // MARK: Plumbing

    /// Sends `request`; returns the reply if its status is Ok, throws the device's status otherwise.
    public func exchange(_ request: Packet, timeout: Duration? = nil, retransmissions: Int? = nil) async throws -> Packet {
        try await session.exchange(request, timeout: timeout, retransmissions: retransmissions)
    }

    /// Reads a setting.
    public func read<V>(_ setting: Setting<V>) async throws -> V {
        let reply = try await exchange(setting.readRequest(session.style))
        return try decode(setting.codec, reply, setting.command)
    }

    /// Writes a setting (no range check: the typed setters below add those).
    public func write<V>(_ setting: Setting<V>, _ value: V) async throws {
        _ = try await exchange(try request { () throws(LightXError) in try setting.writeRequest(value, session.style) })
    }

    private func decode<V>(_ codec: ValueCodec<V>, _ reply: Packet, _ command: Command) throws -> V {
        do {
            return try codec.decode(reply.buffer)
        } catch {
            throw HeadsetError.malformed(error, command: command)
        }
    }

    private func request(_ build: () throws(LightXError) -> Packet) throws -> Packet {
        try encodeRequest(build)
    }

    /// Reads `setting`, or nil when the device answers NotSupported or NotFound.
    public func readIfSupported<V>(_ setting: Setting<V>) async throws -> V? {
        let outcome: Result<Packet, any Error>
        do {
            outcome = .success(try await session.request(setting.readRequest(session.style)))
        } catch {
            outcome = .failure(error)
        }
        return try decodeIfSupported(setting, outcome)
    }

    // MARK: Identity, firmware, battery

    /// Identity strings; a string the device does not support is nil.
    public func identity() async throws -> DeviceIdentity {
        // All strings in flight together (distinct param0s), in one batch: one task, not one per string.
        let requests = ConfigStrings.identity.map { $0.readRequest(session.style) }
        let outcomes = await session.requests(requests)
        return try identity(outcomes[...])
    }

    /// The identity from the outcomes of `ConfigStrings.identity`'s reads, in that order; the first failure in that
    /// order is thrown.
    private func identity(_ outcomes: ArraySlice<Result<Packet, any Error>>) throws -> DeviceIdentity {
        var strings: [String?] = []
        strings.reserveCapacity(ConfigStrings.identity.count)
        for (setting, outcome) in zip(ConfigStrings.identity, outcomes) {
            strings.append(try decodeIfSupported(setting, outcome))
        }
        return DeviceIdentity(product: strings[0], manufacturer: strings[1], model: strings[2], serial: strings[3],
                              hardware: strings[4], firmware: strings[5], bluetoothName: strings[6])
    }

    /// `setting`'s value from the outcome of its read (alone, or in a batch), or nil when the device answered
    /// NotSupported or NotFound.
    private func decodeIfSupported<V>(_ setting: Setting<V>, _ outcome: Result<Packet, any Error>) throws -> V? {
        do {
            return try decode(setting.codec, try okReply(try outcome.get(), to: setting.command), setting.command)
        } catch let error as HeadsetError where error.code == .deviceNotSupported || error.code == .deviceNotFound {
            return nil
        }
    }

    /// The application firmware version (0x87).
    public func firmwareVersion() async throws -> FirmwareVersion { try await read(AppSettings.firmwareVersion) }

    /// Battery level in percent (0xB0).
    public func batteryLevel() async throws -> Int { Int(try await read(AppSettings.batteryLevel)) }

    // MARK: ANC and ambient

    public func isANCEnabled() async throws -> Bool { try await read(AppSettings.ancEnabled) }
    public func setANC(_ enabled: Bool) async throws { try await write(AppSettings.ancEnabled, enabled) }

    /// ANC level 0.0...1.0 (0x88).
    public func ancLevel() async throws -> Float { try await read(AppSettings.ancLevel) }
    /// Sets the ANC level; throws `.invalidArgument` outside 0.0...1.0.
    public func setANCLevel(_ level: Float) async throws {
        guard level.isFinite, (0...1).contains(level) else {
            throw HeadsetError(.invalidArgument, "ANC level must be between 0.0 and 1.0, got \(level)")
        }
        try await write(AppSettings.ancLevel, level)
    }

    public func awarenessPreset() async throws -> AwarenessPreset { try await read(AppSettings.awarenessPreset) }
    /// Sets the awareness preset; throws `.invalidArgument` for values the protocol does not define.
    public func setAwarenessPreset(_ preset: AwarenessPreset) async throws {
        guard preset.isKnown else {
            throw HeadsetError(.invalidArgument, "awareness preset must be none, low, medium or high, got \(preset.rawValue)")
        }
        try await write(AppSettings.awarenessPreset, preset)
    }

    /// The number of ambient levels the device offers (0x8B), cached for the session.
    public func ambientSteps() async throws -> Int {
        if let steps = cache.withLock({ $0.ambientSteps }) { return steps }
        let steps = Int(try await read(AppSettings.awarenessSteps))
        guard steps > 0 else { throw HeadsetError(.malformedReply, "the device reports \(steps) ambient levels", command: .appAwarenessRawSteps) }
        cache.withLock { $0.ambientSteps = steps }
        return steps
    }

    /// Left and right ambient steps and the step count.
    public func ambientLevels() async throws -> AmbientLevels {
        let steps = try await ambientSteps()
        let left = try await read(AppSettings.awarenessLeft)
        let right = try await read(AppSettings.awarenessRight)
        return AmbientLevels(left: Int(left), right: Int(right), steps: steps)
    }

    /// Sets one or both sides; each must be within 0...steps-1 (checked against the device before sending).
    public func setAmbient(left: Int?, right: Int?) async throws {
        guard left != nil || right != nil else {
            throw HeadsetError(.invalidArgument, "give a left or a right ambient level (or both)")
        }
        let steps = try await ambientSteps()
        let sides = left == right ? [("left and right", left)] : [("left", left), ("right", right)]
        for (side, value) in sides {
            if let value, !(0..<steps).contains(value) {
                throw HeadsetError(.invalidArgument, "ambient \(side) level must be 0...\(steps - 1), got \(value)")
            }
        }
        if let left { try await write(AppSettings.awarenessLeft, UInt32(left)) }
        if let right { try await write(AppSettings.awarenessRight, UInt32(right)) }
    }

    // MARK: Equalizers

    public func audioEQPreset() async throws -> AudioEQPreset { try await read(AppSettings.audioEQPreset) }
    /// Sets the audio EQ preset; throws `.invalidArgument` for values the protocol does not define.
    public func setAudioEQPreset(_ preset: AudioEQPreset) async throws {
        guard preset.isKnown else {
            throw HeadsetError(.invalidArgument, "audio EQ preset must be music, gaming, movie or conference, got \(preset.rawValue)")
        }
        try await write(AppSettings.audioEQPreset, preset)
    }

    /// Graphic-EQ limits (0x90), checked and cached for the session.
    /// Throws `.tooManyBands` above 10 bands and `.noBands` for none, as the reference SDK does.
    public func graphicEQLimits() async throws -> GraphicEQLimits {
        if let limits = cache.withLock({ $0.limits }) { return limits }
        let limits = try await read(AppSettings.graphicEQLimits)
        guard limits.bandCount > 0 else { throw HeadsetError(.noBands, "the device reports no graphic-EQ bands", command: .appGraphicEQLimits) }
        guard limits.bandCount <= 10 else {
            throw HeadsetError(.tooManyBands, "the device reports \(limits.bandCount) graphic-EQ bands; at most 10 are supported", command: .appGraphicEQLimits)
        }
        guard limits.minGain <= limits.maxGain else {
            throw HeadsetError(.malformedReply, "the device reports a gain range \(limits.minGain)...\(limits.maxGain)", command: .appGraphicEQLimits)
        }
        cache.withLock { $0.limits = limits }
        return limits
    }

    /// Band centre frequencies in Hz (0x97).
    public func graphicEQFrequencies() async throws -> [Int] {
        let limits = try await graphicEQLimits()
        let reply = try await exchange(try request { () throws(LightXError) in
            try GraphicEQRequests.readBandFrequencies(bandCount: Int(limits.bandCount), session.style) })
        let frequencies = try decode(GraphicEQBandFrequencies.codec, reply, .appGraphicEQBandFreq)
        guard frequencies.count == limits.bandCount else {
            throw HeadsetError(.wrongNumberOfBands, "the device sent \(frequencies.count) band frequencies for \(limits.bandCount) bands", command: .appGraphicEQBandFreq)
        }
        return frequencies.map(Int.init)
    }

    /// The name of a preset (Tuneup extension 0x9A), or the default name when the device cannot name it.
    public func graphicEQPresetName(_ preset: Int) async throws -> String {
        let fallback = preset < GraphicEQInfo.defaultPresetNames.count ? GraphicEQInfo.defaultPresetNames[preset] : "Preset \(preset)"
        do {
            let reply = try await exchange(try request { () throws(LightXError) in
                try GraphicEQRequests.readPresetName(preset: UInt32(preset), session.style) })
            let name = try decode(GraphicEQRequests.presetNameCodec, reply, .appGraphicEQPresetName)
            return name.isEmpty ? fallback : name
        } catch let error as HeadsetError where error.code == .deviceNotSupported || error.code == .deviceNotFound {
            return fallback
        }
    }

    public func graphicEQCurrentPreset() async throws -> Int { Int(try await read(AppSettings.graphicEQCurrentPreset)) }

    /// Limits, frequencies, preset names and the current preset.
    public func graphicEQInfo() async throws -> GraphicEQInfo {
        let limits = try await graphicEQLimits()
        async let frequencies = graphicEQFrequencies()
        async let current = graphicEQCurrentPreset()
        // The names one after another: their requests share param0 (the preset is in the argument), so the session
        // would queue them anyway; the frequencies and the current preset are in flight meanwhile.
        var presets: [GraphicEQPresetInfo] = []
        for index in 0..<Int(limits.settingCount) {
            presets.append(GraphicEQPresetInfo(index: index, name: try await graphicEQPresetName(index)))
        }
        return GraphicEQInfo(bandCount: Int(limits.bandCount), minGain: Int(limits.minGain), maxGain: Int(limits.maxGain),
                             frequencies: try await frequencies, presets: presets, currentPreset: try await current)
    }

    private func checkPreset(_ preset: Int, _ limits: GraphicEQLimits) throws {
        guard (0..<Int(limits.settingCount)).contains(preset) else {
            throw HeadsetError(.invalidArgument, "graphic-EQ preset must be 0...\(Int(limits.settingCount) - 1), got \(preset)")
        }
    }

    private func checkGain(_ gain: Int, band: Int, _ limits: GraphicEQLimits) throws {
        guard (Int(limits.minGain)...Int(limits.maxGain)).contains(gain) else {
            throw HeadsetError(.invalidArgument, "gain of band \(band) must be \(limits.minGain)...\(limits.maxGain) dB, got \(gain)")
        }
    }

    /// The band gains (dB) of `preset` (0x94).
    public func graphicEQGains(preset: Int) async throws -> [Int] {
        let limits = try await graphicEQLimits()
        try checkPreset(preset, limits)
        let reply = try await exchange(try request { () throws(LightXError) in
            try GraphicEQRequests.readPresetGains(preset: UInt32(preset), bandCount: Int(limits.bandCount), session.style) })
        let value = try decode(GraphicEQPresetGains.codec, reply, .appGraphicEQPresetBandSettings)
        guard value.gains.count == limits.bandCount else {
            throw HeadsetError(.wrongNumberOfBands, "the device sent \(value.gains.count) gains for \(limits.bandCount) bands", command: .appGraphicEQPresetBandSettings)
        }
        return value.gains.map(Int.init)
    }

    /// Sets all band gains of `preset`: exactly one value per band, each within the device's gain range.
    public func setGraphicEQGains(preset: Int, gains: [Int]) async throws {
        let limits = try await graphicEQLimits()
        try checkPreset(preset, limits)
        guard gains.count == limits.bandCount else {
            throw HeadsetError(.invalidArgument, "give \(limits.bandCount) gains, one per band; got \(gains.count)")
        }
        for (band, gain) in gains.enumerated() { try checkGain(gain, band: band, limits) }
        let value = GraphicEQPresetGains(preset: UInt32(preset), gains: gains.map { Int32($0) })
        _ = try await exchange(try request { () throws(LightXError) in try GraphicEQRequests.writePresetGains(value, session.style) })
    }

    /// The gain of one band of a preset (0x95).
    public func graphicEQBand(preset: Int, band: Int) async throws -> Int {
        let limits = try await graphicEQLimits()
        try checkPreset(preset, limits)
        guard (0..<Int(limits.bandCount)).contains(band) else {
            throw HeadsetError(.invalidArgument, "band must be 0...\(limits.bandCount - 1), got \(band)")
        }
        let reply = try await exchange(try request { () throws(LightXError) in
            try GraphicEQRequests.readBand(preset: UInt32(preset), band: UInt32(band), session.style) })
        return Int(try decode(GraphicEQBandGain.codec, reply, .appGraphicEQBand).gain)
    }

    /// Sets the gain of one band of a preset.
    public func setGraphicEQBand(preset: Int, band: Int, gain: Int) async throws {
        let limits = try await graphicEQLimits()
        try checkPreset(preset, limits)
        guard (0..<Int(limits.bandCount)).contains(band) else {
            throw HeadsetError(.invalidArgument, "band must be 0...\(limits.bandCount - 1), got \(band)")
        }
        try checkGain(gain, band: band, limits)
        let value = GraphicEQBandGain(preset: UInt32(preset), band: UInt32(band), gain: Int32(gain))
        _ = try await exchange(try request { () throws(LightXError) in try GraphicEQRequests.writeBand(value, session.style) })
    }

    /// Makes `preset` the current preset.
    public func selectGraphicEQPreset(_ preset: Int) async throws {
        try checkPreset(preset, try await graphicEQLimits())
        try await write(AppSettings.graphicEQCurrentPreset, UInt32(preset))
    }

    /// Stores the preset's current gains in the device's non-volatile memory.
    public func persistGraphicEQPreset(_ preset: Int) async throws {
        try checkPreset(preset, try await graphicEQLimits())
        try await write(AppSettings.graphicEQPersistPreset, UInt32(preset))
    }

    /// Makes `preset` the one the device starts with.
    public func setDefaultGraphicEQPreset(_ preset: Int) async throws {
        try checkPreset(preset, try await graphicEQLimits())
        try await write(AppSettings.graphicEQDefaultPreset, UInt32(preset))
    }

    /// Restores factory gains of one preset, or of all presets when `preset` is nil.
    public func factoryResetGraphicEQ(preset: Int?) async throws {
        if let preset {
            try checkPreset(preset, try await graphicEQLimits())
            try await write(AppSettings.graphicEQFactoryResetPreset, UInt32(preset))
        } else {
            try await write(AppSettings.graphicEQFactoryResetAll, 0)
        }
    }

    // MARK: Other settings

    /// Smart button: true when it toggles ANC (0xB5).
    public func smartButtonControlsANC() async throws -> Bool { try await read(AppSettings.smartButton) }
    public func setSmartButtonControlsANC(_ on: Bool) async throws { try await write(AppSettings.smartButton, on) }
    /// On-ear detection with auto-off (0xB6).
    public func autoOff() async throws -> Bool { try await read(AppSettings.autoOff) }
    public func setAutoOff(_ on: Bool) async throws { try await write(AppSettings.autoOff, on) }
    /// Voice prompts (0xB7).
    public func voicePrompt() async throws -> Bool { try await read(AppSettings.voicePrompt) }
    public func setVoicePrompt(_ on: Bool) async throws { try await write(AppSettings.voicePrompt, on) }

    // MARK: Bootloader access

    /// Authenticates the host (sheet §5): challenge, response = challenge XOR 0x5D, status.
    /// Throws `.challengeLength` for a challenge shorter than 16 bytes and `.authenticationFailed` when refused.
    public func authenticate() async throws {
        try await bootloader.authenticate()
    }

    /// Whether the device is running its bootloader (BootImageType byte 0 = 0).
    public func isInBootloader() async throws -> Bool {
        let reply = try await exchange(BootRequests.imageType(session.style))
        do {
            return try BootRequests.isBootloader(imageTypeReply: reply.buffer)
        } catch {
            throw HeadsetError.malformed(error, command: .bootImageType)
        }
    }

    /// Which firmware runs, and in the bootloader which application is committed; nil when the device does not
    /// answer BootImageType.
    public func firmwareMode() async throws -> FirmwareMode? {
        let reply = try await session.request(BootRequests.imageType(session.style))
        guard reply.status == .ok else { return nil }
        let inBootloader: Bool
        do {
            inBootloader = try BootRequests.isBootloader(imageTypeReply: reply.buffer)
        } catch {
            throw HeadsetError.malformed(error, command: .bootImageType)
        }
        guard inBootloader else { return FirmwareMode(running: .application) }
        return FirmwareMode(running: .bootloader, committedApplication: try await bootloader.versionFile(of: .application))
    }

    // MARK: Pushes and snapshots

    /// Decoded device pushes from now on; the stream finishes when the session ends.
    public func pushes() async -> AsyncMapSequence<AsyncStream<Packet>, HeadsetPush> {
        await session.pushes().map(HeadsetPush.init)
    }

    /// Reads everything readable. Features the device answers NotSupported (or NotFound) for are nil.
    public func snapshot() async throws -> HeadsetSnapshot {
        // Independent reads are in flight together (the session pipelines requests whose param0 differ, and queues
        // the rest): a probe costs a few round trips, not one per setting. A read that depends on another (the ANC
        // level on ANC being there, the ambient sides on its steps, the EQ gains on its current preset) follows it.
        // Every read that depends on no other goes out in one batch from this task, and those that depend on one
        // of them (the ANC level, the ambient sides) in a second; the firmware mode and the graphic EQ (a chain of
        // its own) run in child tasks meanwhile. One task per chain, not per read. Errors are thrown in the order
        // they always were.
        async let mode = firmwareMode()
        async let graphicEQ = snapshotGraphicEQ()
        let style = session.style
        let n = ConfigStrings.identity.count
        var requests = ConfigStrings.identity.map { $0.readRequest(style) }
        requests += [AppSettings.firmwareVersion.readRequest(style), AppSettings.batteryLevel.readRequest(style),
                     AppSettings.smartButton.readRequest(style), AppSettings.autoOff.readRequest(style),
                     AppSettings.voicePrompt.readRequest(style), AppSettings.ancEnabled.readRequest(style),
                     AppSettings.awarenessSteps.readRequest(style), AppSettings.awarenessPreset.readRequest(style),
                     AppSettings.audioEQPreset.readRequest(style)]
        let first = await session.requests(requests)
        let ancEnabled = Result { try decodeIfSupported(AppSettings.ancEnabled, first[n + 5]) }
        let steps = Result { try decodeIfSupported(AppSettings.awarenessSteps, first[n + 6]) }
        let readsLevel = if case .success(.some) = ancEnabled { true } else { false }
        let readsSides = if case let .success(count?) = steps, count > 0 { true } else { false }
        var dependent: [Packet] = []
        if readsLevel { dependent.append(AppSettings.ancLevel.readRequest(style)) }
        if readsSides { dependent += [AppSettings.awarenessLeft.readRequest(style), AppSettings.awarenessRight.readRequest(style)] }
        let second = dependent.isEmpty ? [] : await session.requests(dependent)
        let sides = readsLevel ? 1 : 0

        let settings = HeadsetSnapshot.Settings(
            smartButtonANC: try decodeIfSupported(AppSettings.smartButton, first[n + 2]),
            autoOff: try decodeIfSupported(AppSettings.autoOff, first[n + 3]),
            voicePrompt: try decodeIfSupported(AppSettings.voicePrompt, first[n + 4]))
        var ambient = HeadsetSnapshot.Ambient()
        if let count = try steps.get(), count > 0 {
            cache.withLock { $0.ambientSteps = Int(count) }
            ambient.steps = Int(count)
            ambient.left = try decodeIfSupported(AppSettings.awarenessLeft, second[sides]).map(Int.init)
            ambient.right = try decodeIfSupported(AppSettings.awarenessRight, second[sides + 1]).map(Int.init)
        }
        if let preset = try decodeIfSupported(AppSettings.awarenessPreset, first[n + 7]) {
            ambient.preset = preset.name?.lowercased()
            ambient.presetValue = preset.rawValue
        }
        let firmwareMode = try await mode
        let identity = try identity(first[..<n])
        let firmware = try decodeIfSupported(AppSettings.firmwareVersion, first[n])
        let battery = try decodeIfSupported(AppSettings.batteryLevel, first[n + 1])
        var anc: HeadsetSnapshot.ANC?
        if let enabled = try ancEnabled.get() {
            anc = .init(enabled: enabled, level: try decodeIfSupported(AppSettings.ancLevel, second[0]))
        }
        var eq = try await graphicEQ
        eq.audioPreset = try decodeIfSupported(AppSettings.audioEQPreset, first[n + 8]).map { $0.name?.lowercased() ?? String($0.rawValue) }
        return HeadsetSnapshot(
            mode: firmwareMode, identity: identity, firmwareVersion: firmware?.description,
            batteryPercent: battery.map(Int.init), anc: anc,
            ambient: ambient == HeadsetSnapshot.Ambient() ? nil : ambient, eq: eq, settings: settings)
    }

    /// The graphic EQ's part of the snapshot (nil when the device has none); the audio preset is read apart.
    private func snapshotGraphicEQ() async throws -> HeadsetSnapshot.EQ {
        var eq = HeadsetSnapshot.EQ()
        do {
            let info = try await graphicEQInfo()
            eq.graphic = info
            eq.gains = try await graphicEQGains(preset: info.currentPreset)
        } catch let error as HeadsetError where error.code == .deviceNotSupported || error.code == .deviceNotFound {
            eq.graphic = nil
        }
        return eq
    }
}
