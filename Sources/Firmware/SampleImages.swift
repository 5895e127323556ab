import LightX

/// Builders for simulated-headset application images, as `tools/make-firmware-images.sh` makes them.
///
/// Contract: `application(...)` is `AppManifest.buildPayload` signed as an app-region MCUboot image for the
/// manifest's model and version, so the simulator can build its factory image in code, byte-identical to
/// `firmware-images/app-1.4.2.img` (`factoryApplication`).
public enum SampleImages {
    /// Payload size of the factory image (`firmware-images/app-1.4.2.img`; the simulator's `FactoryFirmware`).
    public static let factoryPayloadSize = 64 * 1024
    /// Filler seed of the factory image (the simulator's `FactoryFirmware.payloadSeed`).
    public static let factorySeed: UInt64 = 0x0001_0004_0002

    /// A signed application image: `AppManifest.buildPayload(manifest, size:, seed:)`, version and model from the
    /// manifest (version 0.0.0 if it does not parse), region app, signed with `key` (nil: unsigned).
    public static func application(_ manifest: AppManifest, payloadSize: Int, seed: UInt64,
                                   key: SigningKey? = DevelopmentKeys.testOnlySigningKey) -> MCUbootImage {
        MCUbootImage.sign(payload: AppManifest.buildPayload(manifest, size: payloadSize, seed: seed),
                          version: manifest.imageVersion ?? ImageVersion(major: 0, minor: 0, revision: 0),
                          model: manifest.model, region: .application, key: key)
    }

    /// The factory application the simulated headset ships with: `AppManifest.factory` (1.4.2), 64 KiB payload,
    /// seed 0x100040002, signed with the test-only development key. Equal to `firmware-images/app-1.4.2.img`.
    public static let factoryApplication: MCUbootImage =
        application(.factory, payloadSize: factoryPayloadSize, seed: factorySeed)
}
