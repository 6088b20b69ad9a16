import Synchronization

/// Each account's own store: objects, sidecars, upload records, the dedupe and digest indexes,
/// quarantine and `--layout path`'s `files/`, all under one folder per account.
///
///     DIR/                      the account `default` (`--token-file`'s, and a receiver
///                               without tokens): the layout receivers always had, so an
///                               existing receiver keeps its objects where they are
///     DIR/accounts/<name>/      every other account: objects/, uploads/, tmp/, files/, quarantine/
///
/// A request only ever reaches its own account's store (an admin's listing and object reads
/// excepted: `RequestHandler`), so an id or a digest of another account is simply not there and
/// answers as one that never existed. A store is opened at start when its folder exists
/// (recovering its partial uploads) and else on its account's first request; the expiry sweep
/// and the scrub go through every open store.
final class AccountSpaces: Sendable {
    /// One account's store and the upload endpoint working on it.
    struct Space: Sendable {
        let account: String
        let store: UploadStore
        let uploads: UploadEndpoint
    }

    private let configuration: ReceiverConfiguration
    private let registry: TransferRegistry
    private let root: String
    private let spaces: Mutex<[String: Space]>

    /// Opens the default store (`store`, already open) and every account folder under
    /// `accounts/`. Throws what opening a store throws.
    init(defaultStore store: UploadStore, configuration: ReceiverConfiguration, registry: TransferRegistry) throws(ReceiverError) {
        self.configuration = configuration
        self.registry = registry
        root = store.root
        var opened: [String: Space] = [:]
        opened[AccountBook.defaultAccount] = Space(account: AccountBook.defaultAccount, store: store,
                                                   uploads: UploadEndpoint(configuration: configuration, store: store, registry: registry))
        if Syscalls.exists(root + "/accounts") {
            for name in try Syscalls.listDirectory(root + "/accounts").sorted() where (try? AccountBook.checkName(name, what: "account")) != nil {
                opened[name] = try Self.open(account: name, root: root, configuration: configuration, registry: registry)
            }
        }
        spaces = Mutex(opened)
    }

    /// The account's space, opened (and its folder made) on first use. Throws when the account
    /// name cannot be a folder name or the store cannot be opened.
    func space(for account: String) throws(ReceiverError) -> Space {
        if let space = spaces.withLock({ $0[account] }) { return space }
        try AccountBook.checkName(account, what: "account")
        try Syscalls.makeDirectory(root + "/accounts")
        let space = try Self.open(account: account, root: root, configuration: configuration, registry: registry)
        return spaces.withLock { spaces in
            // Another request may have opened it meanwhile: keep the first.
            if let existing = spaces[account] { return existing }
            spaces[account] = space
            return space
        }
    }

    /// Every open space, `default` first, then by name.
    var all: [Space] {
        spaces.withLock { Array($0.values) }.sorted { a, b in
            a.account == AccountBook.defaultAccount || (b.account != AccountBook.defaultAccount && a.account < b.account)
        }
    }

    private static func open(account: String, root: String, configuration: ReceiverConfiguration,
                             registry: TransferRegistry) throws(ReceiverError) -> Space {
        let store = try UploadStore(directory: root + "/accounts/" + account, partialTTL: configuration.partialTTL,
                                    bootID: UploadStore.bootID(at: configuration.bootIDPath), syncMode: configuration.syncMode,
                                    layout: configuration.layout, log: configuration.log)
        return Space(account: account, store: store, uploads: UploadEndpoint(configuration: configuration, store: store, registry: registry))
    }
}
