import Foundation
import Recipe
import Testing

/// A recipe's metadata, attachments, max-rework and spc: read as written, bad values refused with one line.
@Suite struct RecipeProcessControlTests {
    /// The valid base recipe with `extra` appended; `line(k)` is the k-th line of `extra` in the file.
    static let base = recipeText()
    static func line(_ k: Int) -> Int { base.filter { $0 == "\n" }.count + k }

    @Test func readsMetadataAttachmentsMaxReworkAndSPC() throws {
        let text = Self.base.replacingOccurrences(of: "    retry: { attempts: 2, delay: 100ms }\n", with: """
                retry: { attempts: 2, delay: 100ms }
                attach:
                  - readings
                  - { file: "logs/{hardware-id}-{serial}.log" }
                  - { file: curve.dat, name: curve.dat, media-type: application/octet-stream }

            """) + """
            metadata:
              line: A
              build.number: 7
            max-rework: 3
            spc:
              window: 20
              min-cpk: 1.33
              min-first-pass-yield: 0.9
              measurements: { battery-level: 0 }

            """
        let r = try load(text).recipe
        #expect(r.metadata == ["line": "A", "build.number": "7"])
        #expect(r.maxRework == 3)
        #expect(r.spc?.window == 20 && r.spc?.minCpk == 1.33 && r.spc?.minFirstPassYield == 0.9)
        #expect(r.spc?.measurements == ["battery-level": 0])
        #expect(r.tests[0].attach == [
            .readings(name: "battery-level-readings.csv"),
            .file(path: "logs/{hardware-id}-{serial}.log", name: "battery-level-file.log", mediaType: nil),
            .file(path: "curve.dat", name: "curve.dat", mediaType: "application/octet-stream"),
        ])
        #expect(ProvisioningRecipe.AttachSpec.render("logs/{hardware-id}-{serial}.log", hardwareID: "ab12", serial: "SN1") == "logs/ab12-SN1.log")
    }

    @Test func aRecipeWithoutTheNewKeysKeepsItsHash() throws {
        // The new keys are absent from the canonical form when a recipe does not use them.
        let r = try load(Self.base).recipe
        #expect(r.metadata == nil && r.maxRework == nil && r.spc == nil && r.tests.allSatisfy { $0.attach == nil })
        #expect(!ProvisioningRecipe.canonicalJSON(of: r).contains("metadata"))
    }

    @Test func badValuesAreOneLineNamingTheKey() {
        let cases: [(String, RecipeError.Code, Int, String, String)] = [
            ("metadata:\n  \"bad key\": x\n", .outOfRange, 2, "metadata.bad key", "A-Z a-z 0-9"),
            ("metadata:\n  k: \"two\\nlines\"\n", .outOfRange, 2, "metadata.k", "one line"),
            ("metadata: [a, b]\n", .wrongType, 1, "metadata", "mapping"),
            ("max-rework: 0\n", .outOfRange, 1, "max-rework", "1...1000"),
            ("max-rework: two\n", .wrongType, 1, "max-rework", "integer"),
            ("spc:\n  window: 20\n", .missingKey, 2, "spc", "min-cpk"),
            ("spc:\n  window: 1\n  min-cpk: 1.33\n", .outOfRange, 2, "spc.window", "2...10000"),
            ("spc:\n  window: 20\n  min-cpk: 0\n", .outOfRange, 3, "spc.min-cpk", "0.1...10"),
            ("spc:\n  window: 20\n  min-first-pass-yield: 1.5\n", .outOfRange, 3, "spc.min-first-pass-yield", "0...1"),
            ("spc:\n  window: 20\n  measurements: { batery-level: 1 }\n", .unknownKey, 3, "spc.measurements.batery-level", "did you mean 'battery-level'"),
            ("spc:\n  window: 20\n  windows: 3\n", .unknownKey, 3, "spc.windows", "did you mean 'window'"),
        ]
        for (extra, code, line, key, text) in cases {
            expectError(Self.base + extra, code, line: Self.line(line), key: key, contains: text)
        }
        // Attachments of a test.
        let attach = { (spec: String) in
            Self.base.replacingOccurrences(of: "    retry: { attempts: 2, delay: 100ms }\n", with: "    retry: { attempts: 2, delay: 100ms }\n    attach: \(spec)\n")
        }
        let at = recipeText().components(separatedBy: "\n").firstIndex { $0.contains("retry: { attempts: 2") }! + 2
        expectError(attach("[reading]"), .outOfRange, line: at, key: "tests[0].attach[0]", contains: "did you mean 'readings'")
        expectError(attach("[{ file: \"logs/{unit}.log\" }]"), .badTemplate, line: at, key: "tests[0].attach[0].file", contains: "{hardware-id}")
        expectError(attach("[{ file: a.log, media-type: text }]"), .outOfRange, line: at, key: "tests[0].attach[0].media-type", contains: "media type")
        expectError(attach("[{ file: a.log, name: \"../x\" }]"), .outOfRange, line: at, key: "tests[0].attach[0].name", contains: "A-Z a-z 0-9")
        expectError(attach("[readings, readings]"), .outOfRange, line: at, key: "tests[0].attach[1]", contains: "a second attachment")
        expectError(attach("[]"), .outOfRange, line: at, key: "tests[0].attach", contains: "1...8")
    }
}

extension RecipeProcessControlTests {
    /// The limits are inclusive: 32 metadata entries and 8 attachments of a test are read, one more is refused
    /// (issue 31 §5: a limit of 31 entries survived the suite).
    @Test func theCountLimitsTakeExactlyTheirNumber() throws {
        let entries = { (n: Int) in "metadata:\n" + (1...n).map { "  k\($0): v\($0)\n" }.joined() }
        #expect(try load(Self.base + entries(32)).recipe.metadata?.count == 32)
        expectError(Self.base + entries(33), .outOfRange, line: Self.line(2), key: "metadata", contains: "33 entries; at most 32")
        let attach = { (n: Int) in
            Self.base.replacingOccurrences(of: "    retry: { attempts: 2, delay: 100ms }\n", with: "    retry: { attempts: 2, delay: 100ms }\n    attach: ["
                + (1...n).map { "{ file: f\($0).log, name: f\($0).log }" }.joined(separator: ", ") + "]\n")
        }
        #expect(try load(attach(8)).recipe.tests[0].attach?.count == 8)
        let at = recipeText().components(separatedBy: "\n").firstIndex { $0.contains("retry: { attempts: 2") }! + 2
        expectError(attach(9), .outOfRange, line: at, key: "tests[0].attach", contains: "1...8")
    }
}

extension ProvisioningRecipe {
    /// The canonical JSON of a parsed recipe (what its content hash is made of).
    static func canonicalJSON(of recipe: ProvisioningRecipe) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(recipe)) ?? Data(), as: UTF8.self)
    }
}
