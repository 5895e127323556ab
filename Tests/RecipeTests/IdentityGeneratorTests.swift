import Foundation
import Recipe
import LightX
import Testing

func utc(_ text: String) throws -> Date {
    try #require(ISO8601DateFormatter().date(from: text + "T12:00:00Z"), "bad date \(text)")
}

func generator(serial: String = "TS1-{gggg}{ww}-{counter:06}", name: String = "Tuneup {serial[-4:]}",
               start: String = "02:54:55:00:00:00", count: Int = 100, first: Int = 1) throws -> IdentityGenerator {
    let block = try AddressBlock(start: try #require(BDAddress(parsing: start)), count: count)
    let rules = IdentityRules(serial: try IdentityTemplate(parsing: serial, kind: .serial),
                              bluetoothName: try IdentityTemplate(parsing: name, kind: .name), addressBlock: block, firstCounter: first)
    return IdentityGenerator(rules: rules, model: "TS-1")
}

@Suite struct IdentityGeneratorTests {
    @Test(arguments: [
        // date, ISO week-year + week, calendar year
        ("2026-01-01", "202601", "2026"),   // a Thursday: week 1 of 2026
        ("2027-01-01", "202653", "2027"),   // a Friday: still week 53 of 2026
        ("2024-12-30", "202501", "2024"),   // a Monday: week 1 of 2025
        ("2026-11-23", "202648", "2026"),
        ("2026-03-08", "202610", "2026"),   // a Sunday ends its week
    ])
    func weekNumbersAreISO8601(date: String, weekYearAndWeek: String, year: String) throws {
        let g = try generator(serial: "{gggg}{ww}-{yyyy}-{counter:03}")
        let id = try g.identity(counter: 7, date: try utc(date))
        #expect(id.serial == "\(weekYearAndWeek)-\(year)-007")
    }

    @Test func fieldsArePadded() throws {
        let g = try generator(serial: "X{yy}{mm}{dd}{gg}.{counter:6}", name: "{model} {counter} {serial[1:3]}{{x}}")
        let id = try g.identity(counter: 42, date: try utc("2009-02-03"))
        #expect(id.serial == "X09020309.000042")
        #expect(id.bluetoothName == "TS-1 42 09{x}")
    }

    /// Two-digit years are the year's last two digits in every century (issue 31 §5: `year % 1000` survived the
    /// suite, which only dated units in 2009 and the 2020s).
    @Test func twoDigitYearsInAnyCentury() throws {
        let g = try generator(serial: "{yy}{gg}-{counter:03}")
        #expect(try g.identity(counter: 1, date: try utc("2100-06-15")).serial == "0000-001")
        #expect(try g.identity(counter: 1, date: try utc("2199-06-15")).serial == "9999-001")
        #expect(try g.identity(counter: 1, date: try utc("1999-06-15")).serial == "9999-001")
    }

    @Test func addressesCountFromTheFirstCounter() throws {
        let g = try generator(start: "02:54:55:00:00:FE", count: 5, first: 10)
        let date = try utc("2026-05-05")
        #expect(try g.identity(counter: 10, date: date).bluetoothAddress == "02:54:55:00:00:FE")
        #expect(try g.identity(counter: 12, date: date).bluetoothAddress == "02:54:55:00:01:00")
        #expect(try g.identity(counter: 14, date: date).bluetoothAddress == "02:54:55:00:01:02")
        #expect(g.rules.counters == 10..<15)
    }

    @Test func theLastAddressOfTheBlockIsGivenThenItIsExhausted() throws {
        let g = try generator(count: 3)
        let date = try utc("2026-05-05")
        #expect(try g.identity(counter: 3, date: date).bluetoothAddress == "02:54:55:00:00:02")
        #expect(throws: RecipeError(.identityExhausted)) { try g.identity(counter: 4, date: date) }
        #expect(throws: RecipeError(.identityExhausted)) { try g.identity(counter: 0, date: date) }
        do {
            _ = try g.identity(counter: 4, date: date)
        } catch {
            #expect(error.message.contains("used up"), "\(error.message)")
        }
    }

    @Test func aCounterWiderThanItsFieldIsAnError() throws {
        let g = try generator(serial: "S{counter:2}", count: 1000)
        let date = try utc("2026-05-05")
        #expect(try g.identity(counter: 99, date: date).serial == "S99")
        #expect(throws: RecipeError(.identityExhausted)) { try g.identity(counter: 100, date: date) }
        #expect(g.rules.counters == 1..<100)
    }

    @Test func theGeneratorRefusesWhatTheDeviceCannotStore() throws {
        let date = try utc("2026-05-05")
        #expect(IdentityGenerator.maxStringBytes == FactoryStrings.capacity - 1)
        let g = try generator(name: String(repeating: "N", count: 29) + "{counter}")
        #expect(try g.identity(counter: 9, date: date).bluetoothName.utf8.count == 30)
        #expect(throws: RecipeError(.deviceLimit)) { try g.identity(counter: 100, date: date) }
        #expect(g.deviceProblem()?.message.contains("(counter 100)") == true)
        #expect(try generator().deviceProblem() == nil)
    }

    @Test func aNameNamesEveryUnitApartWithTheCounterOrTheWholeSerial() throws {
        for (text, apart) in [("Tuneup {serial}", true), ("T {counter}", true), ("T {counter:4}", true), ("T {serial[0:]}", true),
                              ("Tuneup {serial[-4:]}", false), ("T {model} {yyyy}", false), ("T {serial[:8]}", false)] {
            #expect(try IdentityTemplate(parsing: text, kind: .name).namesEveryUnitApart == apart, "\(text)")
        }
    }

    @Test func theSameCounterAndDateGiveTheSameIdentity() throws {
        let g = try generator()
        let date = try utc("2026-07-01")
        #expect(try g.identity(counter: 55, date: date) == (try g.identity(counter: 55, date: date)))
        #expect(try g.identity(counter: 55, date: date) != (try g.identity(counter: 56, date: date)))
    }

    @Test func templatesRefuseWhatTheyCannotRender() {
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "S-{dd}", kind: .serial) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "S{counter:1}{counter:2}", kind: .serial) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "S {counter:3}", kind: .serial) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "S{counter}", kind: .serial) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "S{counter:13}", kind: .serial) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "{serial}{counter:3}", kind: .serial) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "N {serial[x:]}", kind: .name) }
        #expect(throws: TemplateError.self) { try IdentityTemplate(parsing: "N }", kind: .name) }
        #expect(throws: Never.self) { try IdentityTemplate(parsing: "N {serial[:-2]} {{", kind: .name) }
    }

    @Test func addressesParseAndBlocksStayWithinTheirFirstByte() throws {
        #expect(BDAddress(parsing: "02:54:55:0a:0B:0c")?.description == "02:54:55:0A:0B:0C")
        #expect(BDAddress(parsing: "02:54:55:0a:0B") == nil)
        #expect(BDAddress(parsing: "02:54:55:0a:0B:0g") == nil)
        let end = try #require(BDAddress(parsing: "00:FF:FF:FF:FF:FE"))
        #expect(try AddressBlock(start: end, count: 2).last.description == "00:FF:FF:FF:FF:FF")
        #expect(throws: RecipeError(.identityExhausted)) { try AddressBlock(start: end, count: 3) }
        #expect(throws: RecipeError(.outOfRange)) { try AddressBlock(start: try #require(BDAddress(parsing: "01:00:00:00:00:00")), count: 1) }
        #expect(throws: RecipeError(.outOfRange)) { try AddressBlock(start: try #require(BDAddress(parsing: "00:00:00:00:00:00")), count: 1) }
        #expect(throws: RecipeError(.outOfRange)) { try AddressBlock(start: try #require(BDAddress(parsing: "FF:FF:FF:FF:FF:FF")), count: 1) }
    }
}
