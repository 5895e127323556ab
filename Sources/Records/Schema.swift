import GRDB

/// The records schema, as GRDB migrations. A migration, once shipped, never changes: a new column or table is a new
/// migration appended here. The SQL stays close to what PostgreSQL accepts, so its store can share the layout.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-records") { db in
            try db.execute(sql: v1)
        }
        migrator.registerMigration("v2-outbox") { db in
            try db.execute(sql: v2)
        }
        migrator.registerMigration("v3-traceability") { db in
            try db.execute(sql: v3)
        }
        migrator.registerMigration("v4-station-heartbeat") { db in
            try db.execute(sql: stationHeartbeat)
        }
        migrator.registerMigration("v5-operator-answers") { db in
            try db.execute(sql: v5)
        }
        return migrator
    }

    private static let identityKinds = "('serial', 'bt-address', 'bt-name')"

    static let v1 = """
        CREATE TABLE units (
            hardware_id TEXT NOT NULL PRIMARY KEY CHECK (hardware_id <> ''),
            first_seen TEXT NOT NULL
        );
        CREATE TABLE leases (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            station TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN \(identityKinds)),
            created_at TEXT NOT NULL
        );
        CREATE TABLE identities (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL CHECK (kind IN \(identityKinds)),
            value TEXT NOT NULL CHECK (value <> ''),
            state TEXT NOT NULL CHECK (state IN ('leased', 'reserved', 'written', 'committed', 'voided')),
            hardware_id TEXT REFERENCES units(hardware_id),
            station TEXT NOT NULL,
            lease_id INTEGER REFERENCES leases(id),
            updated_at TEXT NOT NULL,
            UNIQUE (kind, value),
            CHECK (state = 'voided' OR (state = 'leased') = (hardware_id IS NULL))
        );
        CREATE UNIQUE INDEX identities_one_per_unit ON identities(hardware_id, kind)
            WHERE state <> 'voided' AND hardware_id IS NOT NULL;
        CREATE INDEX identities_by_lease ON identities(lease_id, state);
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            hardware_id TEXT NOT NULL REFERENCES units(hardware_id),
            station TEXT NOT NULL,
            slot TEXT NOT NULL,
            operator TEXT NOT NULL,
            recipe_hash TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            image_hashes TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            outcome TEXT CHECK (outcome IN ('pass', 'fail', 'error', 'aborted')),
            rework_count INTEGER NOT NULL CHECK (rework_count >= 0),
            CHECK ((outcome IS NULL) = (ended_at IS NULL))
        );
        CREATE INDEX runs_by_unit ON runs(hardware_id);
        CREATE INDEX runs_open_by_station ON runs(station) WHERE outcome IS NULL;
        CREATE TABLE steps (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'error', 'skipped', 'aborted')),
            retries INTEGER NOT NULL CHECK (retries >= 0),
            message TEXT NOT NULL
        );
        CREATE INDEX steps_by_run ON steps(run_id);
        CREATE TABLE measurements (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            step_id INTEGER NOT NULL REFERENCES steps(id),
            name TEXT NOT NULL,
            value REAL NOT NULL,
            unit TEXT NOT NULL,
            low REAL,
            high REAL,
            marginal_low REAL,
            marginal_high REAL,
            outcome TEXT NOT NULL CHECK (outcome IN ('pass', 'marginal', 'fail'))
        );
        CREATE INDEX measurements_by_step ON measurements(step_id);
        """

    /// A station's outbox (`OutboxRecordStore`): what of each record the line's server holds. Unused in a file that
    /// is the records themselves.
    static let v2 = """
        ALTER TABLE runs ADD COLUMN uploaded_at TEXT;
        ALTER TABLE identities ADD COLUMN uploaded_state TEXT;
        ALTER TABLE leases ADD COLUMN server_lease_id INTEGER;
        CREATE INDEX runs_to_upload ON runs(id) WHERE outcome IS NOT NULL AND uploaded_at IS NULL;
        """

    /// Traceability, attachments and releases from quarantine (docs/records.md): a run's work order, lot, fixture and
    /// metadata (JSON, sorted keys), the files its steps attached (whole, with size and SHA-256), and the audit of
    /// every release of a quarantined unit.
    static let v3 = """
        ALTER TABLE runs ADD COLUMN work_order TEXT;
        ALTER TABLE runs ADD COLUMN lot TEXT;
        ALTER TABLE runs ADD COLUMN fixture TEXT;
        ALTER TABLE runs ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
        CREATE INDEX runs_by_work_order ON runs(work_order) WHERE work_order IS NOT NULL;
        CREATE INDEX runs_by_lot ON runs(lot) WHERE lot IS NOT NULL;
        CREATE TABLE attachments (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            step TEXT,
            name TEXT NOT NULL CHECK (name <> ''),
            media_type TEXT NOT NULL,
            size INTEGER NOT NULL CHECK (size >= 0),
            sha256 TEXT NOT NULL,
            content BLOB NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (run_id, name)
        );
        CREATE TABLE releases (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            hardware_id TEXT NOT NULL REFERENCES units(hardware_id),
            released_at TEXT NOT NULL,
            released_by TEXT NOT NULL,
            reason TEXT NOT NULL,
            failures INTEGER NOT NULL CHECK (failures >= 0)
        );
        CREATE INDEX releases_by_unit ON releases(hardware_id);
        """

    /// Operator answers (docs/records.md): the codes scanned to bind a unit and the answers to a recipe's prompts,
    /// with who answered, from where and when. An index finds the units a code is bound to.
    static let v5 = """
        CREATE TABLE answers (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            step TEXT NOT NULL CHECK (step <> ''),
            kind TEXT NOT NULL CHECK (kind IN ('scan', 'pass-fail', 'value')),
            label TEXT NOT NULL,
            value TEXT NOT NULL,
            answered_by TEXT NOT NULL,
            source TEXT NOT NULL,
            answered_at TEXT NOT NULL
        );
        CREATE INDEX answers_by_run ON answers(run_id);
        CREATE INDEX answers_by_code ON answers(value) WHERE kind = 'scan';
        """
}
