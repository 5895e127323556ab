import Headset
import LightX
import Recipe

/// Applies a recipe's settings to a unit running its application, reading each back.
struct SettingsApplier: Sendable {
    let recipe: LoadedRecipe

    /// Whether the recipe sets nothing (the step is left out).
    static func isEmpty(_ s: ProvisioningRecipe.Settings) -> Bool {
        s.anc == nil && s.ambient == nil && s.eq == nil && s.smartButton == nil && s.autoOff == nil && s.voicePrompt == nil
    }

    func apply(to headset: Headset) async throws {
        let settings = recipe.recipe.settings
        if let anc = settings.anc {
            try await headset.setANC(anc.enabled)
            if let level = anc.level { try await headset.setANCLevel(Float(level)) }
            try await check("ANC", anc.enabled, try await headset.isANCEnabled())
        }
        if let ambient = settings.ambient {
            if let preset = ambient.preset { try await headset.setAwarenessPreset(preset.code) }
            if ambient.left != nil || ambient.right != nil {
                try await headset.setAmbient(left: ambient.left, right: ambient.right)
                let levels = try await headset.ambientLevels()
                if let left = ambient.left { try await check("ambient left", left, levels.left) }
                if let right = ambient.right { try await check("ambient right", right, levels.right) }
            }
        }
        if let eq = settings.eq {
            if let preset = eq.audioPreset { try await headset.setAudioEQPreset(preset.code) }
            if let name = eq.graphicPreset {
                let info = try await headset.graphicEQInfo()
                guard let index = info.presetIndex(name) else {
                    throw StepStop(outcome: .error, message: "the unit has no graphic EQ preset '\(name)'")
                }
                if let gains = eq.gains {
                    try await headset.setGraphicEQGains(preset: index, gains: gains)
                    try await check("EQ gains", gains, try await headset.graphicEQGains(preset: index))
                }
                try await headset.selectGraphicEQPreset(index)
            }
        }
        if let on = settings.smartButton { try await headset.setSmartButtonControlsANC(on) }
        if let on = settings.autoOff { try await headset.setAutoOff(on) }
        if let on = settings.voicePrompt { try await headset.setVoicePrompt(on) }
    }

    private func check<T: Equatable>(_ what: String, _ wanted: T, _ held: T) async throws {
        guard wanted == held else { throw StepStop(outcome: .error, message: "set \(what) to \(wanted) but the unit holds \(held)") }
    }
}
