import Crypto
import Firmware
import Foundation
import LightX

/// A recipe checked against everything it names: the images exist, parse, are signed by the recipe's key and are
/// made for its model, and the settings fit the application's manifest. What a station runs.
public struct LoadedRecipe: Sendable {
    /// The recipe.
    public let recipe: ProvisioningRecipe
    /// The recipe file as given.
    public let path: String
    /// The application image (region app), verified with `key`.
    public let application: FirmwareImage
    /// The resource image (region resource), verified with `key`, when the recipe has one.
    public let resource: FirmwareImage?
    /// The key every image is signed with.
    public let key: VerificationKey
    /// A prompt's image file: its path (relative ones from the recipe's directory) and its media type.
    public func image(of prompt: ProvisioningRecipe.PromptSpec) -> (path: String, mediaType: String)? {
        guard let image = prompt.image, let type = ProvisioningRecipe.PromptSpec.imageTypes[(image as NSString).pathExtension.lowercased()] else { return nil }
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? ""
        return (image.hasPrefix("/") ? image : directory + image, type)
    }
    /// `recipe.contentHash`.
    public var contentHash: String { recipe.contentHash }
    /// The identity generator of the recipe.
    public var identityGenerator: IdentityGenerator { recipe.identityGenerator }
}

extension ProvisioningRecipe {
    /// Reads, parses and checks a recipe and everything it names (see `LoadedRecipe`). Image and key paths are
    /// relative to the recipe's directory. Every error is one line, `file:line:column: key: what`, the place being
    /// the key that names the image or holds the value.
    ///
    /// Blocking file I/O: call it off the cooperative pool for large images.
    public static func load(path: String) throws(RecipeError) -> LoadedRecipe {
        let bytes: [UInt8]
        do {
            bytes = try FileAccess.read(path, limit: 1 << 20)
        } catch {
            throw RecipeError(error.code == .io ? .io : .outOfRange, error.message)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw RecipeError(.syntax, "is not UTF-8 text", at: SourceLocation(file: path, line: 1, column: 1), key: nil)
        }
        let (recipe, locations) = try parse(yaml: text, file: path)
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? ""
        func resolve(_ relative: String) -> String { relative.hasPrefix("/") ? relative : directory + relative }

        let key: VerificationKey
        do {
            key = try VerificationKey.load(path: resolve(recipe.images.key))
        } catch {
            throw locations.error("images.key", error.code == .io ? .io : .badImage, error.message)
        }
        func image(_ keyPath: String, _ relative: String, region: FlashRegion) throws(RecipeError) -> FirmwareImage {
            let image: FirmwareImage
            do {
                image = try FirmwareImage.load(path: resolve(relative), region: region)
                try image.verify(with: key)
            } catch {
                let why = error.code == .wrongKey || error.code == .badSignature
                    ? "\(error.message) (the recipe's key is \(recipe.images.key))" : error.message
                throw locations.error(keyPath, error.code == .io ? .io : .badImage, why)
            }
            let models = [image.mcuboot?.model, image.manifest?.model].compactMap { $0 }
            guard !models.isEmpty else {
                throw locations.error(keyPath, .wrongModel, "\(resolve(relative)): says no model (no model TLV, no manifest); the recipe is for \(recipe.product.model)")
            }
            if let other = models.first(where: { $0 != recipe.product.model }) {
                throw locations.error(keyPath, .wrongModel, "\(resolve(relative)): is made for model \(other), but the recipe is for \(recipe.product.model)")
            }
            return image
        }
        let application = try image("images.application", recipe.images.application, region: .application)
        let resource = try recipe.images.resource.map { r throws(RecipeError) in try image("images.resource", r, region: .resource) }
        if let manifest = application.manifest {
            try recipe.checkSettings(against: manifest, locations: locations)
        }
        // A prompt's image: in the recipe's folder (or absolute), a regular file the page can show.
        for (index, prompt) in (recipe.prompts ?? []).enumerated() {
            guard let image = prompt.image else { continue }
            let key = "tests[\(prompt.position + index)].prompt.image"
            let ext = (image as NSString).pathExtension.lowercased()
            guard ProvisioningRecipe.PromptSpec.imageTypes[ext] != nil else {
                throw locations.error(key, .outOfRange, "\(image): an image is .png, .jpg, .jpeg, .gif, .svg or .webp")
            }
            var status = stat()
            guard stat(resolve(image), &status) == 0 else {
                throw locations.error(key, .io, "\(resolve(image)): \(String(cString: strerror(errno)))")
            }
            guard (status.st_mode & S_IFMT) == S_IFREG, status.st_size <= 4 << 20 else {
                throw locations.error(key, .outOfRange, "\(resolve(image)): is not a regular file of at most 4 MiB")
            }
        }
        return LoadedRecipe(recipe: recipe, path: path, application: application, resource: resource, key: key)
    }

    /// The settings against what the application firmware offers (ambient steps, EQ presets, bands, gain range):
    /// the checks `Headset` makes against the device, made before any unit is touched.
    func checkSettings(against manifest: AppManifest, locations: RecipeLocations) throws(RecipeError) {
        let steps = manifest.ambientSteps
        for (side, value) in [("left", settings.ambient?.left), ("right", settings.ambient?.right)] {
            if let value, value >= steps {
                throw locations.error("settings.ambient.\(side)", .outOfRange,
                                      "\(value) is out of range 0...\(steps - 1) (application \(manifest.version) has \(steps) ambient steps)")
            }
        }
        guard let eq = settings.eq, let preset = eq.graphicPreset else { return }
        let names = manifest.presets.map(\.name)
        guard names.contains(preset) else {
            var text = "'\(preset)' is not a preset of application \(manifest.version) (\(names.joined(separator: ", ")))"
            if let near = Spelling.closest(to: preset, in: names) { text += "; did you mean '\(near)'?" }
            throw locations.error("settings.eq.graphic-preset", .outOfRange, text)
        }
        guard let gains = eq.gains else { return }
        guard gains.count == manifest.bandFrequencies.count else {
            throw locations.error("settings.eq.gains", .outOfRange,
                                  "\(gains.count) gains for \(manifest.bandFrequencies.count) bands (application \(manifest.version))")
        }
        let range = Int(manifest.minGain)...Int(manifest.maxGain)
        if let bad = gains.firstIndex(where: { !range.contains($0) }) {
            throw locations.error("settings.eq.gains", .outOfRange,
                                  "gain \(gains[bad]) of band \(bad + 1) is out of range \(range.lowerBound)...\(range.upperBound) dB")
        }
    }

    /// The canonical form: the recipe's values as JSON with sorted keys and no insignificant whitespace, so the same
    /// content gives the same bytes whatever the YAML's key order, layout, comments or number spelling (`18` = `18.0`).
    public var canonicalJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every member encodes plain strings, numbers, booleans and containers: encoding cannot fail.
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// SHA-256 of `canonicalJSON`, lowercase hex (64 characters): what unit records store as the recipe hash.
    public var contentHash: String {
        SHA256.hash(data: Data(canonicalJSON.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
