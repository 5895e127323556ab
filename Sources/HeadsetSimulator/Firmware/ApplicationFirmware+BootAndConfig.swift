import LightX
import Support
import Transport

extension ApplicationFirmware {
    /// The Config group (0x01-0x1F): identity strings, NUL-terminated and trimmed to each string's capacity by the
    /// `ConfigStrings` codecs. Config writes are not available (NotSupported), as in the reference host.
    func handleConfig(_ request: Packet) -> Outcome {
        Self.configOutcome(request, identity: state.identity)
    }

    /// A config-string read answered from `identity` (shared with the bootloader).
    static func configOutcome(_ request: Packet, identity: HeadsetIdentity) -> Outcome {
        guard let setting = ConfigStrings.setting(for: request.command),
              let text = identity.string(for: request.command) else { return .notSupported }
        guard request.opcode == .read else { return .notSupported }
        return .ok(setting.encode(text))
    }

    /// The Boot group (0x20-0x3F) as the application answers it: image type, authentication, the version files and
    /// JumpToBootloader (0x25: Fail before authentication; else Ok, and the device resets into the bootloader —
    /// `jumpToBootloaderRequested` tells the owner). Flash commands need the bootloader (NotSupported).
    mutating func handleBoot(_ request: Packet) -> Outcome {
        let isRead = request.opcode == .read
        switch request.command {
        case .bootImageType:
            // Byte 0 non-zero: the application is running (§4.15).
            return isRead ? .ok([1]) : .notSupported
        case .bootAuthChallenge:
            guard isRead else { return .notSupported }
            let fresh = nextChallenge()
            challenge = fresh
            isAuthenticated = false
            return .ok(fresh)
        case .bootAuthResponse:
            guard !isRead else { return .notSupported }
            return checkAuthenticationResponse(request.buffer)
        case .bootAuthStatus:
            return isRead ? .ok([isAuthenticated ? 1 : 0]) : .notSupported
        case .bootReadVersionFile:
            guard isRead else { return .notSupported }
            if request.address == FlashRegion.application.versionFileAddress {
                return .ok(Array(state.firmwareVersion.description.utf8))
            }
            guard let text = versionFiles[request.address] else { return .notFound }
            return .ok(Array(text.utf8))
        case .bootJumpToBootloader:
            guard !isRead else { return .notSupported }
            guard isAuthenticated else { return .fail }
            jumpToBootloaderRequested = true
            return .ok()
        default:
            return .notSupported
        }
    }

    /// 0x24: Ok and authenticated iff the first 16 bytes equal challenge XOR 0x5D (§5); Fail (and not
    /// authenticated) when the response is shorter than 16 bytes, wrong, or no challenge was issued. Either way the
    /// challenge is used up, so a response cannot be replayed.
    mutating func checkAuthenticationResponse(_ buffer: ArraySlice<UInt8>) -> Outcome {
        defer { challenge = nil }
        isAuthenticated = Self.isValidResponse(buffer, to: challenge)
        return isAuthenticated ? .ok() : .fail
    }

    /// Whether `buffer` starts with the right response to `challenge` (false without a challenge).
    static func isValidResponse(_ buffer: ArraySlice<UInt8>, to challenge: [UInt8]?) -> Bool {
        guard let challenge, let expected = try? Authentication.response(to: challenge),
              buffer.count >= Authentication.challengeLength else { return false }
        return Array(buffer.prefix(Authentication.challengeLength)) == expected
    }

    /// 16 bytes from the seeded generator.
    mutating func nextChallenge() -> [UInt8] {
        Self.makeChallenge(from: &random)
    }

    /// 16 bytes from `random` (shared with the bootloader).
    static func makeChallenge(from random: inout SeededRandom) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Authentication.challengeLength)
        while bytes.count < Authentication.challengeLength {
            let word = random.next()
            for shift in stride(from: 0, to: 64, by: 8) where bytes.count < Authentication.challengeLength {
                bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return bytes
    }
}
