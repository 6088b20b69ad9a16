#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemSupport
import UploadProtocol

/// What a device token may do (`serve tokens add --scope`). Each scope allows what the one
/// before it does:
///
/// - `upload`: create uploads, append to and ask the offset of its device's own uploads, and
///   look its account's objects up by digest (the pre-check and the proof). No listing, no
///   reading bytes or sidecars by id, no deleting.
/// - `read`: also list and download its account's objects (what `restore` and `verify --deep` need).
/// - `admin`: everything, and the listing and objects of every account.
public enum TokenScope: String, Codable, Sendable, CaseIterable, Comparable {
    case upload
    case read
    case admin

    /// Whether a token of this scope may do what `needed` allows.
    public func allows(_ needed: TokenScope) -> Bool { needed <= self }

    public static func < (lhs: TokenScope, rhs: TokenScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One account: a family member or a team, with a space of its own on the receiver.
public struct Account: Codable, Sendable, Equatable {
    /// `[A-Za-z0-9._-]`, 1 to 64 characters, not starting with a dot.
    public var name: String
    public var created: Date
    /// The most bytes of objects the account may hold (`serve accounts add --quota`, `serve
    /// accounts quota`); nil for no limit. An upload that would take the account past it is
    /// refused with `507` and a problem body before its bytes are taken.
    public var quotaBytes: Int64?
}

/// One device's token as the receiver keeps it: never the token itself, only its SHA-256.
public struct DeviceToken: Codable, Sendable, Equatable {
    /// A short random id (8 hex digits) that `tokens list` shows and `tokens revoke` takes.
    public var id: String
    public var account: String
    /// The device's name, as sidecars and `GET /objects` show who sent each object.
    public var device: String
    public var scope: TokenScope
    /// Lowercase hex SHA-256 of the token's text.
    public var sha256: String
    public var created: Date
}

/// The receiver's accounts and device tokens, kept in `accounts.json` in the receiver's
/// directory (`serve accounts ...`, `serve tokens ...`):
///
///     {"accounts":[{"created":...,"name":"anna"}],
///      "tokens":[{"account":"anna","created":...,"device":"anna-phone","id":"3f09c2aa",
///                 "scope":"upload","sha256":"<64 hex>"}],"version":1}
///
/// Edits take `accounts.lock` (`flock`), read the file, change it and write it whole to a
/// temporary file in the same directory that is fsync'd and renamed over the old one (the
/// directory fsync'd after): a reader, a running `serve` included, sees the old book or the
/// new, never a mix, and a kill at any moment of an edit leaves one of the two
/// (`ServeAccountsCLITests.theBookSurvivesASIGKILLAtEachStepOfItsWrite`); the next edit removes
/// the temporary file a killed one left. A running `serve` reads the file again when its stamp
/// changes (`AccessControl`). When each token was last used is in another file, `tokens-used.json`,
/// which only `serve` writes, so an edit never races the receiver's writes.
public struct AccountBook: Codable, Sendable, Equatable {
    /// The book's file, in the receiver's directory.
    public static let fileName = "accounts.json"
    /// When each token was last used (token id -> date), written by `serve`.
    public static let usageFileName = "tokens-used.json"
    static let lockFileName = "accounts.lock"
    /// The account of `--token-file`'s token and of a receiver without tokens; its space is the
    /// receiver's directory itself (today's layout), every other account's is `accounts/<name>/`.
    public static let defaultAccount = "default"

    public var version = 1
    public var accounts: [Account] = []
    public var tokens: [DeviceToken] = []

    public init() {}

    /// Whether an account of that name exists (`default` always does).
    public func hasAccount(_ name: String) -> Bool {
        name == Self.defaultAccount || accounts.contains { $0.name == name }
    }

    /// Every account's name, `default` among them when it has tokens or was added.
    public var accountNames: [String] {
        var names = accounts.map(\.name)
        if !names.contains(Self.defaultAccount) && tokens.contains(where: { $0.account == Self.defaultAccount }) {
            names.insert(Self.defaultAccount, at: 0)
        }
        return names
    }

    // MARK: Editing

    /// Adds an account. Throws `.invalidName` for a name outside `[A-Za-z0-9._-]{1,64}` (or
    /// starting with a dot), `.alreadyExists` when there is one of that name.
    public mutating func addAccount(_ name: String, now: Date) throws(ReceiverError) {
        try Self.checkName(name, what: "account")
        if accounts.contains(where: { $0.name == name }) {
            throw ReceiverError(code: .alreadyExists, message: "there is already an account named \(name)")
        }
        accounts.append(Account(name: name, created: now))
    }

    /// Sets (or with nil removes) an account's quota, in bytes. The account `default` gets an
    /// entry of its own for it. Throws `.unknownAccount`.
    public mutating func setQuota(_ account: String, bytes: Int64?, now: Date) throws(ReceiverError) {
        guard hasAccount(account) else {
            throw ReceiverError(code: .unknownAccount, message: "there is no account named \(account)")
        }
        if !accounts.contains(where: { $0.name == account }) { accounts.append(Account(name: account, created: now)) }
        for index in accounts.indices where accounts[index].name == account { accounts[index].quotaBytes = bytes }
    }

    /// The account's quota in bytes, nil when it has none.
    public func quota(of account: String) -> Int64? {
        accounts.first { $0.name == account }?.quotaBytes
    }

    /// Makes a token for `device` of `account` and returns its text (shown once, kept nowhere)
    /// with the record kept. The text is `pd_` and 64 hex digits: 32 bytes from the kernel's
    /// random generator (`getrandom`). Throws `.invalidName`, or `.unknownAccount`.
    public mutating func addToken(account: String, device: String, scope: TokenScope,
                                  now: Date) throws(ReceiverError) -> (token: String, record: DeviceToken) {
        try Self.checkName(device, what: "device")
        guard hasAccount(account) else {
            throw ReceiverError(code: .unknownAccount, message: "there is no account named \(account) (add it with `photodrain serve accounts add \(account)`)")
        }
        let token = "pd_" + Hex.string(Syscalls.randomBytes(32))
        var id = Hex.string(Syscalls.randomBytes(4))
        while tokens.contains(where: { $0.id == id }) { id = Hex.string(Syscalls.randomBytes(4)) }
        let record = DeviceToken(id: id, account: account, device: device, scope: scope,
                                 sha256: try Self.hashHex(token), created: now)
        tokens.append(record)
        return (token, record)
    }

    /// Removes the token with that id and returns it; `.unknownToken` when there is none.
    public mutating func revokeToken(id: String) throws(ReceiverError) -> DeviceToken {
        guard let index = tokens.firstIndex(where: { $0.id == id.lowercased() }) else {
            throw ReceiverError(code: .unknownToken, message: "there is no token with id \(id) (`photodrain serve tokens list` shows them)")
        }
        return tokens.remove(at: index)
    }

    /// Lowercase hex SHA-256 of a token's text.
    static func hashHex(_ token: String) throws(ReceiverError) -> String {
        do {
            return Hex.string(try SHA256.digest(Array(token.utf8)))
        } catch {
            throw ReceiverError(error)
        }
    }

    /// Refuses a name that cannot be a folder name or a log word: `[A-Za-z0-9._-]`, 1 to 64
    /// characters, not starting with a dot.
    static func checkName(_ name: String, what: String) throws(ReceiverError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
        guard allowed, (1...64).contains(name.utf8.count), !name.hasPrefix(".") else {
            throw ReceiverError(code: .invalidName,
                                message: "\(what) name '\(TerminalText.escaped(name))' is not 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-' (not starting with '.')")
        }
    }

    // MARK: The file

    /// The book in `directory`, or nil when it has none (no accounts were ever added). Throws
    /// `.corruptMetadata` when the file is there but not a book.
    public static func load(directory: String) throws(ReceiverError) -> AccountBook? {
        try read(path: path(in: directory))?.book
    }

    /// Reads the book at `path` with the stamp of the file it came from (the same open file).
    static func read(path: String) throws(ReceiverError) -> (book: AccountBook, stamp: ReadOnlyFile.Stamp)? {
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(path: path)
        } catch {
            if error.code == .unreadable && !Syscalls.exists(path) { return nil }
            throw ReceiverError(error)
        }
        let bytes: [UInt8]
        let stamp: ReadOnlyFile.Stamp
        do {
            stamp = try file.stamp()
            bytes = try file.bytes(at: 0, count: Int(min(stamp.size, 16 << 20)))
        } catch {
            throw ReceiverError(error)
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return (try decoder.decode(AccountBook.self, from: Data(bytes)), stamp)
        } catch {
            throw ReceiverError(code: .corruptMetadata, message: "\(path) is not an account book: \(error)")
        }
    }

    /// Reads the book in `directory` (an empty one when there is none), lets `body` change it,
    /// and writes it back atomically and durably, all under `accounts.lock`, so two edits at
    /// once never lose one. Creates `directory` when missing. Returns what `body` returns.
    public static func edit<R>(directory: String,
                               _ body: (inout AccountBook) throws(ReceiverError) -> R) throws(ReceiverError) -> R {
        try Syscalls.makeDirectory(directory)
        let lock = try Syscalls.open(directory + "/" + lockFileName, O_RDWR | O_CREAT, mode: 0o600)
        defer { Syscalls.closeDescriptor(lock) }
        try Syscalls.lockExclusive(lock, context: directory + "/" + lockFileName)
        removeStaleStaging(of: fileName, in: directory)
        var book = try load(directory: directory) ?? AccountBook()
        let result = try body(&book)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let bytes: [UInt8]
        do {
            bytes = Array(try encoder.encode(book))
        } catch {
            throw ReceiverError(code: .io, message: "cannot encode the account book: \(error)")
        }
        try writeReplacing(path(in: directory), with: bytes, directory: directory, durable: true)
        return result
    }

    /// When each token was last used, as `serve` last wrote it (token id -> date); empty when
    /// never written or unreadable.
    public static func lastUsed(directory: String) -> [String: Date] {
        guard let bytes = try? Syscalls.readFile(directory + "/" + usageFileName, limit: 16 << 20) else { return [:] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (try? decoder.decode([String: Date].self, from: Data(bytes))) ?? [:]
    }

    static func path(in directory: String) -> String { directory + "/" + fileName }

    /// Removes the temporary files a writer of `name` killed before its rename left
    /// (`.accounts.json.*.tmp`, `.tokens-used.json.*.tmp`). Called where no other writer of that
    /// file can be at work: an edit under `accounts.lock`, `serve` as it starts. Failures are
    /// ignored (the next call tries again).
    static func removeStaleStaging(of name: String, in directory: String) {
        guard let names = try? Syscalls.listDirectory(directory) else { return }
        for stale in names where stale.hasPrefix("." + name + ".") && stale.hasSuffix(".tmp") {
            try? Syscalls.unlinkIfPresent(directory + "/" + stale)
        }
    }

    /// Writes `bytes` to a new temporary file beside `path` (`.<name>.<random>.tmp`: no two
    /// writers share one), fsync'd when `durable`, and renames it over `path`; with `durable` the
    /// directory is fsync'd after. A reader sees the old file or the new one.
    static func writeReplacing(_ path: String, with bytes: [UInt8], directory: String, durable: Bool) throws(ReceiverError) {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let staging = directory + "/." + name + "." + Hex.string(Syscalls.randomBytes(8)) + ".tmp"
        do {
            let fd = try Syscalls.open(staging, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            defer { Syscalls.closeDescriptor(fd) }
            try Syscalls.withBytes(bytes) { raw throws(ReceiverError) in try Syscalls.writeAll(fd, raw, context: staging) }
            if durable { try Syscalls.fsync(fd, context: staging) }
            try Syscalls.rename(staging, path)
        } catch {
            try? Syscalls.unlinkIfPresent(staging)
            throw error
        }
        if durable { try Syscalls.fsyncDirectory(directory) }
    }
}
