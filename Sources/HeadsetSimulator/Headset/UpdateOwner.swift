import LightX

/// Who is updating the device (Tuneup rule, docs/protocol.md §6.2). A link claims the update with the first boot
/// command that belongs to one — authentication (0x23, 0x24), jump to bootloader, erase, write, verify, commit, jump
/// to application — and owns it while it is *active*: its link is open and it sent a request within
/// `quietPeriod`. Meanwhile such commands from any other link are answered Fail with the reason "BUSY" and not
/// executed (reads — image type, authentication status, flash, version files, capabilities — are served to all).
/// The claim ends when the owner's link closes (so the same host reconnecting takes it again), after the quiet
/// period, and with the RAM (power loss, start of the application).
struct UpdateOwner: Sendable, Hashable {
    /// How long an owner may stay silent before another link may take over (wall time, not scaled).
    static let quietPeriod: Duration = .seconds(5)

    var link: UInt64
    var lastSeen: ContinuousClock.Instant

    /// Whether `request` from `link` (nil: a link closed since it sent it) may run; records the claim or the
    /// owner's activity in `owner`.
    static func admits(_ request: Packet, from link: UInt64?, owner: inout UpdateOwner?, now: ContinuousClock.Instant) -> Bool {
        if let current = owner, current.link == link {
            owner?.lastSeen = now
            return true
        }
        guard claims(request.command) else { return true }
        if let current = owner, now - current.lastSeen < quietPeriod { return false }
        owner = link.map { UpdateOwner(link: $0, lastSeen: now) }
        return true
    }

    /// The boot commands that belong to an update (they change authentication, flash, verification or the image).
    static func claims(_ command: Command) -> Bool {
        switch command {
        case .bootAuthChallenge, .bootAuthResponse, .bootJumpToBootloader, .bootEraseImageSector, .bootEraseRsrc1Sector,
             .bootWriteImage, .bootWriteRsrc1, .bootVerifyCRC, .bootCommitImage, .bootJumpToApplication:
            return true
        default:
            return false
        }
    }
}
