import Firmware
import LightX

extension HeadsetState {
    /// What the application, booting from flash, takes from its image's manifest (`AppManifest`), applied to the
    /// stored settings:
    /// - firmware version: `manifest.version` for ConfigFirmwareVersion (as written) and AppFirmwareVersion
    ///   (major.minor.revision, each clamped to 0...255); without a manifest, or with an unparsable version,
    ///   `imageVersion` (the commit record's, from the MCUboot header);
    /// - model number and product name (`product`, or the factory product name when the manifest has none);
    /// - ambient steps (the stored left/right steps are clamped below the new count);
    /// - the graphic EQ: when the stored EQ's layout — band frequencies, gain range, preset names and factory
    ///   gains — differs from the manifest's, the EQ resets to the manifest's factory presets (preset 0 current and
    ///   default); otherwise the user's gains are kept.
    /// Values the firmware could not accept (no bands, gains outside the range, ...) are ignored, keeping what was
    /// stored, so a malformed manifest never produces an invalid state.
    mutating func adopt(_ manifest: AppManifest?, imageVersion: ImageVersion, index: Int) {
        let before = self
        let factoryIdentity = HeadsetIdentity.factory(index: index)
        guard let manifest else {
            firmwareVersion = FirmwareVersion(imageVersion.major, imageVersion.minor, UInt8(clamping: imageVersion.revision))
            identity.firmwareVersion = imageVersion.versionFileText
            return
        }
        if let parsed = ImageVersion(parsing: manifest.version) {
            firmwareVersion = FirmwareVersion(parsed.major, parsed.minor, UInt8(clamping: parsed.revision))
            identity.firmwareVersion = manifest.version
        } else {
            firmwareVersion = FirmwareVersion(imageVersion.major, imageVersion.minor, UInt8(clamping: imageVersion.revision))
            identity.firmwareVersion = imageVersion.versionFileText
        }
        if !manifest.model.isEmpty { identity.modelNumber = manifest.model }
        identity.productName = manifest.product ?? factoryIdentity.productName
        if manifest.ambientSteps >= 1, manifest.ambientSteps <= Int(Int32.max) {
            ambientSteps = UInt32(manifest.ambientSteps)
            ambientLeft = Swift.min(ambientLeft, ambientSteps - 1)
            ambientRight = Swift.min(ambientRight, ambientSteps - 1)
        }
        let layout = GraphicEQState(
            bandFrequencies: manifest.bandFrequencies, minGain: manifest.minGain, maxGain: manifest.maxGain,
            presets: manifest.presets.map { SimulatedEQPreset(name: $0.name, factoryGains: $0.gains) },
            currentPreset: 0, defaultPreset: 0, factoryDefaultPreset: 0)
        if (try? layout.validate()) != nil, !graphicEQ.hasLayout(of: layout) {
            graphicEQ = layout
        }
        if (try? validate()) == nil { self = before }
    }
}

extension GraphicEQState {
    /// Whether this EQ has the same bands, gain range, preset names and factory gains as `other`.
    func hasLayout(of other: GraphicEQState) -> Bool {
        bandFrequencies == other.bandFrequencies && minGain == other.minGain && maxGain == other.maxGain
            && presets.map(\.name) == other.presets.map(\.name) && presets.map(\.factoryGains) == other.presets.map(\.factoryGains)
    }
}
