import Failure
import Firmware
import Foundation
import Recipe
import Testing
import TestSupport

/// The repository root (…/recipes and …/firmware-images), found from this source file.
enum Repository {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            url = url.deletingLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("recipes/sim-headset.yaml").path) { return url.path }
        }
        return "."
    }()
    static var example: String { root + "/recipes/sim-headset.yaml" }
    static func image(_ name: String) -> String { root + "/firmware-images/" + name }
}

/// A valid recipe with absolute image paths; `edit` replaces one line's text to make the bad cases.
func recipeText(application: String = "app-1.5.0.img", resource: String = "resource-1.0.0.img") -> String {
    """
    version: 1
    product:
      model: TS-1
    images:
      application: \(Repository.image(application))
      resource: \(Repository.image(resource))
      key: \(Repository.image("dev-public.pem"))
    identity:
      serial: "TS1-{gggg}{ww}-{counter:06}"
      bluetooth-name: "Tuneup {serial[-4:]}"
      bluetooth-address:
        start: "02:54:55:00:00:00"
        count: 100
    settings:
      anc:
        enabled: true
        level: 0.5
      ambient:
        left: 3
      eq:
        graphic-preset: User
        gains: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    tests:
      - name: battery-level
        unit: percent
        limits: { low: 20, high: 100 }
        retry: { attempts: 2, delay: 100ms }
    lock: true

    """
}

/// Writes `text` as a recipe file in a fresh directory and loads it.
func load(_ text: String) throws(RecipeError) -> LoadedRecipe {
    let dir = (try? TemporaryDirectory.make("recipe")) ?? "/nonexistent/recipe-could-not-be-made"
    let path = dir + "/r.yaml"
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try ProvisioningRecipe.load(path: path)
}

/// `text` with the first occurrence of `old` replaced (the test fails if it is not there).
func replacing(_ old: String, with new: String, in text: String = recipeText()) -> String {
    #expect(text.contains(old), "test setup: '\(old)' not in the recipe")
    guard let range = text.range(of: old) else { return text }
    return text.replacingCharacters(in: range, with: new)
}

/// Loads `text`, expects a `RecipeError` with `code`, and checks its one line: `…/r.yaml:LINE:COLUMN: KEY: …`.
func expectError(_ text: String, _ code: RecipeError.Code, line: Int, column: Int? = nil, key: String?, contains: String? = nil,
                 category: FailureCategory = .usage, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    do {
        let loaded = try load(text)
        Issue.record("expected \(code), but the recipe loaded (model \(loaded.recipe.product.model))", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        #expect(error.category == category, "\(error.message)", sourceLocation: sourceLocation)
        #expect(!error.message.contains("\n"), "not one line: \(error.message)", sourceLocation: sourceLocation)
        let location = error.location
        #expect(location?.line == line, "\(error.message)", sourceLocation: sourceLocation)
        if let column { #expect(location?.column == column, "\(error.message)", sourceLocation: sourceLocation) }
        #expect(location?.file.hasSuffix("r.yaml") == true, "\(error.message)", sourceLocation: sourceLocation)
        let prefix = "\(location.map { "\($0)" } ?? "?")\(key.map { ": \($0):" } ?? ":")"
        #expect(error.message.hasPrefix(prefix), "'\(error.message)' does not start with '\(prefix)'", sourceLocation: sourceLocation)
        if let contains { #expect(error.message.contains(contains), "\(error.message)", sourceLocation: sourceLocation) }
    }
}

@Suite struct RecipeFileTests {
    @Test func theShippedExampleValidates() throws {
        let loaded = try ProvisioningRecipe.load(path: Repository.example)
        let r = loaded.recipe
        #expect(r.product.model == "TS-1")
        #expect(loaded.application.region == .application && loaded.application.version?.description.hasPrefix("1.5.0") == true)
        #expect(loaded.application.manifest?.model == "TS-1")
        #expect(loaded.resource?.region == .resource)
        #expect(loaded.key == (try VerificationKey.load(path: Repository.image("dev-public.pem"))))
        #expect(r.settings.anc?.level == 0.6 && r.settings.ambient?.preset == .medium && r.settings.eq?.gains?.count == 10)
        #expect(r.calibration.anc?.limits.low == -6 && r.calibration.anc?.enabled == true)
        #expect(r.tests.map(\.name) == ["battery-level", "mic-sensitivity-left", "mic-sensitivity-right", "anc-attenuation"])
        #expect(r.tests[1].retry.attempts == 3 && r.tests[1].retry.delay == .milliseconds(200))
        #expect(r.lock)
        let date = try #require(ISO8601DateFormatter().date(from: "2026-11-23T10:00:00Z"))
        let first = try loaded.identityGenerator.identity(counter: 1, date: date)
        #expect(first == UnitIdentity(serial: "TS1-202648-000001", bluetoothName: "Tuneup 0001", bluetoothAddress: "02:54:55:00:00:00"))
        #expect(loaded.contentHash.count == 64)
    }

    @Test func theTestRecipeValidates() throws {
        let loaded = try load(recipeText())
        #expect(loaded.recipe.identity.addressBlock.count == 100)
        #expect(loaded.recipe.tests.first?.judge(50) == .pass)
    }

    @Test func aSyntaxErrorNamesItsPlace() {
        // An unclosed flow mapping on line 26: the parser notices on the next line.
        let text = replacing("limits: { low: 20, high: 100 }", with: "limits: { low: 20, high: 100")
        expectError(text, .syntax, line: 27, key: nil)
    }

    @Test func anEmptyOrNonMappingFileIsRefused() {
        expectError("# nothing but a comment\n", .syntax, line: 1, column: 1, key: nil, contains: "empty")
        expectError("just text\n", .wrongType, line: 1, column: 1, key: nil, contains: "expected a mapping")
        expectError(recipeText() + "---\nversion: 1\n", .syntax, line: 29, key: nil, contains: "another document")
    }

    @Test func aDuplicatedKeyIsASyntaxError() {
        let text = replacing("  model: TS-1\n", with: "  model: TS-1\n  model: TS-2\n")
        expectError(text, .syntax, line: 3, key: "model", contains: "duplicated")
    }

    @Test func anUnknownKeyIsNamedWithASuggestion() {
        let text = replacing("settings:", with: "setings:")
        expectError(text, .unknownKey, line: 14, column: 1, key: "setings", contains: "did you mean 'settings'?")
        let nested = replacing("    level: 0.5", with: "    levle: 0.5")
        expectError(nested, .unknownKey, line: 17, column: 5, key: "settings.anc.levle", contains: "did you mean 'level'?")
        let far = replacing("lock: true", with: "colour: blue")
        expectError(far, .unknownKey, line: 28, key: "colour", contains: "known here:")
    }

    @Test func aWrongTypeIsNamed() {
        expectError(replacing("level: 0.5", with: "level: loud"), .wrongType, line: 17, column: 12, key: "settings.anc.level",
                    contains: "expected a number")
        expectError(replacing("enabled: true", with: "enabled: 1"), .wrongType, line: 16, key: "settings.anc.enabled")
        for spelling in ["yes", "no", "on", "off", "y", "Off"] {
            expectError(replacing("enabled: true", with: "enabled: \(spelling)"), .wrongType, line: 16, key: "settings.anc.enabled", contains: "true or false")
        }
        expectError(replacing("  anc:\n    enabled: true\n    level: 0.5\n", with: "  anc: [1]\n"), .wrongType, line: 15,
                    key: "settings.anc", contains: "expected a mapping")
    }

    @Test func anOutOfRangeValueIsNamed() {
        expectError(replacing("level: 0.5", with: "level: 1.5"), .outOfRange, line: 17, key: "settings.anc.level", contains: "0...1")
        expectError(replacing("attempts: 2", with: "attempts: 11"), .outOfRange, line: 27, key: "tests[0].retry.attempts")
        expectError(replacing("low: 20, high: 100", with: "low: 100, high: 20"), .outOfRange, line: 26, key: "tests[0].limits.high")
        expectError(replacing("unit: percent", with: "unit: percnt"), .outOfRange, line: 25, key: "tests[0].unit",
                    contains: "did you mean 'percent'?")
    }

    @Test func settingsAreCheckedAgainstTheApplicationManifest() {
        // App 1.5.0 has 8 ambient steps, 10 bands, -10...10 dB, presets Music Movie Voice User "Bass Boost".
        expectError(replacing("left: 3", with: "left: 8"), .outOfRange, line: 19, key: "settings.ambient.left", contains: "0...7")
        expectError(replacing("[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]", with: "[0, 0, 0, 0, 0, 0, 0, 0, 0]"), .outOfRange, line: 22,
                    key: "settings.eq.gains", contains: "9 gains for 10 bands")
        expectError(replacing("[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]", with: "[0, 0, 11, 0, 0, 0, 0, 0, 0, 0]"), .outOfRange, line: 22,
                    key: "settings.eq.gains", contains: "band 3")
        expectError(replacing("graphic-preset: User", with: "graphic-preset: Usr"), .outOfRange, line: 21,
                    key: "settings.eq.graphic-preset", contains: "did you mean 'User'?")
    }

    @Test func aMissingImageIsAnUnreadableFile() {
        expectError(recipeText(application: "no-such.img"), .io, line: 5, column: 16, key: "images.application",
                    contains: "No such file", category: .localFile)
    }

    @Test func anImageNotSignedByTheRecipesKeyIsInvalid() {
        expectError(recipeText(application: "broken-other-key.img"), .badImage, line: 5, key: "images.application",
                    contains: "another key", category: .device)
        expectError(recipeText(application: "broken-unsigned.img"), .badImage, line: 5, key: "images.application", category: .device)
        expectError(recipeText(application: "broken-bad-signature.img"), .badImage, line: 5, key: "images.application", category: .device)
    }

    @Test func theKeyMustBeReadableAndAKey() {
        let key = Repository.image("dev-public.pem")
        expectError(replacing(key, with: Repository.image("no-such.pem")), .io, line: 7, column: 8, key: "images.key",
                    contains: "No such file", category: .localFile)
        expectError(replacing(key, with: Repository.image("README.md")), .badImage, line: 7, key: "images.key", category: .device)
    }

    @Test func aFirstCounterTheSerialCannotShowIsRefused() {
        let text = replacing("    count: 100\n", with: "    count: 100\n  first-counter: 1000000\n")
        expectError(text, .identityExhausted, line: 14, column: 18, key: "identity.first-counter", contains: "counter width")
    }

    @Test func anImageForAnotherModelIsInvalid() {
        expectError(recipeText(application: "broken-other-model.img"), .wrongModel, line: 5, key: "images.application",
                    contains: "model TS-9", category: .device)
        // The same images are fine for a recipe of that model, except the resource made for TS-1.
        let ts9 = replacing("model: TS-1", with: "model: TS-9", in: recipeText(application: "broken-other-model.img"))
        expectError(ts9, .wrongModel, line: 6, key: "images.resource", contains: "model TS-1", category: .device)
    }

    @Test func aSerialPatternWithoutACounterIsRefused() {
        expectError(replacing("-{counter:06}", with: "-{dd}"), .badTemplate, line: 9, key: "identity.serial", contains: "needs a counter")
        expectError(replacing("{counter:06}", with: "{countr:06}"), .badTemplate, line: 9, key: "identity.serial", contains: "is not a field")
        expectError(replacing("{serial[-4:]}", with: "{serial[-4:]"), .badTemplate, line: 10, key: "identity.bluetooth-name",
                    contains: "no closing")
    }

    /// The device stores 31 bytes of serial and of name (FactoryStrings.capacity with its NUL): a recipe that gives
    /// more is refused when it loads (65, like the device would refuse it), never when every unit has been flashed.
    @Test func identitiesTheDeviceCannotStoreAreRefusedWhenTheRecipeLoads() {
        // 31 characters load; 32 are one too many for the device.
        let serial31 = "TS1-{gggg}{ww}-{counter:06}" + String(repeating: "X", count: 14)
        #expect(throws: Never.self) { _ = try load(replacing("TS1-{gggg}{ww}-{counter:06}", with: serial31)) }
        expectError(replacing("TS1-{gggg}{ww}-{counter:06}", with: serial31 + "X"), .deviceLimit, line: 9, key: "identity.serial",
                    contains: "serial number is 32 bytes, at most 31", category: .device)
        // A name of 32 bytes (was accepted up to 248).
        expectError(replacing("Tuneup {serial[-4:]}", with: String(repeating: "N", count: 28) + "{serial[-4:]}"), .deviceLimit,
                    line: 10, key: "identity.bluetooth-name", contains: "Bluetooth name is 32 bytes, at most 31", category: .device)
        // The name grows with an unpadded counter: the first unit's fits, the last one's (counter 100) does not.
        expectError(replacing("Tuneup {serial[-4:]}", with: String(repeating: "N", count: 30) + "{counter}"), .deviceLimit,
                    line: 10, key: "identity.bluetooth-name", contains: "(counter 100)", category: .device)
        // Control characters in a name.
        expectError(replacing("\"Tuneup {serial[-4:]}\"", with: "\"Tuneup\\t{serial[-4:]}\""), .deviceLimit,
                    line: 10, key: "identity.bluetooth-name", contains: "control characters", category: .device)
    }

    @Test func anExhaustedAddressBlockIsRefused() {
        let text = replacing("start: \"02:54:55:00:00:00\"\n    count: 100", with: "start: \"02:FF:FF:FF:FF:F0\"\n    count: 17")
        expectError(text, .identityExhausted, line: 13, column: 12, key: "identity.bluetooth-address.count", contains: "only 16 left")
        expectError(replacing("count: 100", with: "count: 0"), .identityExhausted, line: 13, key: "identity.bluetooth-address.count")
        expectError(replacing("\"02:54:55:00:00:00\"", with: "\"03:54:55:00:00:00\""), .outOfRange, line: 12,
                    key: "identity.bluetooth-address.start", contains: "group")
    }

    @Test func aMissingKeyIsNamed() {
        expectError(replacing("  model: TS-1\n", with: "  name: x\n"), .missingKey, line: 3, key: "product.model")
    }

    @Test func anUnreadableRecipeIsALocalFileError() {
        #expect(throws: RecipeError(.io)) { try ProvisioningRecipe.load(path: "/nonexistent/r.yaml") }
        #expect(RecipeError(.io).category == .localFile)
    }
}

@Suite struct RecipeHashTests {
    static let base = """
        version: 1
        product: { model: TS-1, name: Sim }
        images: { application: a.img, key: k.pem }
        identity:
          serial: "S{counter:04}"
          bluetooth-name: "N {serial}"
          bluetooth-address: { start: "02:00:00:00:00:00", count: 10 }
        settings: { anc: { enabled: true, level: 0.5 }, auto-off: false }
        tests:
          - { name: t, unit: dB, limits: { low: 18, high: 40 } }
        lock: true
        """

    @Test func theHashIgnoresKeyOrderWhitespaceAndComments() throws {
        let reordered = """
            # the same recipe, written differently
            lock:    true
            tests:
              - unit: dB
                limits:
                  high: 40.0
                  low: 18
                name: t
            settings:
              auto-off: false
              anc:
                level: 0.50
                enabled: true
            identity:
              bluetooth-address:
                count: 10
                start: "02:00:00:00:00:00"
              bluetooth-name: "N {serial}"
              serial: "S{counter:04}"
            images:
              key: k.pem
              application: a.img
            product:
              name: Sim
              model: TS-1
            version: 1
            """
        let a = try ProvisioningRecipe(yaml: Self.base, file: "a.yaml")
        let b = try ProvisioningRecipe(yaml: reordered, file: "b.yaml")
        #expect(a == b)
        #expect(a.contentHash == b.contentHash)
        #expect(a.contentHash.count == 64 && a.contentHash.allSatisfy(\.isHexDigit))
        #expect(a.canonicalJSON.contains("\"serial\":\"S{counter:04}\""))
    }

    @Test func theHashChangesWithTheContent() throws {
        let a = try ProvisioningRecipe(yaml: Self.base, file: "a.yaml")
        for (old, new) in [("level: 0.5", "level: 0.25"), ("count: 10", "count: 11"), ("lock: true", "lock: false"), ("high: 40", "high: 41"),
                           ("S{counter:04}", "S{counter:05}"), ("a.img", "b.img")] {
            let changed = try ProvisioningRecipe(yaml: Self.base.replacingOccurrences(of: old, with: new), file: "a.yaml")
            #expect(changed.contentHash != a.contentHash, "\(old) -> \(new)")
        }
    }

    @Test func aKnownRecipeHasAKnownHash() throws {
        // Pins the canonical form: a change of it changes every stored record's recipe hash, so it must be deliberate.
        let a = try ProvisioningRecipe(yaml: Self.base, file: "a.yaml")
        let canonical = #"{"calibration":{},"identity":{"addressBlock":{"count":10,"start":"02:00:00:00:00:00"},"bluetoothName":"N {serial}","firstCounter":1,"serial":"S{counter:04}"},"images":{"application":"a.img","key":"k.pem"},"lock":true,"product":{"model":"TS-1","name":"Sim"},"settings":{"anc":{"enabled":true,"level":0.5},"autoOff":false},"tests":[{"limits":{"high":40,"low":18},"name":"t","retry":{"attempts":1,"delayNanoseconds":0},"unit":"dB"}],"version":1}"#
        #expect(a.canonicalJSON == canonical)
        #expect(a.contentHash == "abcc729cc9483267a4cf0743ec0f8ee30cca8f0db9afc57af259a37e22c6b718")
    }
}

extension RecipeFileTests {
    /// Limits may be one value (low equal to high: the reading must be exactly it); high below low is refused, naming
    /// the high (issue 31 §5: equal limits refused survived the suite).
    @Test func limitsMayBeOneValueButNotReversed() throws {
        let exact = try load(replacing("limits: { low: 20, high: 100 }", with: "limits: { low: 50, high: 50 }")).recipe
        #expect(exact.tests.first?.limits.low == 50 && exact.tests.first?.limits.high == 50)
        #expect(exact.tests.first?.judge(50) == .pass && exact.tests.first?.judge(50.5) == .fail)
        expectError(replacing("limits: { low: 20, high: 100 }", with: "limits: { low: 50, high: 49 }"), .outOfRange, line: 26,
                    key: "tests[0].limits.high", contains: "high 49 is below low 50")
    }
}
