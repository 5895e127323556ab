import Foundation
import Testing
@testable import Firmware

@Suite struct ImageVersionTests {
    @Test func parsesImgtoolSyntax() {
        #expect(ImageVersion(parsing: "1.5.0") == ImageVersion(major: 1, minor: 5, revision: 0))
        #expect(ImageVersion(parsing: "1.5.0+3") == ImageVersion(major: 1, minor: 5, revision: 0, build: 3))
        #expect(ImageVersion(parsing: "2") == ImageVersion(major: 2, minor: 0, revision: 0))
        #expect(ImageVersion(parsing: "2.1") == ImageVersion(major: 2, minor: 1, revision: 0))
        #expect(ImageVersion(parsing: "255.255.65535+4294967295") == ImageVersion(major: 255, minor: 255, revision: 65535, build: .max))
    }

    @Test(arguments: ["", "1.", ".1", "1..2", "1.2.3.4", "1.2+3", "01.2.3", "1.02.3", "256.0.0", "1.256.0", "1.2.65536",
                      "1.2.3+4294967296", "1.2.3+", "+3", "v1.2.3", "1.2.3-beta", " 1.2.3", "1.2.3 ", "-1.0.0", "１.2.3"])
    func rejectsMalformed(_ text: String) {
        #expect(ImageVersion(parsing: text) == nil, "\(text) should not parse")
    }

    @Test func descriptionAndRoundTrip() {
        #expect(ImageVersion(major: 1, minor: 5, revision: 0).description == "1.5.0")
        #expect(ImageVersion(major: 1, minor: 5, revision: 0, build: 3).description == "1.5.0+3")
        for text in ["0.0.0", "1.4.2", "2.0.0+17", "255.255.65535"] {
            #expect(ImageVersion(parsing: text)?.description == text)
        }
    }

    @Test func ordersByAllFields() {
        let ordered = ["1.3.0", "1.4.2", "1.4.2+1", "1.4.3", "1.5.0", "1.10.0", "2.0.0"].compactMap { ImageVersion(parsing: $0) }
        #expect(ordered.count == 7)
        #expect(ordered == ordered.shuffled().sorted())
        for (a, b) in zip(ordered, ordered.dropFirst()) { #expect(a < b) }
        #expect(!(ImageVersion(major: 1, minor: 0, revision: 0) < ImageVersion(major: 1, minor: 0, revision: 0)))
    }

    @Test func codableAsString() throws {
        let v = ImageVersion(major: 1, minor: 5, revision: 0, build: 3)
        let data = try JSONEncoder().encode([v])
        #expect(String(decoding: data, as: UTF8.self) == "[\"1.5.0+3\"]")
        #expect(try JSONDecoder().decode([ImageVersion].self, from: data) == [v])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ImageVersion].self, from: Data("[\"1.x\"]".utf8)) }
    }
}
