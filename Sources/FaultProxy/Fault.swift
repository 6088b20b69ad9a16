/// One fault a `FaultProxy` injects into one proxied connection.
public enum Fault: Sendable, Equatable, CustomStringConvertible {
    /// Which way bytes flow.
    public enum Direction: String, Sendable {
        /// Client to server: a request body cut short.
        case upstream
        /// Server to client: a response cut short.
        case downstream
    }

    /// Close both sides once `bytes` have passed in `direction`.
    case cut(afterBytes: Int, direction: Direction)
    /// Stop forwarding in `direction` after `bytes` for `milliseconds`, then go on.
    case stall(afterBytes: Int, direction: Direction, milliseconds: Int)
    /// Wait `milliseconds` before each chunk forwarded.
    case delay(milliseconds: Int)
    /// Accept, then reset the connection at once (RST, not FIN).
    case reset
    /// Answer the first request with `503 Service Unavailable` without reaching the server.
    case serviceUnavailable
    /// Answer the first request with `503 Service Unavailable` and `Retry-After: seconds`, without
    /// reaching the server: a destination asking its clients to come back later.
    case busy(retryAfter: Int)
    /// Answer the first request with `200 OK` and an HTML login page, without reaching the server:
    /// the hotel Wi-Fi that answers every request itself.
    case captivePortal
    /// Flip one bit of every request body that passes upstream, `atByte` bytes into it (its last
    /// byte when shorter), leaving request heads intact: a broken middlebox, or a store that keeps
    /// whatever bytes reach it, as S3-compatible stores that do not check the payload hash do.
    case flipBody(atByte: Int)

    public var description: String {
        switch self {
        case .cut(let n, let d): "cut \(d.rawValue) after \(n) bytes"
        case .stall(let n, let d, let ms): "stall \(d.rawValue) after \(n) bytes for \(ms) ms"
        case .delay(let ms): "delay \(ms) ms per chunk"
        case .reset: "reset"
        case .serviceUnavailable: "503"
        case .busy(let seconds): "503 with Retry-After: \(seconds)"
        case .captivePortal: "200 with a login page"
        case .flipBody(let n): "flip a bit \(n) bytes into every request body"
        }
    }
}

/// Chooses faults for connections, deterministically from a seed: connection `n` of a plan made
/// with the same seed always gets the same fault.
public struct FaultPlan: Sendable {
    private let choose: @Sendable (Int) -> Fault?

    /// A plan from an explicit function of the connection index (0, 1, 2, ...).
    public init(_ choose: @escaping @Sendable (Int) -> Fault?) { self.choose = choose }

    /// No faults: a plain proxy.
    public static let none = FaultPlan { _ in nil }

    /// Faults on a fraction `rate` of connections, drawn from `kinds` with byte offsets up to
    /// `maxOffset`, reproducibly from `seed`.
    public static func seeded(_ seed: UInt64, rate: Double, maxOffset: Int = 1 << 20,
                              kinds: [String] = ["cut-up", "cut-down", "stall", "reset", "503"]) -> FaultPlan {
        FaultPlan { index in
            var rng = SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
            guard Double(rng.next() % 1_000_000) / 1_000_000 < rate, !kinds.isEmpty else { return nil }
            let kind = kinds[Int(rng.next() % UInt64(kinds.count))]
            let offset = Int(rng.next() % UInt64(max(maxOffset, 1)))
            switch kind {
            case "cut-up": return .cut(afterBytes: offset, direction: .upstream)
            case "cut-down": return .cut(afterBytes: offset % 4096, direction: .downstream)
            case "stall": return .stall(afterBytes: offset, direction: .upstream, milliseconds: 200)
            case "delay": return .delay(milliseconds: 5)
            case "reset": return .reset
            default: return .serviceUnavailable
            }
        }
    }

    func fault(for index: Int) -> Fault? { choose(index) }
}

/// A small seeded generator (SplitMix64), so fault plans repeat exactly.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
