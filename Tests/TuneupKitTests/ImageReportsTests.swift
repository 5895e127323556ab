import Firmware
import Support
import Testing
import TuneupKit

/// What `image inspect` and `image verify` print, made by the library.
@Suite struct ImageReportsTests {
    static let images = ImageInspectionTests.images

    @Test func inspectionTextNamesEveryPart() throws {
        let report = try ImageInspection.inspect(path: Self.images + "/app-1.5.0.img", keyPath: Self.images + "/dev-public.pem", region: nil)
        let lines = report.text.split(separator: "\n").map(String.init)
        #expect(lines.first == "File       \(Self.images)/app-1.5.0.img")
        #expect(lines.contains("Format     MCUboot image"))
        #expect(lines.contains("SHA-256    ok") && lines.contains("Signature  ok"))
        #expect(lines.contains { $0.hasPrefix("  EQ       ") && $0.contains(" dB") })
    }

    @Test func verificationSaysWhatWasChecked() throws {
        let signed = try ImageVerification.verify(path: Self.images + "/app-1.5.0.img", keyPath: Self.images + "/dev-public.pem", region: nil)
        #expect(signed.ok && signed.signatureChecked && signed.region == "app")
        #expect(signed.text.hasPrefix("\(Self.images)/app-1.5.0.img: OK: MCUboot image 1.5.0, model "))
        #expect(signed.text.contains(", SHA-256 ok, signature ok (key ") && signed.text.hasSuffix("…)"))
        let unchecked = try ImageVerification.verify(path: Self.images + "/app-1.5.0.img", keyPath: nil, region: nil)
        #expect(unchecked.text.hasSuffix("signature not checked (no --key)") && !unchecked.signatureChecked)
        #expect(throws: ImageError.self) {
            try ImageVerification.verify(path: Self.images + "/broken-other-key.img", keyPath: Self.images + "/dev-public.pem", region: nil)
        }
    }

    @Test func numbersForPeople() {
        #expect([31, 999, 1000, 1500, 1250, 16000, 12345].map(TextFormat.frequency) == ["31 Hz", "999 Hz", "1 kHz", "1.5 kHz", "1.2 kHz", "16 kHz", "12.3 kHz"])
        #expect([3, 0, -2].map(TextFormat.signed) == ["+3", "0", "-2"])
        #expect(TextTable.aligned([("A", "1"), ("Long", "2")]) == "A     1\nLong  2")
    }
}
