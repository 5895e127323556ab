import GRDB

/// The records schema, written once: each store renders it in its own SQL dialect (`Dialect`), so the SQLite file and
/// the line's PostgreSQL database keep one layout, and a new column lands in both. A migration, once shipped, never
/// changes: a new column or table is a new migration appended to `migrations`.
enum Schema {
    /// What differs between the stores' SQL: the column types. Everything else (names, constraints, indexes) is one text.
    enum Dialect {
        case sqlite, postgres

        /// A key the database assigns.
        var id: String { self == .sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY" }
        var integer: String { self == .sqlite ? "INTEGER" : "BIGINT" }
        var real: String { self == .sqlite ? "REAL" : "DOUBLE PRECISION" }
        /// A point in time: GRDB's text (milliseconds, UTC) in SQLite, the server's timestamp type in PostgreSQL.
        var time: String { self == .sqlite ? "TEXT" : "TIMESTAMPTZ" }
        var bytes: String { self == .sqlite ? "BLOB" : "BYTEA" }
    }

    /// The schema versions, in order, as `dialect` writes them. The second differs by store: a station's SQLite file
    /// carries its outbox (`v2-outbox`), a line's server where each imported run came from (`v2-origin`).
    static func migrations(_ dialect: Dialect) -> [(version: String, sql: String)] {
        [
            ("v1-records", v1(dialect)),
            dialect == .sqlite ? ("v2-outbox", outbox) : ("v2-origin", origin),
            ("v3-traceability", v3(dialect)),
            ("v4-station-heartbeat", stationHeartbeat(dialect)),
            ("v5-operator-answers", v5(dialect)),
        ]
    }

    /// The SQLite store's migrations, for GRDB.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (version, sql) in migrations(.sqlite) {
            migrator.registerMigration(version) { db in
                try db.execute(sql: sql)
            }
        }
        return migrator
    }

    private static let identityKinds = "('serial', 'bt-address', 'bt-name')"

    static func v1(_ t: Dialect) -> String {
        """
        CREATE TABLE units (
            hardware_id TEXT NOT NULL PRIMARY KEY CHECK (hardware_id <> ''),
            first_seen \(t.time) NOT NULL
        );
        CREATE TABLE leases (
            id \(t.id),
            station TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN \(identityKinds)),
            created_at \(t.time) NOT NULL
        );
        CREATE TABLE identities (
            id \(t.id),
            kind TEXT NOT NULL CHECK (kind IN \(identityKinds)),
            value TEXT NOT NULL CHECK (value <> ''),
            state TEXT NOT NULL CHECK (state IN ('leased', 'reserved', 'written', 'committed', 'voided')),
            hardware_id TEXT REFERENCES units(hardware_id),
            station TEXT NOT NULL,
            lease_id \(t.integer) REFERENCES leases(id),
            updated_at \(t.time) NOT NULL,
            UNIQUE (kind, value),
            CHECK (state = 'voided' OR (state = 'leased') = (hardware_id IS NULL))
        );
        CREATE UNIQUE INDEX identities_one_per_unit ON identities(hardware_id, kind)
            WHERE state <> 'voided' AND hardware_id IS NOT NULL;
        CREATE INDEX identities_by_lease ON identities(lease_id, state);
        CREATE TABLE runs (
            id \(t.id),
            hardware_id TEXT NOT NULL REFERENCES units(hardware_id),
            station TEXT NOT NULL,
            slot TEXT NOT NULL,
            operator TEXT NOT NULL,
            recipe_hash TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            image_hashes TEXT NOT NULL,
            started_at \(t.time) NOT NULL,
            ended_at \(t.time),
            outcome TEXT CHECK (outcome IN ('pass', 'fail', 'error', 'aborted')),
            rework_count \(t.integer) NOT NULL CHECK (rework_count >= 0),
            CHECK ((outcome IS NULL) = (ended_at IS NULL))
        );
        CREATE INDEX runs_by_unit ON runs(hardware_id);
        CREATE INDEX runs_open_by_station ON runs(station) WHERE outcome IS NULL;
        CREATE TABLE steps (
            id \(t.id),
            run_id \(t.integer) NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,
            started_at \(t.time) NOT NULL,
            ended_at \(t.time) NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'error', 'skipped', 'aborted')),
            retries \(t.integer) NOT NULL CHECK (retries >= 0),
            message TEXT NOT NULL
        );
        CREATE INDEX steps_by_run ON steps(run_id);
        CREATE TABLE measurements (
            id \(t.id),
            step_id \(t.integer) NOT NULL REFERENCES steps(id),
            name TEXT NOT NULL,
            value \(t.real) NOT NULL,
            unit TEXT NOT NULL,
            low \(t.real),
            high \(t.real),
            marginal_low \(t.real),
            marginal_high \(t.real),
            outcome TEXT NOT NULL CHECK (outcome IN ('pass', 'marginal', 'fail'))
        );
        CREATE INDEX measurements_by_step ON measurements(step_id);
        """
    }

    /// SQLite only: a station's outbox (`OutboxRecordStore`), what of each record the line's server holds. Unused in
    /// a file that is the records themselves.
    static let outbox = """
        ALTER TABLE runs ADD COLUMN uploaded_at TEXT;
        ALTER TABLE identities ADD COLUMN uploaded_state TEXT;
        ALTER TABLE leases ADD COLUMN server_lease_id INTEGER;
        CREATE INDEX runs_to_upload ON runs(id) WHERE outcome IS NOT NULL AND uploaded_at IS NULL;
        """

    /// PostgreSQL only: where a run imported from a station's outbox came from (`station/started-at/hardware-id`): a
    /// run is imported once, however often the upload is retried.
    static let origin = """
        ALTER TABLE runs ADD COLUMN origin TEXT;
        CREATE UNIQUE INDEX runs_by_origin ON runs(origin) WHERE origin IS NOT NULL;
        """

    /// Traceability, attachments and releases from quarantine (docs/records.md): a run's work order, lot, fixture and
    /// metadata (JSON, sorted keys), the files its steps attached (whole, with size and SHA-256), and the audit of
    /// every release of a quarantined unit.
    static func v3(_ t: Dialect) -> String {
        """
        ALTER TABLE runs ADD COLUMN work_order TEXT;
        ALTER TABLE runs ADD COLUMN lot TEXT;
        ALTER TABLE runs ADD COLUMN fixture TEXT;
        ALTER TABLE runs ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
        CREATE INDEX runs_by_work_order ON runs(work_order) WHERE work_order IS NOT NULL;
        CREATE INDEX runs_by_lot ON runs(lot) WHERE lot IS NOT NULL;
        CREATE TABLE attachments (
            id \(t.id),
            run_id \(t.integer) NOT NULL REFERENCES runs(id),
            step TEXT,
            name TEXT NOT NULL CHECK (name <> ''),
            media_type TEXT NOT NULL,
            size \(t.integer) NOT NULL CHECK (size >= 0),
            sha256 TEXT NOT NULL,
            content \(t.bytes) NOT NULL,
            created_at \(t.time) NOT NULL,
            UNIQUE (run_id, name)
        );
        CREATE TABLE releases (
            id \(t.id),
            hardware_id TEXT NOT NULL REFERENCES units(hardware_id),
            released_at \(t.time) NOT NULL,
            released_by TEXT NOT NULL,
            reason TEXT NOT NULL,
            failures \(t.integer) NOT NULL CHECK (failures >= 0)
        );
        CREATE INDEX releases_by_unit ON releases(hardware_id);
        """
    }

    /// The line's live status (LineStatus.swift): every running station of a line updates its row every few seconds
    /// (PostgreSQL, where times are the server's own clock: stations' clocks may differ, the server's is the one the
    /// dashboard compares with; the SQLite schema keeps the same table so both stay one layout). `stopped_at` is set
    /// when a station stops cleanly.
    static func stationHeartbeat(_ t: Dialect) -> String {
        """
        CREATE TABLE stations (
            station TEXT NOT NULL PRIMARY KEY CHECK (station <> ''),
            started_at \(t.time) NOT NULL,
            last_seen \(t.time) NOT NULL,
            stopped_at \(t.time),
            slots \(t.integer) NOT NULL DEFAULT 0,
            recipe_hash TEXT NOT NULL DEFAULT '',
            tool_version TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX runs_by_end ON runs(ended_at);
        """
    }

    /// Operator answers (docs/records.md): the codes scanned to bind a unit and the answers to a recipe's prompts,
    /// with who answered, from where and when. An index finds the units a code is bound to.
    static func v5(_ t: Dialect) -> String {
        """
        CREATE TABLE answers (
            id \(t.id),
            run_id \(t.integer) NOT NULL REFERENCES runs(id),
            step TEXT NOT NULL CHECK (step <> ''),
            kind TEXT NOT NULL CHECK (kind IN ('scan', 'pass-fail', 'value')),
            label TEXT NOT NULL,
            value TEXT NOT NULL,
            answered_by TEXT NOT NULL,
            source TEXT NOT NULL,
            answered_at \(t.time) NOT NULL
        );
        CREATE INDEX answers_by_run ON answers(run_id);
        CREATE INDEX answers_by_code ON answers(value) WHERE kind = 'scan';
        """
    }
}
