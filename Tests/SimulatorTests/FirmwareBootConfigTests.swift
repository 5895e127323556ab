import LightX
import Testing
@testable import HeadsetSimulator

@Suite struct FirmwareBootConfigTests {
    @Test func identityStrings() throws {
        var fw = ApplicationFirmware(state: .factory(index: 0))
        var got: [String: String] = [:]
        for s in ConfigStrings.all {
            let request = s.readRequest()
            let reply = fw.reply(request)
            expectReply(reply, to: request)
            #expect(reply.buffer.last == 0, "config strings are NUL-terminated")
            got[s.name] = try s.decode(reply.buffer)
        }
        #expect(got["product"] == "Tuneup Sim Headset")
        #expect(got["manufacturer"] == "Tuneup")
        #expect(got["model"] == "TS-1")
        #expect(got["serial"] == "TS1-000001")
        #expect(got["hardware"] == "B1")
        #expect(got["firmware"] == "1.4.2")
        #expect(got["bt-name"] == "Tuneup Sim")
        #expect(got["sdhm-product"] == "Tuneup Sim Headset")
        #expect(got["sdhm-serial"] == "TS1-000001")
        #expect(got["sdhm-hardware"] == "B1")
        #expect(got["sdhm-boot-version"] == "1.0.0")
    }

    @Test func identityIsDerivedFromTheDeviceIndex() {
        #expect(HeadsetIdentity.factory(index: 1).serialNumber == "TS1-000002")
        #expect(HeadsetIdentity.factory(index: 41).serialNumber == "TS1-000042")
        #expect(HeadsetIdentity.factory(index: 1).bluetoothDisplayName == "Tuneup Sim 2")
    }

    @Test func configStringsAreTrimmedToTheirCapacity() throws {
        var state = HeadsetState.factory()
        state.identity.serialNumber = String(repeating: "S", count: 40)
        var fw = ApplicationFirmware(state: state)
        let sdhm = try #require(ConfigStrings.setting(for: .configSDHMSerialNumber))
        let reply = fw.reply(sdhm.readRequest())
        #expect(reply.buffer.count == 16)
        #expect(try sdhm.decode(reply.buffer) == String(repeating: "S", count: 15))
        let plain = try #require(ConfigStrings.setting(for: .configSerialNumber))
        #expect(fw.reply(plain.readRequest()).buffer.count == 32)
    }

    @Test func configWritesAndUndefinedConfigCommandsAreNotSupported() {
        var fw = ApplicationFirmware()
        let write = rawRequest(.write, .configProductName, Array("X\0".utf8))
        expectReply(fw.reply(write), to: write, .notSupported)
        for raw: UInt8 in [0x07, 0x10, 0x12, 0x19] {
            let read = rawRequest(.read, Command(rawValue: raw))
            expectReply(fw.reply(read), to: read, .notSupported)
        }
        #expect(fw.state.identity.productName == "Tuneup Sim Headset")
    }

    @Test func imageTypeSaysApplication() throws {
        var fw = ApplicationFirmware()
        let request = BootRequests.imageType()
        let reply = fw.reply(request)
        expectReply(reply, to: request)
        #expect(Array(reply.buffer) == [1])
        #expect(try BootRequests.isBootloader(imageTypeReply: reply.buffer) == false)
    }

    @Test func authenticationWithTheRightResponse() throws {
        var fw = ApplicationFirmware(randomSeed: 42)
        #expect(try BootRequests.isAuthenticated(authStatusReply: fw.reply(BootRequests.authStatus()).buffer) == false)
        let challengeRequest = BootRequests.authChallenge()
        let challenge = fw.reply(challengeRequest)
        expectReply(challenge, to: challengeRequest)
        #expect(challenge.buffer.count == 16)
        let response = try BootRequests.authResponse(Authentication.response(to: challenge.buffer))
        expectReply(fw.reply(response), to: response)
        let status = fw.reply(BootRequests.authStatus())
        expectReply(status, to: BootRequests.authStatus())
        #expect(Array(status.buffer) == [1])
        #expect(fw.isAuthenticated)
    }

    @Test func authenticationWithAWrongResponseFails() throws {
        var fw = ApplicationFirmware(randomSeed: 42)
        let challenge = fw.reply(BootRequests.authChallenge())
        var response = try Authentication.response(to: challenge.buffer)
        response[5] ^= 1
        let request = try BootRequests.authResponse(response)
        expectReply(fw.reply(request), to: request, .fail)
        #expect(Array(fw.reply(BootRequests.authStatus()).buffer) == [0])
        // The challenge is used up: even the right answer now fails.
        let late = try BootRequests.authResponse(Authentication.response(to: challenge.buffer))
        expectReply(fw.reply(late), to: late, .fail)
        #expect(!fw.isAuthenticated)
    }

    @Test func authenticationResponseTooShortOrWithoutChallengeFails() throws {
        var fw = ApplicationFirmware(randomSeed: 1)
        let noChallenge = try BootRequests.authResponse([UInt8](repeating: 0x5D, count: 16))
        expectReply(fw.reply(noChallenge), to: noChallenge, .fail)
        let challenge = fw.reply(BootRequests.authChallenge())
        let short = rawRequest(.write, .bootAuthResponse, Array(try Authentication.response(to: challenge.buffer).prefix(15)))
        expectReply(fw.reply(short), to: short, .fail)
        #expect(Array(fw.reply(BootRequests.authStatus()).buffer) == [0])
    }

    @Test func challengesComeFromTheSeededGenerator() {
        var a = ApplicationFirmware(randomSeed: 7)
        var b = ApplicationFirmware(randomSeed: 7)
        var c = ApplicationFirmware(randomSeed: 8)
        let first = a.reply(BootRequests.authChallenge()).buffer
        #expect(first == b.reply(BootRequests.authChallenge()).buffer)
        #expect(first != c.reply(BootRequests.authChallenge()).buffer)
        #expect(first != a.reply(BootRequests.authChallenge()).buffer, "each challenge is fresh")
    }

    @Test func versionFileOfTheApplication() throws {
        var fw = ApplicationFirmware()
        let request = try BootRequests.readVersionFile(address: FlashRegion.application.versionFileAddress)
        let reply = fw.reply(request)
        expectReply(reply, to: request)
        #expect(String(decoding: reply.buffer, as: UTF8.self) == "1.4.2")
        #expect(reply.header.address == 0x04_0000)
        for address: UInt32 in [0, 0x0C_0000, 0x0C_6000, 0x04_0001] {
            let other = try BootRequests.readVersionFile(address: address)
            expectReply(fw.reply(other), to: other, .notFound)
        }
    }

    @Test func bootloaderCommandsAreNotSupportedInTheApplication() throws {
        var fw = ApplicationFirmware()
        let requests: [Packet] = [
            BootRequests.jumpToApplication(), rawRequest(.read, .bootJumpToBootloader),
            BootRequests.capabilities(),
            try BootRequests.eraseSector(.application, index: 0), try BootRequests.eraseSector(.resource, index: 0),
            try BootRequests.writeBlock(.application, offset: 0, data: [1, 2, 3]),
            try BootRequests.readBlock(.application, offset: 0, count: 16),
            try BootRequests.verifyCRC(.application, sectors: 1, crc: 0), try BootRequests.commit(sectors: 1),
            rawRequest(.write, .bootImageType, u32(0)), rawRequest(.write, .bootAuthStatus, u32(1)),
            rawRequest(.read, .bootAuthResponse), rawRequest(.write, .bootAuthChallenge, u32(0)),
        ]
        for request in requests {
            expectReply(fw.reply(request), to: request, .notSupported)
        }
        #expect(fw.mode == .application)
        #expect(!fw.jumpToBootloaderRequested)
    }

    @Test func jumpToBootloaderNeedsAuthentication() throws {
        var fw = ApplicationFirmware(randomSeed: 9)
        let jump = BootRequests.jumpToBootloader()
        expectReply(fw.reply(jump), to: jump, .fail)
        #expect(!fw.jumpToBootloaderRequested)
        let challenge = fw.reply(BootRequests.authChallenge())
        _ = fw.reply(try BootRequests.authResponse(Authentication.response(to: challenge.buffer)))
        expectReply(fw.reply(jump), to: jump)
        #expect(fw.jumpToBootloaderRequested, "the device resets into the bootloader after the reply")
    }
}
