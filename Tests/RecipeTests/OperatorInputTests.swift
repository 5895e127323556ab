import Foundation
import Recipe
import Testing

/// Operator prompts and scans in a recipe: check digits against known public codes, the answers' checks, the keys
/// read as written, bad values refused with one line naming the key.
@Suite struct OperatorInputTests {
    @Test func checkDigitsOfKnownCodes() {
        // GS1: the GTIN-13 4006381333931, the GTIN-12 (UPC-A) 036000291452, an SSCC 106141411234567897.
        for code in ["4006381333931", "036000291452", "106141411234567897", "GTIN 4006381333931"] {
            #expect(ProvisioningRecipe.CheckDigit.gs1.isValid(code), "\(code)")
        }
        for code in ["4006381333932", "036000291453", "4"] { #expect(!ProvisioningRecipe.CheckDigit.gs1.isValid(code), "\(code)") }
        // Luhn: 79927398713 (the textbook example), the IMEI 490154203237518.
        for code in ["79927398713", "490154203237518"] { #expect(ProvisioningRecipe.CheckDigit.luhn.isValid(code), "\(code)") }
        for code in ["79927398710", "490154203237517"] { #expect(!ProvisioningRecipe.CheckDigit.luhn.isValid(code), "\(code)") }
        // Mod 11 as ISBN-10: 0-306-40615-2, 0-8044-2957-X.
        for code in ["0-306-40615-2", "080442957X", "0-8044-2957-x"] { #expect(ProvisioningRecipe.CheckDigit.mod11.isValid(code), "\(code)") }
        for code in ["0-306-40615-3", "0804429579"] { #expect(!ProvisioningRecipe.CheckDigit.mod11.isValid(code), "\(code)") }
    }

    static let scan = ProvisioningRecipe.ScanSpec(label: "PCB serial", pattern: "PCB-[0-9]{13}", checkDigit: .gs1, allowDuplicates: false)

    @Test func scansAreCheckedForPatternAndCheckDigit() throws {
        #expect(try OperatorInput.check("  PCB-4006381333931\n", for: Self.scan).get() == .code("PCB-4006381333931"))
        guard case .failure(let pattern) = OperatorInput.check("PCB-400638133393", for: Self.scan) else { Issue.record("accepted"); return }
        #expect(pattern.message.contains("does not match PCB-[0-9]{13}"), "\(pattern.message)")
        guard case .failure(let digit) = OperatorInput.check("PCB-4006381333932", for: Self.scan) else { Issue.record("accepted"); return }
        #expect(digit.message.contains("gs1 check digit"), "\(digit.message)")
        // A pattern matches the whole code, not a part of it.
        #expect((try? OperatorInput.check("xPCB-4006381333931", for: Self.scan).get()) == nil)
    }

    @Test func promptAnswersAreChecked() throws {
        let passFail = ProvisioningRecipe.PromptSpec(name: "led", text: "LED blue?", answer: .passFail, position: 0)
        #expect(try OperatorInput.check("PASS", for: passFail).get() == .passFail(true))
        #expect(try OperatorInput.check("f", for: passFail).get() == .passFail(false))
        #expect((try? OperatorInput.check("maybe", for: passFail).get()) == nil)
        let value = ProvisioningRecipe.PromptSpec(
            name: "current", text: "Current?", answer: .value, pattern: "[0-9.]+", unit: .mA,
            limits: .init(low: 10, high: 30), position: 0)
        #expect(try OperatorInput.check("12.5", for: value).get() == .value("12.5", number: 12.5))
        #expect((try? OperatorInput.check("12,5", for: value).get()) == nil)
        #expect((try? OperatorInput.check("", for: value).get()) == nil)
    }

    @Test func readsPromptsAndScan() throws {
        let text = replacing("tests:\n", with: """
            tests:
              - prompt:
                  name: led-blue
                  text: Is the status LED blue?
                  answer: pass-fail
              - prompt: { name: current, text: "Read the meter", answer: value, unit: mA, limits: { low: 10, high: 30 }, timeout: 2min }

            """) + """
            scan:
              label: PCB serial
              pattern: "PCB-[0-9]{13}"
              check-digit: gs1
              timeout: 10min

            """
        let r = try load(text).recipe
        let prompts = try #require(r.prompts)
        #expect(prompts.map(\.name) == ["led-blue", "current"] && prompts.map(\.position) == [0, 0])
        #expect(prompts[1].limits == .init(low: 10, high: 30) && prompts[1].unit == .mA && prompts[1].timeout == .seconds(120))
        #expect(r.scan == ProvisioningRecipe.ScanSpec(label: "PCB serial", pattern: "PCB-[0-9]{13}", checkDigit: .gs1, allowDuplicates: false, timeout: .seconds(600)))
        #expect(r.asksOperator)
        // A recipe without them keeps its canonical form (and hash).
        let plain = try load(recipeText()).recipe
        #expect(plain.prompts == nil && plain.scan == nil && !plain.asksOperator)
        #expect(!ProvisioningRecipe.canonicalJSON(of: plain).contains("prompt") && !ProvisioningRecipe.canonicalJSON(of: plain).contains("scan"))
    }

    @Test func badPromptsAndScansAreOneLineNamingTheKey() {
        let at = recipeText().components(separatedBy: "\n").firstIndex { $0 == "tests:" }! + 2
        let prompt = { (body: String) in replacing("tests:\n", with: "tests:\n  - prompt: \(body)\n") }
        expectError(prompt("{ name: led, text: x, answer: yes-no }"), .outOfRange, line: at, key: "tests[0].prompt.answer", contains: "pass-fail, value")
        expectError(prompt("{ name: led, answer: pass-fail }"), .missingKey, line: at, key: "tests[0].prompt.text")
        expectError(prompt("{ name: LED, text: x, answer: pass-fail }"), .outOfRange, line: at, key: "tests[0].prompt.name", contains: "a-z 0-9")
        expectError(prompt("{ name: led, text: x, answer: pass-fail, pattern: \"[0-9]+\" }"), .outOfRange, line: at, key: "tests[0].prompt.pattern", contains: "answer: value")
        expectError(prompt("{ name: v, text: x, answer: value, pattern: \"[0-9\" }"), .badTemplate, line: at, key: "tests[0].prompt.pattern", contains: "regular expression")
        expectError(prompt("{ name: v, text: x, answer: value, unit: mA }"), .missingKey, line: at, key: "tests[0].prompt.unit", contains: "limits")
        expectError(prompt("{ name: v, text: x, answer: value, timeout: 0 }"), .outOfRange, line: at, key: "tests[0].prompt.timeout", contains: "1s...24h")
        expectError(prompt("{ name: v, text: x, answer: value, timeot: 5s }"), .unknownKey, line: at, key: "tests[0].prompt.timeot", contains: "did you mean 'timeout'")
        expectError(prompt("{ name: battery-level, text: x, answer: pass-fail }"), .outOfRange, line: at + 1, key: "tests[1].name", contains: "a second test or prompt")
        expectError(prompt("{ name: led, text: x, answer: pass-fail, image: nowhere.png }"), .io, line: at, key: "tests[0].prompt.image",
                    contains: "nowhere.png", category: .localFile)
        expectError(prompt("{ name: led, text: x, answer: pass-fail, image: led.bmp }"), .outOfRange, line: at, key: "tests[0].prompt.image", contains: ".png")
        let scanAt = recipeText().filter { $0 == "\n" }.count + 1
        let scan = { (body: String) in recipeText() + "scan:\n\(body)\n" }
        expectError(scan("  pattern: \"A[0-9]+\""), .missingKey, line: scanAt + 1, key: "scan.label")
        expectError(scan("  label: PCB\n  pattern: \"A[0-9+\""), .badTemplate, line: scanAt + 2, key: "scan.pattern", contains: "regular expression")
        expectError(scan("  label: PCB\n  pattern: \"A[0-9]+\"\n  check-digit: mod10"), .outOfRange, line: scanAt + 3, key: "scan.check-digit", contains: "gs1, luhn, mod11")
        expectError(scan("  label: PCB\n  pattern: \"A[0-9]+\"\n  allow-duplicates: yes"), .wrongType, line: scanAt + 3, key: "scan.allow-duplicates", contains: "true or false")
    }
}
