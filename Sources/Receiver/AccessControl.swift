import Foundation
import Synchronization
import SystemSupport
import UploadProtocol

/// Who sent a request, as far as the receiver can tell from its token.
struct Principal: Sendable, Equatable {
    /// The account whose space the request works in.
    var account: String
    /// The device's name (from `serve tokens add`); nil for `--token-file`'s token and for a
    /// receiver without tokens.
    var device: String?
    var scope: TokenScope
    /// The device token's id; nil as `device`.
    var tokenID: String?

    /// A receiver without any token: every request may do everything, in the default space
    /// (as before accounts existed).
    static let open = Principal(account: AccountBook.defaultAccount, device: nil, scope: .admin, tokenID: nil)
}

/// `serve`'s view of who may do what: `--token-file`'s token (an admin token of the account
/// `default`) and the device tokens of `accounts.json` (`AccountBook`).
///
/// The book is read at start and again when its file's stamp changes, looked at no more than
/// once a second (on the next request after that second), so a token added or revoked by
/// `serve tokens ...` counts from the first request a second or so later, without a restart. A
/// book that cannot be read then keeps the tokens read before (and says so in the log); a book
/// removed leaves no device token valid. Once a token file was given or a book seen, a request
/// always needs a valid token: revoking the last token never opens the receiver.
///
/// Tokens are compared by their SHA-256, every known hash looked at whatever matched, each in
/// time independent of its content.
final class AccessControl: Sendable {
    private struct Entry: Sendable {
        var sha256: [UInt8]
        var principal: Principal
    }

    private struct State: Sendable {
        var entries: [Entry] = []
        /// Each account's quota in bytes, from the book.
        var quotas: [String: Int64] = [:]
        var stamp: ReadOnlyFile.Stamp?
        var sawBook = false
        var checkedAt: ContinuousClock.Instant?
        /// When each token's use was last written to `tokens-used.json`.
        var usage: [String: Date] = [:]
        var usageWrittenAt: [String: Date] = [:]
    }

    /// How often the book's stamp is looked at, at most.
    static let recheckInterval: Duration = .seconds(1)
    /// A token's last use is written at most this often (seconds) per token.
    static let usageWriteInterval: Double = 60

    private let directory: String
    private let legacy: Entry?
    private let log: @Sendable (String) -> Void
    private let now: @Sendable () -> Date
    private let state = Mutex(State())
    /// Serialises writes of `tokens-used.json`.
    private let usageWriter = Mutex(())

    /// Reads the book in `directory` if it has one. Throws `.corruptMetadata` when the book is
    /// there but unreadable: a receiver must not start with tokens it cannot read.
    init(directory: String, legacyToken: String?, log: @escaping @Sendable (String) -> Void,
         now: @escaping @Sendable () -> Date) throws(ReceiverError) {
        self.directory = directory
        self.log = log
        self.now = now
        if let legacyToken {
            legacy = Entry(sha256: try Self.hash(legacyToken),
                           principal: Principal(account: AccountBook.defaultAccount, device: nil, scope: .admin, tokenID: nil))
        } else {
            legacy = nil
        }
        if let (book, stamp) = try AccountBook.read(path: AccountBook.path(in: directory)) {
            let entries = try Self.entries(of: book)
            state.withLock { state in
                state.entries = entries
                state.quotas = Self.quotas(of: book)
                state.stamp = stamp
                state.sawBook = true
                state.checkedAt = ContinuousClock.now
                state.usage = AccountBook.lastUsed(directory: directory)
            }
        } else {
            state.withLock { $0.checkedAt = ContinuousClock.now }
        }
        // A serve killed while writing `tokens-used.json` left its temporary file; only serve
        // writes one.
        AccountBook.removeStaleStaging(of: AccountBook.usageFileName, in: directory)
    }

    /// The principal a request's `Authorization` names, or nil when it names none (401). A
    /// receiver with no token file and no book lets everyone in as `Principal.open`.
    func principal(authorization: String?) -> Principal? {
        refreshIfDue()
        let (entries, closed) = state.withLock { ($0.entries, $0.sawBook) }
        guard closed || legacy != nil else { return .open }
        guard let presented = Self.bearer(authorization), let digest = try? Self.hash(presented) else { return nil }
        var found: Principal?
        for entry in (legacy.map { [$0] } ?? []) + entries where Self.equalInConstantTime(entry.sha256, digest) {
            found = entry.principal
        }
        if let id = found?.tokenID { recordUse(of: id) }
        return found
    }

    /// Reads the book again when its stamp changed since the last look, looking at most once a second.
    private func refreshIfDue() {
        let due = state.withLock { state -> Bool in
            let now = ContinuousClock.now
            if let checked = state.checkedAt, now - checked < Self.recheckInterval { return false }
            state.checkedAt = now
            return true
        }
        guard due else { return }
        let path = AccountBook.path(in: directory)
        let current = try? ReadOnlyFile(path: path).stamp()
        guard current != state.withLock({ $0.stamp }) else { return }
        guard current != nil else {
            state.withLock { state in
                if state.sawBook { state.entries = [] }
                state.stamp = nil
            }
            log("accounts: \(AccountBook.fileName) is gone: no device token is valid")
            return
        }
        do throws(ReceiverError) {
            guard let (book, stamp) = try AccountBook.read(path: path) else { return }
            let entries = try Self.entries(of: book)
            state.withLock { state in
                state.entries = entries
                state.quotas = Self.quotas(of: book)
                state.stamp = stamp
                state.sawBook = true
            }
            log("accounts: read \(AccountBook.fileName): \(book.accountNames.count) accounts, \(entries.count) device tokens")
        } catch {
            log("accounts: cannot read \(AccountBook.fileName), keeping the tokens read before: \(error.message)")
        }
    }

    /// Notes that a token was used now, writing `tokens-used.json` when its last written use is
    /// older than `usageWriteInterval`. The file is advisory (`tokens list` shows it): written
    /// atomically, not fsync'd, and a failure is only logged.
    private func recordUse(of id: String) {
        let date = now()
        let snapshot = state.withLock { state -> [String: Date]? in
            state.usage[id] = date
            if let written = state.usageWrittenAt[id], date.timeIntervalSince(written) < Self.usageWriteInterval { return nil }
            state.usageWrittenAt[id] = date
            return state.usage
        }
        guard let snapshot else { return }
        usageWriter.withLock { _ in
            do throws(ReceiverError) {
                try AccountBook.writeReplacing(directory + "/" + AccountBook.usageFileName, with: UploadStore.encode(snapshot),
                                               directory: directory, durable: false)
            } catch {
                log("accounts: cannot write \(AccountBook.usageFileName): \(error.message)")
            }
        }
    }

    /// The account's quota in bytes as the book last read says; nil for none.
    func quota(for account: String) -> Int64? {
        state.withLock { $0.quotas[account] }
    }

    private static func quotas(of book: AccountBook) -> [String: Int64] {
        var quotas: [String: Int64] = [:]
        for account in book.accounts { if let bytes = account.quotaBytes { quotas[account.name] = bytes } }
        return quotas
    }

    private static func entries(of book: AccountBook) throws(ReceiverError) -> [Entry] {
        var entries: [Entry] = []
        for token in book.tokens {
            guard let digest = Hex.bytes(fromHex: token.sha256), digest.count == SHA256.byteCount else {
                throw ReceiverError(code: .corruptMetadata, message: "token \(token.id) in \(AccountBook.fileName) has no usable sha256")
            }
            entries.append(Entry(sha256: digest, principal: Principal(account: token.account, device: token.device,
                                                                     scope: token.scope, tokenID: token.id)))
        }
        return entries
    }

    /// The token of `Authorization: Bearer <token>`, surrounding spaces removed.
    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let scheme = "bearer "
        guard header.count > scheme.count, header.prefix(scheme.count).lowercased() == scheme else { return nil }
        return String(header.dropFirst(scheme.count).trimmingSpaces())
    }

    static func hash(_ token: String) throws(ReceiverError) -> [UInt8] {
        do {
            return try SHA256.digest(Array(token.utf8))
        } catch {
            throw ReceiverError(error)
        }
    }

    /// Whether two digests are equal, in time that depends on their length only.
    static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = a.count ^ b.count
        for i in 0..<min(a.count, b.count) { difference |= Int(a[i] ^ b[i]) }
        return difference == 0
    }
}
