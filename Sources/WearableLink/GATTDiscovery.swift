import Wearable

/// The client side of GATT discovery of one primary service over ATT, pure: the requests to send, one at a time, and
/// what their responses say, ending in the service's `GATTServiceLayout` (the discovery response of the framed
/// links). Primary services by Read By Group Type (0x2800) until the service is found, its characteristics by Read By
/// Type (0x2803) over its range, and for each characteristic that notifies its CCCD (0x2902) by Find Information
/// between its value and the next declaration.
public struct GATTDiscovery: Sendable {
    /// What to do next.
    public enum Step: Sendable, Hashable {
        case send(ATTPDU)
        case done(GATTServiceLayout)
        /// The device has no such primary service; the services it has.
        case notFound(services: [ATTUUID])
        /// The device answered something discovery cannot use.
        case failed(String)
    }

    private enum Phase: Sendable {
        case services(from: UInt16)
        case characteristics(from: UInt16)
        case descriptors(index: Int, from: UInt16)
        case finished
    }

    public let service: UInt16
    private var phase: Phase = .services(from: 1)
    private var seen: [ATTUUID] = []
    private var range: (start: UInt16, end: UInt16) = (0, 0)
    private var declarations: [(declaration: UInt16, entry: GATTCharacteristicEntry)] = []

    public init(service: UInt16) { self.service = service }

    /// The first request.
    public func start() -> ATTPDU { .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService) }

    /// The step after `response` (the answer to the last request sent).
    public mutating func receive(_ response: ATTPDU) -> Step {
        switch (phase, response) {
        case let (.services(from), .readByGroupTypeResponse(groups)):
            var last = from
            for g in groups {
                guard g.handle >= from, g.end >= g.handle else { return .failed("primary service discovery: a group 0x\(hex16(g.handle))...0x\(hex16(g.end)) out of order") }
                let uuid = ATTUUID(wire: g.value[...])
                if let uuid { seen.append(uuid) }
                if uuid == .uuid16(service) || uuid?.bytes128 == ATTUUID.uuid16(service).bytes128 {
                    range = (g.handle, g.end)
                    return characteristics(from: g.handle)
                }
                last = g.end
            }
            guard last < 0xFFFF, !groups.isEmpty else { return .notFound(services: seen) }
            phase = .services(from: last + 1)
            return .send(.readByGroupTypeRequest(start: last + 1, end: 0xFFFF, type: .primaryService))
        case (.services, .errorResponse(_, _, .attributeNotFound)):
            return .notFound(services: seen)
        case let (.characteristics(from), .readByTypeResponse(entries)):
            var last = from
            for e in entries {
                guard e.handle >= from, e.handle <= range.end, e.value.count == 5 || e.value.count == 19,
                      let uuid = ATTUUID(wire: e.value[3...]) else {
                    return .failed("characteristic discovery: an unusable declaration at 0x\(hex16(e.handle))")
                }
                let valueHandle = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                declarations.append((e.handle, GATTCharacteristicEntry(valueHandle: valueHandle, configurationHandle: 0,
                                                                       properties: e.value[0], uuid: uuid.bytes128)))
                last = e.handle
            }
            guard last < range.end, !entries.isEmpty else { return descriptors(index: 0) }
            return characteristics(from: last + 1)
        case (.characteristics, .errorResponse(_, _, .attributeNotFound)):
            return descriptors(index: 0)
        case let (.descriptors(index, from), .findInformationResponse(entries)):
            var last = from
            for e in entries {
                guard e.handle >= from else { return .failed("descriptor discovery: handle 0x\(hex16(e.handle)) out of order") }
                if e.type == .clientConfiguration, declarations[index].entry.configurationHandle == 0 {
                    declarations[index].entry.configurationHandle = e.handle
                }
                last = e.handle
            }
            if declarations[index].entry.configurationHandle == 0, last < descriptorEnd(index), !entries.isEmpty {
                phase = .descriptors(index: index, from: last + 1)
                return .send(.findInformationRequest(start: last + 1, end: descriptorEnd(index)))
            }
            return descriptors(index: index + 1)
        case let (.descriptors(index, _), .errorResponse(_, _, .attributeNotFound)):
            return descriptors(index: index + 1)
        case let (_, .errorResponse(op, handle, e)):
            return .failed("the device refused request 0x\(hexByte(op)) at handle 0x\(hex16(handle)): \(e)")
        default:
            return .failed("the device answered discovery with opcode 0x\(hexByte(response.opcode))")
        }
    }

    private mutating func characteristics(from start: UInt16) -> Step {
        guard start <= range.end else { return descriptors(index: 0) }
        phase = .characteristics(from: start)
        return .send(.readByTypeRequest(start: start, end: range.end, type: .characteristic))
    }

    /// The last handle a characteristic's descriptors may have: before the next declaration, or the service's end.
    private func descriptorEnd(_ index: Int) -> UInt16 {
        index + 1 < declarations.count ? declarations[index + 1].declaration - 1 : range.end
    }

    /// Looks for the CCCD of the next characteristic (from `index`) that notifies or indicates; done after the last.
    private mutating func descriptors(index: Int) -> Step {
        var i = index
        while i < declarations.count {
            let entry = declarations[i].entry
            if entry.properties & 0x30 != 0, entry.valueHandle < descriptorEnd(i) {
                phase = .descriptors(index: i, from: entry.valueHandle + 1)
                return .send(.findInformationRequest(start: entry.valueHandle + 1, end: descriptorEnd(i)))
            }
            i += 1
        }
        phase = .finished
        return .done(GATTServiceLayout(serviceUUID16: service, startHandle: range.start, endHandle: range.end,
                                       characteristics: declarations.map(\.entry)))
    }
}
