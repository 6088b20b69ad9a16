/// The store's schema as forward migrations: `migrations[i]` takes a database from version `i` to
/// `i + 1`; SQLite's `user_version` records how many have run. A migration is never edited once
/// released: a change is a new migration.
enum Schema {
    static let migrations: [String] = [
        // 1: assets, change history, library identity.
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE assets (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,          -- relative to the library root, '/'-separated
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            generation INTEGER NOT NULL DEFAULT 0, -- bumped when the file changes: guards late writes
            sha256 TEXT,                        -- hex, set when the photo is analysed
            format TEXT,
            width INTEGER,
            height INTEGER,
            verdict TEXT,                       -- the verdict as compact JSON
            label TEXT,
            face_count INTEGER,
            score REAL,
            analysis_error TEXT,                -- the decode error code for an undecodable photo
            discovered_at REAL NOT NULL,
            analyzed_at REAL,
            last_attempt_at REAL,
            uploaded_at REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            server_id TEXT,
            failed INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT,                   -- 'pid:nonce' of the process analysing it
            lease_until REAL
        );
        CREATE INDEX assets_unanalyzed ON assets(analyzed_at) WHERE analyzed_at IS NULL;
        CREATE INDEX assets_upload_queue ON assets(last_attempt_at) WHERE analyzed_at IS NOT NULL AND uploaded_at IS NULL AND failed = 0;
        CREATE TABLE changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('added', 'modified', 'removed')),
            at REAL NOT NULL
        );
        """,
        // 2: upload jobs handed from `wake` to the transfer `agent`.
        """
        CREATE TABLE upload_jobs (
            id INTEGER PRIMARY KEY,
            asset_id INTEGER REFERENCES assets(id) ON DELETE SET NULL, -- NULL: the photo was removed
            asset_generation INTEGER NOT NULL,  -- the file version the job uploads
            state TEXT NOT NULL CHECK (state IN ('registered', 'pending', 'succeeded', 'failed', 'cancelled')),
            destination TEXT NOT NULL,
            request_headers TEXT NOT NULL DEFAULT '{}',  -- JSON; never secrets (tokens come from files at send time)
            resume_url TEXT,
            confirmed_offset INTEGER NOT NULL DEFAULT 0,
            response_status INTEGER,
            response_headers TEXT,              -- JSON, names lowercased
            error_domain TEXT,
            error_code TEXT,
            error_message TEXT,
            error_transient INTEGER,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            agent_owner TEXT,                   -- 'pid:nonce' of the agent performing it
            agent_until REAL
        );
        CREATE UNIQUE INDEX upload_jobs_one_live_per_asset ON upload_jobs(asset_id) WHERE state IN ('registered', 'pending');
        CREATE INDEX upload_jobs_state ON upload_jobs(state);
        """,
        // 3: what the last scan could not take into the library (a name that is not UTF-8, a
        // folder it may not read), so `status` counts and lists it instead of it vanishing.
        """
        CREATE TABLE scan_problems (
            path TEXT PRIMARY KEY,              -- relative; bytes that are not UTF-8 shown as \\xHH
            message TEXT NOT NULL,
            seen_at REAL NOT NULL
        );
        """,
        // 4: a transient failure's `Retry-After`, as the time before which `wake` does not retry it.
        """
        ALTER TABLE upload_jobs ADD COLUMN retry_not_before REAL;  -- seconds since the epoch; NULL: no wait asked
        """,
        // 5: names that are not UTF-8 are tracked, since Linux file names are bytes and a photo
        // must not be skipped for its name: `path` shows such a path with
        // \xHH escapes (injective: a backslash is escaped too; a clash with a real name is a scan
        // problem) and `raw_path` keeps its bytes.
        """
        ALTER TABLE assets ADD COLUMN raw_path TEXT;  -- lowercase hex of the path's bytes when they are not UTF-8; NULL: 'path' is them
        """,
        // 6: incremental scans: each folder the last scan went through, with its identity and
        // times, so the next scan reads only folders that changed (a rescan of a large library
        // that changed little then costs a stat per folder, not a read of every folder).
        """
        CREATE TABLE scan_directories (
            path TEXT PRIMARY KEY,              -- relative, '' for the root; bytes that are not UTF-8 as \\xHH
            device INTEGER NOT NULL,            -- st_dev and st_ino, as signed 64-bit bit patterns
            inode INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,          -- -1: changed too close to the scan to trust; read it next time
            ctime_ns INTEGER NOT NULL,          -- st_ctime: catches a modification time set back
            subdirectories TEXT NOT NULL        -- lowercase hex of each entry that is a folder, '/'-separated, in walk order
        );
        """,
        // 7: proof of receipt and uploads per destination. `assets.uploaded_at`, `server_id` and
        // `upload_proof` describe the active destination (`meta.destination`); `uploads` keeps
        // every destination's marks, so a photo uploaded to A is not taken as uploaded to B, and
        // coming back to A restores A's marks. Marks made before this migration have no proof
        // recorded ('legacy') until `photodrain verify` checks them.
        """
        ALTER TABLE assets ADD COLUMN upload_proof TEXT;      -- 'verified', 'unverified' or 'legacy' when uploaded_at is set
        ALTER TABLE upload_jobs ADD COLUMN proof TEXT;        -- a succeeded job's ReceiptProof
        ALTER TABLE upload_jobs ADD COLUMN already_stored INTEGER NOT NULL DEFAULT 0;  -- 1: the destination had the bytes, none were sent
        CREATE TABLE uploads (
            asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
            destination TEXT NOT NULL,          -- UploadDestinationKey form of the --to URL
            generation INTEGER NOT NULL,        -- the file version uploaded there
            server_id TEXT,
            uploaded_at REAL NOT NULL,
            proof TEXT NOT NULL,
            PRIMARY KEY (asset_id, destination)
        );
        UPDATE assets SET upload_proof = 'legacy' WHERE uploaded_at IS NOT NULL;
        -- Hidden entries (names starting with a dot) each folder held when last read: left out
        -- unless the store includes hidden files, and counted by status either way.
        ALTER TABLE scan_directories ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
        -- A Live Photo's video, an edit list (.AAE) or a sidecar (.xmp) beside its photo: the
        -- photo's path. Such a file is uploaded after its photo, with its verdict.
        ALTER TABLE assets ADD COLUMN companion_of TEXT;
        """,
        // 8: the capture date is banked by analysis, so an upload sends it without opening the
        // photo again. Rows analysed before this migration keep NULL ("not read"): their date is
        // read once, by the upload that first needs it, and banked. A companion file (a video or
        // a sidecar) has no date PhotoDrain reads: '' at once.
        """
        ALTER TABLE assets ADD COLUMN capture_date TEXT;  -- EXIF DateTimeOriginal as written; '': the file has none; NULL: not read yet
        UPDATE assets SET capture_date = '' WHERE companion_of IS NOT NULL;
        """,
        // 9: no secret in the store. Destinations were kept as the --to URL, user info and query
        // included (`http://bob:password@host/…`, `?access_token=…`); now they are kept without
        // (`AssetStore.destinationKey`), and `--to` refuses them. The rewrite of the rows already
        // holding one is Swift (`DestinationScrub`), run after this in the same transaction.
        """
        -- the rewrite alone
        """,
        // 10: a file's identity includes its status-change time, inode and device (`FileStamp`),
        // so a rewrite that keeps the size and sets the modification time back is found. A row
        // from before has none recorded (NULL): the next scan that reads its folder records it
        // without hashing the file (nothing to compare it with; a rewrite made before the
        // upgrade that kept size and time stays unseen, as it was), so the upgrade costs no
        // rehash of the library.
        """
        ALTER TABLE assets ADD COLUMN ctime_ns INTEGER;   -- st_ctime in nanoseconds when the scan last recorded the file
        ALTER TABLE assets ADD COLUMN inode INTEGER;      -- st_ino and st_dev, as signed 64-bit bit patterns
        ALTER TABLE assets ADD COLUMN device INTEGER;
        """,
        // 11: photos `free-space` took off the device (issue 33), one row per file: what it was
        // (path, digest, size, modification time), the proof it left on (destination, server id,
        // proof), when, and where it went (a trash, or nowhere after --delete). A row is written
        // as an intent ('trashing', 'deleting') before the file moves, and made 'trashed' or
        // 'deleted' after: a run killed in between is finished or undone by the next one from
        // what it finds on disk (`AssetStore+Removals.swift`). 'purged': the trash was emptied;
        // 'restored': put back by `photodrain restore`.
        """
        CREATE TABLE removals (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,                 -- relative to the library root, as the assets row had it
            raw_path TEXT,                      -- lowercase hex of the path's bytes when they are not UTF-8
            photo TEXT NOT NULL,                -- the photo whose group this file left with (itself, or a companion's photo)
            sha256 TEXT NOT NULL,               -- hex, hashed at removal
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            destination TEXT NOT NULL,          -- destinationKey form
            server_id TEXT,
            proof TEXT NOT NULL,                -- 'verified' or 'verified-deep'
            state TEXT NOT NULL,                -- trashing, trashed, deleting, deleted, purged, restored
            trash_path TEXT,                    -- absolute path of the file in the trash
            info_path TEXT,                     -- its freedesktop.org .trashinfo
            started_at REAL NOT NULL,
            removed_at REAL,
            restored_at REAL
        );
        CREATE INDEX removals_path ON removals(path);
        CREATE INDEX removals_state ON removals(state);
        """,
        // 12: a finished job's server id as a value of its own. It was read back from the kept
        // response headers by name (`x-server-resource-id`), which the store should not know;
        // jobs finished before keep theirs, taken from those headers once, here.
        """
        ALTER TABLE upload_jobs ADD COLUMN server_id TEXT;
        UPDATE upload_jobs SET server_id = json_extract(response_headers, '$."x-server-resource-id"')
          WHERE state = 'succeeded' AND json_valid(response_headers);
        """,
        // 13: faces and people (issue 36). One row per confirmed face of a banked verdict (its
        // place among the verdict's confirmed faces, box and keypoints in the verdict's pixels,
        // the descriptor network's embedding when one is configured), written in the verdict's
        // transaction, and gone with it: the trigger deletes a photo's faces when the scan resets
        // its verdict, the foreign key when its row goes. `people` holds clustering's state
        // (`AssetStore+Clustering.swift`): a row per cluster, its sum of embeddings and count so
        // a new face is compared with centroids only, and the person it belongs to (itself, or
        // the one `people merge` put it in); the person's own row holds its name and
        // representative face. Ids are never reused (AUTOINCREMENT). Verdicts banked before keep
        // their confirmed faces as rows, taken from their JSON here (no embedding: nothing to
        // cluster until they are analysed again).
        """
        CREATE TABLE people (
            id INTEGER PRIMARY KEY AUTOINCREMENT, -- the cluster's id; a person's id is its first cluster's
            person INTEGER NOT NULL,            -- its own id, or the person a merge put it in
            name TEXT,                          -- on the person's own row: `people name`
            centroid_sum BLOB NOT NULL,         -- 128 float32 little-endian: the sum of its members' embeddings
            member_count INTEGER NOT NULL,      -- 0: emptied (its photos changed), the sum is then its last centroid
            first_face TEXT NOT NULL,           -- 'path#index' of the face that started it
            representative_face INTEGER REFERENCES faces(id) ON DELETE SET NULL
        );
        CREATE INDEX people_person ON people(person);
        CREATE TABLE faces (
            id INTEGER PRIMARY KEY,
            asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
            face_index INTEGER NOT NULL,        -- its place among the verdict's confirmed faces, from 0
            x INTEGER NOT NULL,                 -- the box in the verdict's pixels (its analysisSize)
            y INTEGER NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            keypoints TEXT,                     -- JSON array of x, y pairs; NULL: the detector gives none
            embedding BLOB,                     -- 128 float32 little-endian; NULL: no embedder configured
            cluster_id INTEGER REFERENCES people(id) ON DELETE SET NULL,
            decision TEXT CHECK (decision IN ('split', 'forgotten')),  -- a user's, kept by later clustering
            UNIQUE (asset_id, face_index)
        );
        CREATE INDEX faces_cluster ON faces(cluster_id);
        CREATE INDEX faces_pending ON faces(asset_id) WHERE embedding IS NOT NULL AND cluster_id IS NULL AND decision IS NULL;
        CREATE TRIGGER faces_go_with_their_verdict AFTER UPDATE OF analyzed_at ON assets
            WHEN NEW.analyzed_at IS NULL AND OLD.analyzed_at IS NOT NULL
        BEGIN
            DELETE FROM faces WHERE asset_id = NEW.id;
        END;
        INSERT INTO faces(asset_id, face_index, x, y, width, height, keypoints)
            SELECT a.id, row_number() OVER (PARTITION BY a.id ORDER BY CAST(j.key AS INTEGER)) - 1,
                   json_extract(j.value, '$.region.x'), json_extract(j.value, '$.region.y'),
                   json_extract(j.value, '$.region.width'), json_extract(j.value, '$.region.height'),
                   json_extract(j.value, '$.region.keypoints')
            FROM assets a, json_each(CASE WHEN json_valid(a.verdict) THEN a.verdict ELSE '{}' END, '$.faces') j
            WHERE a.analyzed_at IS NOT NULL AND json_extract(j.value, '$.confirmed') = 1
              AND json_type(j.value, '$.region.x') = 'integer' AND json_type(j.value, '$.region.y') = 'integer'
              AND json_type(j.value, '$.region.width') = 'integer' AND json_type(j.value, '$.region.height') = 'integer';
        """,
    ]

    /// What a row loses when its file changes on disk, as the SET list of an `UPDATE assets`: its
    /// version moves on, and its digest, everything analysis banked, everything its upload recorded
    /// and any lease go. A migration that adds a column analysis or an upload fills adds it here.
    static let resetForNewVersion = """
        generation = generation + 1, sha256 = NULL, format = NULL, width = NULL, height = NULL, capture_date = NULL, \
        verdict = NULL, label = NULL, face_count = NULL, score = NULL, analysis_error = NULL, analyzed_at = NULL, \
        last_attempt_at = NULL, uploaded_at = NULL, attempts = 0, last_error = NULL, server_id = NULL, \
        upload_proof = NULL, failed = 0, lease_owner = NULL, lease_until = NULL
        """

    /// What a migration does that SQL cannot, run after its SQL in the same transaction, by the
    /// version the migration makes. True when it changed rows that held a secret: the store is
    /// then vacuumed and checkpointed once the migration commits, so no copy of the secret stays
    /// in the file's free pages or in the WAL.
    static func rewrite(toVersion version: Int, _ db: Database) throws(StoreError) -> Bool {
        switch version {
        case 9: try DestinationScrub.run(db)
        default: false
        }
    }

    static var currentVersion: Int { migrations.count }

    /// Brings `db` up to the current version, one migration per transaction.
    /// The store's schema version (`PRAGMA user_version`).
    static func version(of db: Database) throws(StoreError) -> Int {
        try db.query("PRAGMA user_version").first?.first?.int ?? 0
    }

    static func migrate(_ db: Database) throws(StoreError) {
        while true {
            let version = try db.query("PRAGMA user_version").first?.first?.int ?? 0
            if version > currentVersion {
                throw StoreError(.newerSchema,
                                 "\(db.path) has schema version \(version); this PhotoDrain knows up to \(currentVersion). Upgrade PhotoDrain.")
            }
            if version == currentVersion { return }
            let scrubbed = try db.transaction { () throws(StoreError) -> Bool in
                // Re-read inside the write lock: another process may have migrated meanwhile.
                let locked = try db.query("PRAGMA user_version").first?.first?.int ?? 0
                guard locked == version else { return false }
                try db.execute(migrations[version])
                let scrubbed = try rewrite(toVersion: version + 1, db)
                try db.execute("PRAGMA user_version = \(version + 1)")
                return scrubbed
            }
            if scrubbed {
                // The old rows' bytes are in freed pages and the WAL until rewritten. Another
                // process holding the store open can keep VACUUM from running: its pages are then
                // overwritten as SQLite reuses them (secure_delete is on while scrubbing).
                try? db.execute("VACUUM")
                _ = try? db.query("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }
}
