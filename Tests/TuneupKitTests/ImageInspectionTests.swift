import Firmware
import Testing
@testable import TuneupKit

@Suite struct ImageInspectionTests {
    static let images = repositoryRoot + "/firmware-images"

    @Test func reportsASignedImage() throws {
        let report = try ImageInspection.inspect(path: Self.images + "/app-1.5.0.img", keyPath: Self.images + "/dev-public.pem", region: nil)
        #expect(report.file == Self.images + "/app-1.5.0.img")
        #expect(report.format == .mcuboot)
        #expect(report.version?.description == "1.5.0")
        #expect(report.region == "app")
        #expect(report.fitsRegion == true)
        #expect(report.hashOK == true)
        #expect(report.signed)
        #expect(report.signatureOK == true)
        #expect(report.manifest?.version == "1.5.0")
        #expect(report.mcuboot?.tlvs.isEmpty == false)
    }

    @Test func aBadHashIsReportedNotThrown() throws {
        let report = try ImageInspection.inspect(path: Self.images + "/broken-bad-hash.img", keyPath: nil, region: nil)
        #expect(report.hashOK == false)
        #expect(report.hashError?.isEmpty == false)
        #expect(report.signatureOK == nil)
    }

    @Test func anImageThatCannotBeReadThrows() {
        #expect(throws: ImageError.self) {
            _ = try ImageInspection.inspect(path: Self.images + "/no-such.img", keyPath: nil, region: nil)
        }
    }
}
