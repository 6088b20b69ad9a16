import Foundation
import Receiver
import SystemSupport

/// `photodrain serve accounts ...` and `serve tokens ...`: the receiver's accounts and device
/// tokens, kept in `accounts.json` in its `--dir` (`Receiver.AccountBook`). A running `serve`
/// picks every change up within a second or two.
extension ServeCommand {
    /// Runs the accounts or tokens action the positionals name.
    /// `shownRoot`: where the objects are, as printed (the directory, or `s3://BUCKET/PREFIX`).
    static func runAccounts(_ arguments: ParsedArguments, directory: String, shownRoot: String? = nil) throws -> ExitCode {
        let words = arguments.positionals
        if arguments.string("scope") != nil && !(words.count >= 2 && words[0] == "tokens" && words[1] == "add") {
            throw UsageError("--scope goes with `serve tokens add ACCOUNT DEVICE`", command: spec.name)
        }
        if arguments.string("quota") != nil && !(words.count >= 2 && words[0] == "accounts" && words[1] == "add") {
            throw UsageError("--quota goes with `serve accounts add NAME`", command: spec.name)
        }
        let quota = try arguments.bytes("quota").map(Int64.init)
        do {
            switch (words.first, words.dropFirst().first, words.count) {
            case ("accounts", "add", 3):
                let name = words[2]
                try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
                    try book.addAccount(name, now: Date())
                    if let quota { try book.setQuota(name, bytes: quota, now: Date()) }
                }
                Console.shared.out("added account \(name): its objects go to \(space(of: name, in: shownRoot ?? directory))"
                                   + (quota.map { ", at most \($0) bytes" } ?? ""))
            case ("accounts", "quota", 4):
                let (name, text) = (words[2], words[3])
                let bytes: Int64?
                if text.lowercased() == "off" {
                    bytes = nil
                } else {
                    guard let parsed = parseByteCount(text) else {
                        throw UsageError("accounts quota wants a size like 50G, or off, not '\(TerminalText.escaped(text))'", command: spec.name)
                    }
                    bytes = Int64(parsed)
                }
                try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
                    try book.setQuota(name, bytes: bytes, now: Date())
                }
                Console.shared.out("account \(name): " + (bytes.map { "at most \($0) bytes of objects" } ?? "no quota")
                                   + "; a running serve applies it within a second or two")
            case ("accounts", "list", 2):
                let book = try AccountBook.load(directory: directory) ?? AccountBook()
                Console.shared.out(pad(["account", "tokens", "quota", "space"]).joined())
                for name in book.accountNames {
                    let count = book.tokens.filter { $0.account == name }.count
                    let quota = book.quota(of: name).map(String.init) ?? "none"
                    Console.shared.out(pad([name, String(count), quota, space(of: name, in: shownRoot ?? directory)]).joined())
                }
            case ("tokens", "add", 4):
                let scopeText = arguments.string("scope") ?? TokenScope.upload.rawValue
                guard let scope = TokenScope(rawValue: scopeText) else {
                    throw UsageError("--scope wants upload, read or admin, not '\(TerminalText.escaped(scopeText))'", command: spec.name)
                }
                let (account, device) = (words[2], words[3])
                let (token, record) = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
                    try book.addToken(account: account, device: device, scope: scope, now: Date())
                }
                // The token alone on standard output, so `TOKEN=$(photodrain serve tokens add ...)` works.
                Console.shared.out(token)
                Console.shared.err("token \(record.id) for device \(device) of account \(account), scope \(scope.rawValue). "
                                   + "It is shown this once and kept only as its SHA-256: put it in the device's --token-file. "
                                   + "A running serve accepts it within a second or two.")
            case ("tokens", "list", 2):
                let book = try AccountBook.load(directory: directory) ?? AccountBook()
                let used = AccountBook.lastUsed(directory: directory)
                Console.shared.out(pad(["id", "account", "device", "scope", "created", "last used"]).joined())
                for token in book.tokens {
                    Console.shared.out(pad([token.id, token.account, token.device, token.scope.rawValue,
                                            stamp(token.created), used[token.id].map(stamp) ?? "never"]).joined())
                }
            case ("tokens", "revoke", 3):
                let id = words[2]
                let record = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
                    try book.revokeToken(id: id)
                }
                Console.shared.out("revoked token \(record.id) of device \(record.device) (account \(record.account)); "
                                   + "a running serve refuses it within a second or two")
            default:
                throw UsageError("serve takes no arguments, or one of: accounts add NAME [--quota BYTES], accounts quota NAME BYTES|off, accounts list, "
                                 + "tokens add ACCOUNT DEVICE [--scope upload|read|admin], tokens list, tokens revoke ID",
                                 command: spec.name)
            }
        } catch let error as ReceiverError {
            if error.code == .invalidName { throw UsageError(error.message, command: spec.name) }
            Console.shared.err("photodrain serve: \(error.message)")
            return .failure
        }
        return .success
    }

    /// Where an account's objects are: the receiver's directory for `default`, else `accounts/<name>/`.
    private static func space(of account: String, in directory: String) -> String {
        account == AccountBook.defaultAccount ? directory : directory + "/accounts/" + account
    }

    private static func stamp(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// Columns padded to fixed widths (the last one as it is).
    private static func pad(_ cells: [String]) -> [String] {
        let widths = [10, 14, 16, 8, 22]
        return cells.enumerated().map { index, cell in
            guard index < cells.count - 1 else { return cell }
            let width = index < widths.count ? widths[index] : 12
            return cell.count >= width ? cell + " " : cell + String(repeating: " ", count: width - cell.count)
        }
    }
}
