import Foundation
import LightX
import Support

/// Positions of the values the file checks (images, manifest-dependent settings) need after parsing.
struct RecipeLocations: Sendable {
    var byKey: [String: SourceLocation] = [:]
    var file: String

    func error(_ key: String, _ code: RecipeError.Code, _ text: String) -> RecipeError {
        RecipeError(code, text, at: byKey[key] ?? SourceLocation(file: file, line: 1, column: 1), key: key)
    }
}

extension ProvisioningRecipe {
    /// Parses and range-checks a recipe from YAML text; `file` names it in errors (`file:line:column: key: ...`).
    /// Does not read the images or key (`load(path:)` does).
    public init(yaml: String, file: String) throws(RecipeError) {
        self = try Self.parse(yaml: yaml, file: file).recipe
    }

    static func parse(yaml: String, file: String) throws(RecipeError) -> (recipe: ProvisioningRecipe, locations: RecipeLocations) {
        var parser = RecipeParser(locations: RecipeLocations(file: file))
        let recipe = try parser.recipe(YAMLValue.root(yaml: yaml, file: file))
        return (recipe, parser.locations)
    }
}

private struct RecipeParser {
    var locations: RecipeLocations

    mutating func remember(_ value: YAMLValue) {
        if let location = value.location { locations.byKey[value.path] = location }
    }

    mutating func recipe(_ root: YAMLValue) throws(RecipeError) -> ProvisioningRecipe {
        let f = try root.fields([
            "version", "product", "images", "identity", "settings", "calibration", "tests", "lock", "metadata", "max-rework", "spc",
            "scan",
        ])
        let version = try f.required("version").int(in: ProvisioningRecipe.formatVersion...ProvisioningRecipe.formatVersion)
        let product = try product(f.required("product"))
        let images = try images(f.required("images"))
        let identity = try identity(f.required("identity"), model: product.model)
        var settings = ProvisioningRecipe.Settings()
        if let value = f["settings"] { settings = try self.settings(value) }
        var calibration = ProvisioningRecipe.Calibration()
        if let value = f["calibration"] { calibration = try self.calibration(value) }
        var tests: [ProvisioningRecipe.TestSpec] = []
        var prompts: [ProvisioningRecipe.PromptSpec] = []
        if let value = f["tests"] { (tests, prompts) = try self.tests(value) }
        var recipe = ProvisioningRecipe(
            version: version, product: product, images: images, identity: identity, settings: settings,
            calibration: calibration, tests: tests, lock: try f["lock"]?.bool() ?? false)
        if let value = f["metadata"] { recipe.metadata = try metadata(value) }
        recipe.maxRework = try f["max-rework"]?.int(in: 1...1000)
        if !prompts.isEmpty { recipe.prompts = prompts }
        if let value = f["scan"] { recipe.scan = try scan(value) }
        if let value = f["spc"] { recipe.spc = try processControl(value, recipe: recipe) }
        return recipe
    }

    /// `metadata:` a mapping of keys (`A-Z a-z 0-9 _ . -`, 1...64) to one-line texts (at most 256 characters).
    func metadata(_ v: YAMLValue) throws(RecipeError) -> [String: String] {
        let entries = try v.entries()
        guard entries.count <= 32 else { throw v.error(.outOfRange, "\(entries.count) entries; at most 32") }
        var result: [String: String] = [:]
        for (key, value) in entries {
            guard RecipeParser.isKey(key, maxLength: 64) else {
                throw value.error(.outOfRange, "'\(key)': a metadata key uses 1...64 characters of A-Z a-z 0-9 _ . -")
            }
            let text = try value.string()
            try RecipeParser.checkLine(text, value)
            result[key] = text
        }
        return result
    }

    /// A one-line text of at most `maxLength` characters.
    static func checkLine(_ text: String, _ value: YAMLValue, maxLength: Int = 256) throws(RecipeError) {
        guard text.count <= maxLength else { throw value.error(.outOfRange, "is longer than \(maxLength) characters") }
        guard !text.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) || $0 == "\u{2028}" || $0 == "\u{2029}" }) else {
            throw value.error(.outOfRange, "must be one line (no line breaks or control characters)")
        }
    }

    static func isKey(_ text: String, maxLength: Int) -> Bool {
        !text.isEmpty && text.count <= maxLength
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_.-".unicodeScalars.contains($0)) }
    }

    /// `spc:` window, min-cpk, min-first-pass-yield, and per-measurement minimums (names the recipe measures).
    func processControl(_ v: YAMLValue, recipe: ProvisioningRecipe) throws(RecipeError) -> ProvisioningRecipe.ProcessControl {
        let f = try v.fields(["window", "min-cpk", "min-first-pass-yield", "measurements"])
        var spc = ProvisioningRecipe.ProcessControl(
            window: try f.required("window").int(in: 2...10_000), minCpk: try f["min-cpk"]?.number(in: 0.1...10),
            minFirstPassYield: try f["min-first-pass-yield"]?.number(in: 0...1))
        var known = recipe.tests.map(\.name) + (recipe.prompts ?? []).filter { $0.limits != nil }.map(\.name)
        if recipe.calibration.anc?.enabled == true { known.append("anc-correction") }
        if let m = f["measurements"] {
            var measurements: [String: Double] = [:]
            for (name, value) in try m.entries() {
                guard known.contains(name) else {
                    var text = "'\(name)' is not a measurement of this recipe"
                    if let near = Spelling.closest(to: name, in: known) { text += "; did you mean '\(near)'?" }
                    else { text += " (it measures \(known.joined(separator: ", ")))" }
                    throw value.error(.unknownKey, text)
                }
                let least = try value.number(in: 0...10)
                guard least == 0 || least >= 0.1 else { throw value.error(.outOfRange, "\(YAMLValue.format(least)) is out of range 0.1...10 (0 turns it off)") }
                measurements[name] = least
            }
            spc.measurements = measurements
        }
        guard spc.minCpk != nil || spc.minFirstPassYield != nil || !(spc.measurements ?? [:]).isEmpty else {
            throw v.error(.missingKey, "give min-cpk, min-first-pass-yield or measurements: the limits to hold")
        }
        return spc
    }

    mutating func product(_ v: YAMLValue) throws(RecipeError) -> ProvisioningRecipe.Product {
        let f = try v.fields(["model", "name"])
        let model = try f.required("model")
        remember(model)
        return ProvisioningRecipe.Product(model: try model.text(maxLength: 32), name: try f["name"]?.text(maxLength: 64))
    }

    mutating func images(_ v: YAMLValue) throws(RecipeError) -> ProvisioningRecipe.Images {
        let f = try v.fields(["application", "resource", "key"])
        let application = try f.required("application"), key = try f.required("key")
        remember(application)
        remember(key)
        if let resource = f["resource"] { remember(resource) }
        return ProvisioningRecipe.Images(
            application: try application.text(maxLength: 4096), resource: try f["resource"]?.text(maxLength: 4096),
            key: try key.text(maxLength: 4096))
    }

    func template(_ v: YAMLValue, kind: IdentityTemplate.Kind) throws(RecipeError) -> IdentityTemplate {
        let text = try v.text()
        do {
            return try IdentityTemplate(parsing: text, kind: kind)
        } catch {
            throw v.error(.badTemplate, "'\(text)': \(error.message)")
        }
    }

    func identity(_ v: YAMLValue, model: String) throws(RecipeError) -> IdentityRules {
        let f = try v.fields(["serial", "bluetooth-name", "bluetooth-address", "first-counter"])
        let serialValue = try f.required("serial")
        let serial = try template(serialValue, kind: .serial)
        let nameValue = try f.required("bluetooth-name")
        let name = try template(nameValue, kind: .name)
        let a = try f.required("bluetooth-address")
        let af = try a.fields(["start", "count"])
        let startValue = try af.required("start")
        let startText = try startValue.string()
        guard let start = BDAddress(parsing: startText) else {
            throw startValue.error(.wrongType, "'\(startText)' is not a Bluetooth address AA:BB:CC:DD:EE:FF")
        }
        let countValue = try af.required("count")
        let count = try countValue.int(in: Int.min...Int.max)
        let block: AddressBlock
        do {
            block = try AddressBlock(start: start, count: count)
        } catch {
            throw RecipeError(error.code, error.message, at: (error.code == .outOfRange ? startValue : countValue).location,
                              key: (error.code == .outOfRange ? startValue : countValue).path)
        }
        let firstValue = f["first-counter"]
        let first = try firstValue?.int(in: 0...999_999_999_999) ?? 1
        let rules = IdentityRules(serial: serial, bluetoothName: name, addressBlock: block, firstCounter: first)
        if rules.counters.isEmpty {
            throw (firstValue ?? serialValue).error(.identityExhausted, "the first counter \(first) does not fit the serial's counter width")
        }
        // What the device stores (the codec's limits), checked here so that no unit is flashed to fail at identity.
        if let (template, problem) = IdentityGenerator(rules: rules, model: model).deviceProblem() {
            throw (template == serial ? serialValue : nameValue).error(.deviceLimit, "'\(template.text)' \(problem)")
        }
        return rules
    }

    mutating func settings(_ v: YAMLValue) throws(RecipeError) -> ProvisioningRecipe.Settings {
        let f = try v.fields(["anc", "ambient", "eq", "smart-button", "auto-off", "voice-prompt"])
        var s = ProvisioningRecipe.Settings()
        if let anc = f["anc"] {
            let a = try anc.fields(["enabled", "level"])
            s.anc = .init(enabled: try a.required("enabled").bool(), level: try a["level"]?.number(in: 0...1))
        }
        if let ambient = f["ambient"] {
            let a = try ambient.fields(["left", "right", "preset"])
            var value = ProvisioningRecipe.Settings.Ambient()
            if let left = a["left"] { remember(left); value.left = try left.int(in: 0...255) }
            if let right = a["right"] { remember(right); value.right = try right.int(in: 0...255) }
            if let preset = a["preset"] {
                value.preset = ProvisioningRecipe.AwarenessLevel(rawValue: try preset.choice(ProvisioningRecipe.AwarenessLevel.allCases.map(\.rawValue)))
            }
            s.ambient = value
        }
        if let eq = f["eq"] {
            let e = try eq.fields(["audio-preset", "graphic-preset", "gains"])
            var value = ProvisioningRecipe.Settings.EQ()
            if let audio = e["audio-preset"] {
                value.audioPreset = ProvisioningRecipe.AudioPreset(rawValue: try audio.choice(ProvisioningRecipe.AudioPreset.allCases.map(\.rawValue)))
            }
            if let graphic = e["graphic-preset"] { remember(graphic); value.graphicPreset = try graphic.text(maxLength: 64) }
            if let gains = e["gains"] {
                remember(gains)
                let items = try gains.list()
                guard !items.isEmpty, items.count <= 32 else { throw gains.error(.outOfRange, "give 1...32 gains, one per band") }
                var list: [Int] = []
                for item in items { list.append(try item.int(in: -128...127)) }
                guard value.graphicPreset != nil else { throw gains.error(.missingKey, "gains need settings.eq.graphic-preset: the preset they are written to") }
                value.gains = list
            }
            s.eq = value
        }
        s.smartButton = try f["smart-button"]?.bool()
        s.autoOff = try f["auto-off"]?.bool()
        s.voicePrompt = try f["voice-prompt"]?.bool()
        return s
    }

    func limits(_ v: YAMLValue, range: ClosedRange<Double>) throws(RecipeError) -> ProvisioningRecipe.Limits {
        let f = try v.fields(["low", "high"])
        let low = try f["low"]?.number(in: range), high = try f["high"]?.number(in: range)
        guard low != nil || high != nil else { throw v.error(.missingKey, "give low, high or both") }
        if let low, let high, low > high {
            throw try f.required("high").error(.outOfRange, "high \(YAMLValue.format(high)) is below low \(YAMLValue.format(low))")
        }
        return ProvisioningRecipe.Limits(low: low, high: high)
    }

    func calibration(_ v: YAMLValue) throws(RecipeError) -> ProvisioningRecipe.Calibration {
        let f = try v.fields(["anc"])
        var c = ProvisioningRecipe.Calibration()
        if let anc = f["anc"] {
            let a = try anc.fields(["enabled", "limits"])
            c.anc = .init(enabled: try a.required("enabled").bool(), limits: try limits(a.required("limits"), range: -40...40))
        }
        return c
    }

    mutating func tests(_ v: YAMLValue) throws(RecipeError) -> ([ProvisioningRecipe.TestSpec], [ProvisioningRecipe.PromptSpec]) {
        var result: [ProvisioningRecipe.TestSpec] = []
        var prompts: [ProvisioningRecipe.PromptSpec] = []
        for item in try v.list() {
            if case let .mapping(mapping) = item.node, mapping.keys.contains(where: { $0.string == "prompt" }) {
                let prompt = try self.prompt(try item.fields(["prompt"]).required("prompt"), position: result.count)
                guard !result.contains(where: { $0.name == prompt.name }), !prompts.contains(where: { $0.name == prompt.name }) else {
                    throw item.error(.outOfRange, "a second test or prompt named '\(prompt.name)'")
                }
                prompts.append(prompt)
                continue
            }
            let f = try item.fields(["name", "unit", "limits", "marginal", "retry", "attach"])
            let nameValue = try f.required("name")
            let name = try nameValue.text(maxLength: 64)
            guard name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || "-_.".contains($0)) }) else {
                throw nameValue.error(.outOfRange, "'\(name)': a test name uses a-z 0-9 - _ .")
            }
            guard !result.contains(where: { $0.name == name }), !prompts.contains(where: { $0.name == name }) else {
                throw nameValue.error(.outOfRange, "a second test or prompt named '\(name)'")
            }
            let unitValue = try f.required("unit")
            let unit = ProvisioningRecipe.MeasurementUnit(rawValue: try unitValue.choice(ProvisioningRecipe.MeasurementUnit.allCases.map(\.rawValue)))!
            let range: ClosedRange<Double> = -1e12...1e12
            let pass = try limits(f.required("limits"), range: range)
            var marginal: ProvisioningRecipe.Limits?
            if let m = f["marginal"] {
                let inner = try limits(m, range: range)
                let inside = (inner.low.map { pass.contains($0) } ?? (pass.low == nil))
                    && (inner.high.map { pass.contains($0) } ?? (pass.high == nil))
                guard inside else { throw m.error(.outOfRange, "marginal limits lie within the limits") }
                marginal = inner
            }
            var retry = ProvisioningRecipe.RetryPolicy.once
            if let r = f["retry"] {
                let rf = try r.fields(["attempts", "delay"])
                retry.attempts = try rf.required("attempts").int(in: 1...10)
                if let d = rf["delay"] { retry.delay = try delay(d) }
            }
            var spec = ProvisioningRecipe.TestSpec(name: name, unit: unit, limits: pass, marginal: marginal, retry: retry)
            if let a = f["attach"] {
                let taken = Set(result.flatMap { $0.attach ?? [] }.map(\.name))
                spec.attach = try attachments(a, test: name, taken: taken)
            }
            result.append(spec)
        }
        return (result, prompts)
    }

    /// `prompt:` a step that asks the operator (docs/recipe.md, "Operator prompts and scans").
    mutating func prompt(_ v: YAMLValue, position: Int) throws(RecipeError) -> ProvisioningRecipe.PromptSpec {
        let f = try v.fields(["name", "text", "image", "answer", "pattern", "unit", "limits", "timeout"])
        let nameValue = try f.required("name")
        let name = try nameValue.text(maxLength: 64)
        guard name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || "-_.".contains($0)) }) else {
            throw nameValue.error(.outOfRange, "'\(name)': a prompt name uses a-z 0-9 - _ .")
        }
        let textValue = try f.required("text")
        let text = try textValue.text(maxLength: 256)
        try RecipeParser.checkLine(text, textValue)
        let answerValue = try f.required("answer")
        let answer = ProvisioningRecipe.PromptSpec.Answer(rawValue: try answerValue.choice(ProvisioningRecipe.PromptSpec.Answer.allCases.map(\.rawValue)))!
        var prompt = ProvisioningRecipe.PromptSpec(name: name, text: text, answer: answer, position: position)
        if let image = f["image"] {
            remember(image)
            prompt.image = try image.text(maxLength: 4096)
        }
        for key in ["pattern", "unit", "limits"] where answer == .passFail {
            if let value = f[key] { throw value.error(.outOfRange, "only a prompt with answer: value takes \(key)") }
        }
        if let p = f["pattern"] { prompt.pattern = try pattern(p) }
        if let l = f["limits"] {
            prompt.limits = try limits(l, range: -1e12...1e12)
            let unitValue = try f.required("unit")
            prompt.unit = ProvisioningRecipe.MeasurementUnit(rawValue: try unitValue.choice(ProvisioningRecipe.MeasurementUnit.allCases.map(\.rawValue)))!
        } else if let u = f["unit"] {
            throw u.error(.missingKey, "a unit goes with limits: give limits too (or leave unit out)")
        }
        if let t = f["timeout"] { prompt.timeout = try timeout(t) }
        return prompt
    }

    /// `scan:` the code the operator scans per unit.
    func scan(_ v: YAMLValue) throws(RecipeError) -> ProvisioningRecipe.ScanSpec {
        let f = try v.fields(["label", "pattern", "check-digit", "allow-duplicates", "timeout"])
        let labelValue = try f.required("label")
        let label = try labelValue.text(maxLength: 64)
        try RecipeParser.checkLine(label, labelValue)
        var scan = ProvisioningRecipe.ScanSpec(
            label: label, pattern: try pattern(f.required("pattern")), allowDuplicates: try f["allow-duplicates"]?.bool() ?? false)
        if let c = f["check-digit"] {
            scan.checkDigit = ProvisioningRecipe.CheckDigit(rawValue: try c.choice(ProvisioningRecipe.CheckDigit.allCases.map(\.rawValue)))
        }
        if let t = f["timeout"] { scan.timeout = try timeout(t) }
        return scan
    }

    /// A regular expression (the whole answer must match it).
    func pattern(_ v: YAMLValue) throws(RecipeError) -> String {
        let text = try v.text(maxLength: 256)
        if let problem = OperatorInput.patternProblem(text) {
            throw v.error(.badTemplate, "'\(text)' is not a regular expression: \(problem)")
        }
        return text
    }

    /// How long the station waits for an operator: 1s...24h.
    func timeout(_ v: YAMLValue) throws(RecipeError) -> Duration {
        let text = try v.string()
        guard let duration = Quantities.parseDuration(text) else {
            throw v.error(.wrongType, "'\(text)' is not a duration such as 90s or 5min")
        }
        guard duration >= .seconds(1), duration <= .seconds(86_400) else { throw v.error(.outOfRange, "\(text) is out of range 1s...24h") }
        return duration
    }

    /// `attach:` a list of `readings` and `{ file: PATH, name: NAME, media-type: TYPE }` (at most 8 per test).
    func attachments(_ v: YAMLValue, test: String, taken: Set<String>) throws(RecipeError) -> [ProvisioningRecipe.AttachSpec] {
        let items = try v.list()
        guard !items.isEmpty, items.count <= 8 else { throw v.error(.outOfRange, "give 1...8 attachments") }
        var result: [ProvisioningRecipe.AttachSpec] = []
        var names = taken
        for item in items {
            let spec: ProvisioningRecipe.AttachSpec
            if case .scalar = item.node {
                let word = try item.choice(["readings"])
                spec = .readings(name: "\(test)-readings.csv")
                _ = word
            } else {
                let f = try item.fields(["file", "name", "media-type"])
                let fileValue = try f.required("file")
                let path = try fileValue.text(maxLength: 4096)
                let sample = ProvisioningRecipe.AttachSpec.render(path, hardwareID: "0", serial: "0")
                guard !sample.contains("{"), !sample.contains("}") else {
                    throw fileValue.error(.badTemplate, "'\(path)': the fields of a file are {hardware-id} and {serial}")
                }
                // By default the test's name and the file's extension: `mic-sensitivity-left-file.log`.
                let ext = (sample as NSString).pathExtension
                var name = "\(test)-file" + (ext.isEmpty ? "" : ".\(ext)")
                if let n = f["name"] {
                    name = try n.string()
                    guard RecipeParser.isKey(name, maxLength: 128) else {
                        throw n.error(.outOfRange, "'\(name)': an attachment name uses 1...128 characters of A-Z a-z 0-9 _ . -")
                    }
                } else if !RecipeParser.isKey(name, maxLength: 128) {
                    throw fileValue.error(.outOfRange, "the file's name does not make an attachment name (A-Z a-z 0-9 _ . -): give name:")
                }
                var mediaType: String?
                if let t = f["media-type"] {
                    let text = try t.string()
                    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
                    guard text.count <= 100, parts.count == 2, parts.allSatisfy({ part in
                        !part.isEmpty && part.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "!#$&-^_.+".unicodeScalars.contains($0)) }
                    }) else { throw t.error(.outOfRange, "'\(text)' is not a media type such as text/plain") }
                    mediaType = text
                }
                spec = .file(path: path, name: name, mediaType: mediaType)
            }
            guard names.insert(spec.name).inserted else { throw item.error(.outOfRange, "a second attachment named '\(spec.name)'") }
            result.append(spec)
        }
        return result
    }

    func delay(_ v: YAMLValue) throws(RecipeError) -> Duration {
        let text = try v.string()
        guard let duration = Quantities.parseDuration(text) else {
            throw v.error(.wrongType, "'\(text)' is not a duration such as 500ms or 2s")
        }
        guard duration <= .seconds(60) else { throw v.error(.outOfRange, "\(text) is out of range 0...60s") }
        return duration
    }
}
