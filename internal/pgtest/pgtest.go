// Package pgtest starts a real PostgreSQL server (Debian's postgresql
// package) for tests: a fresh data directory in a temporary folder, TCP on a
// free loopback port only, trust authentication for the superuser postgres,
// and the settings the JDBC and CDC connectors need (max_prepared_transactions
// > 0 for two-phase commit, wal_level = logical for logical decoding).
//
// A test package shares one server: its TestMain calls Main, and each test
// takes a database of its own with NewDB. A test that needs a server of its
// own (other settings, or one it stops) calls Start. When the process runs
// as root, initdb and pg_ctl run as the postgres user, since PostgreSQL
// refuses to run as root.
//
// Nothing is installed here: a missing server fails the test with a message
// naming the package to install (.ci/run installs it).
package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// DefaultSettings are the server settings every server gets unless
// Options.Settings overrides them.
var DefaultSettings = map[string]string{
	"max_prepared_transactions": "64",
	"wal_level":                 "logical",
	"max_wal_senders":           "10",
	"max_replication_slots":     "10",
	"max_connections":           "100",
	"shared_buffers":            "32MB",
	// A test server is thrown away: durability is not what is tested here,
	// and fsync on a shared CI disk makes every commit slow.
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
}

// Options configure a server started by Start.
type Options struct {
	// Settings override or add postgresql.conf settings, e.g.
	// {"max_prepared_transactions": "0"}.
	Settings map[string]string
}

// Server is a running PostgreSQL server.
type Server struct {
	Host string // 127.0.0.1
	Port int
	User string // the superuser, postgres; no password (trust)

	bin     string // directory of initdb, pg_ctl, psql
	dir     string // temporary folder holding data/ and the log
	asUser  string // the OS user the server runs as when we are root, else ""
	mu      sync.Mutex
	stopped bool
	dbSeq   int
}

// InstallHint is the message of a test failing because PostgreSQL is missing.
const InstallHint = "PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) not found under /usr/lib/postgresql/*/bin or via pg_config: install the Debian package postgresql (apt-get install -y postgresql; .ci/run does)"

// binDir finds the directory of the newest installed PostgreSQL's binaries.
func binDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		sort.Slice(matches, func(i, j int) bool {
			return pgVersion(matches[i]) > pgVersion(matches[j])
		})
		return filepath.Dir(matches[0]), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%s", InstallHint)
}

var versionRE = regexp.MustCompile(`/postgresql/(\d+)/`)

func pgVersion(path string) int {
	m := versionRE.FindStringSubmatch(path)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// Start starts a server of the test's own, stopped in t.Cleanup.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := start(opts)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

func start(opts Options) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", User: "postgres", bin: bin}
	if os.Geteuid() == 0 {
		s.asUser = "postgres"
		if _, err := user.Lookup(s.asUser); err != nil {
			return nil, fmt.Errorf("running as root and there is no OS user postgres to run the server as (%v): %s", err, InstallHint)
		}
	}
	s.dir, err = os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	if err := s.chownToServerUser(s.dir); err != nil {
		s.removeDir()
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		s.removeDir()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// The port is chosen free just before the server binds it; another
	// process may take it in between, so a failed start is retried on a new
	// port.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			s.removeDir()
			return nil, err
		}
		s.Port = port
		if err := s.writeConf(data, opts); err != nil {
			s.removeDir()
			return nil, err
		}
		out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "120", "start")
		if err == nil {
			return s, nil
		}
		lastErr = fmt.Errorf("pg_ctl start on port %d: %v\n%s\nserver log:\n%s", port, err, out, s.Log())
	}
	s.removeDir()
	return nil, lastErr
}

func (s *Server) writeConf(data string, opts Options) error {
	settings := map[string]string{}
	for k, v := range DefaultSettings {
		settings[k] = v
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	settings["listen_addresses"] = "'127.0.0.1'"
	settings["port"] = strconv.Itoa(s.Port)
	// Unix sockets in our own folder, not /var/run/postgresql, which may
	// not exist and belongs to the system's cluster.
	settings["unix_socket_directories"] = "'" + s.dir + "'"
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, settings[k])
	}
	// postgresql.auto.conf is read after postgresql.conf, so its settings
	// win; rewriting it on each attempt replaces the port.
	path := filepath.Join(data, "postgresql.auto.conf")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return err
	}
	return s.chownToServerUser(path)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) chownToServerUser(path string) error {
	if s.asUser == "" {
		return nil
	}
	u, err := user.Lookup(s.asUser)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(path, uid, gid)
}

// command builds the command running one of the server's binaries, as the
// server's OS user when we are root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.asUser == "" {
		return exec.Command(path, args...)
	}
	return exec.Command("runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := s.command(name, args...)
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// Stop stops the server at once (immediate shutdown) and removes its data.
// It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	_, _ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "-t", "60", "stop")
	s.removeDir()
}

func (s *Server) removeDir() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// Log returns the server's log so far (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

// DSN is a libpq/pgx connection string for database db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", s.User, s.Host, s.Port, db)
}

// JDBCURL is the JDBC URL of database db, as a jdbc table's 'url' option.
func (s *Server) JDBCURL(db string) string {
	return fmt.Sprintf("jdbc:postgresql://%s:%d/%s", s.Host, s.Port, db)
}

// CreateDB creates a new empty database with a name unique on the server,
// dropped (with its connections) in t.Cleanup, and returns it.
func (s *Server) CreateDB(tb testing.TB) *DB {
	tb.Helper()
	s.mu.Lock()
	s.dbSeq++
	name := fmt.Sprintf("t%d_%s", s.dbSeq, sanitize(tb.Name()))
	s.mu.Unlock()
	if len(name) > 60 {
		name = name[:60]
	}
	if _, err := s.Psql("postgres", "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	db := &DB{Server: s, Name: name}
	tb.Cleanup(func() {
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if !stopped {
			// Prepared transactions hold the database: roll back any a test
			// left behind so that DROP succeeds.
			out, _ := s.Psql(name, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
			for _, gid := range strings.Fields(out) {
				_, _ = s.Psql(name, "ROLLBACK PREPARED '"+gid+"'")
			}
			_, _ = s.Psql("postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
	})
	return db
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

func sanitize(name string) string {
	return nonIdent.ReplaceAllString(strings.ToLower(name), "_")
}

// Psql runs sql (one or more statements) in database db with psql, an
// independent client, and returns its unaligned output: one line per row,
// columns separated by '|', no header. An error carries psql's message.
func (s *Server) Psql(db, sql string) (string, error) {
	cmd := exec.Command(filepath.Join(s.bin, "psql"),
		"-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1",
		"-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", s.User, "-d", db, "-c", sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("psql %q: %v: %s", sql, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// DB is one database of a server.
type DB struct {
	*Server
	Name string
}

// DSN is the database's pgx connection string.
func (d *DB) DSN() string { return d.Server.DSN(d.Name) }

// JDBCURL is the database's JDBC URL.
func (d *DB) JDBCURL() string { return d.Server.JDBCURL(d.Name) }

// Exec runs sql in the database with psql and fails the test on error.
func (d *DB) Exec(tb testing.TB, sql string) {
	tb.Helper()
	if _, err := d.Server.Psql(d.Name, sql); err != nil {
		tb.Fatal(err)
	}
}

// Query runs sql in the database with psql and returns its rows, one
// string per row with columns separated by '|'. It fails the test on error.
func (d *DB) Query(tb testing.TB, sql string) []string {
	tb.Helper()
	out, err := d.Server.Psql(d.Name, sql)
	if err != nil {
		tb.Fatal(err)
	}
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// The package's shared server, started by the first NewDB of a test binary
// whose TestMain called Main and stopped when Main's m.Run returns. It is
// package state on purpose: one server per test binary is the point.
var shared struct {
	mu      sync.Mutex
	main    bool
	server  *Server
	err     error
	started bool
}

// Main runs the package's tests and stops the shared server, if one was
// started, before exiting. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.server != nil {
		shared.server.Stop()
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// Shared returns the package's shared server, starting it on first use. The
// test package's TestMain must call Main.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		tb.Fatal("pgtest: the shared server needs the test package's TestMain to call pgtest.Main(m)")
	}
	if !shared.started {
		shared.started = true
		shared.server, shared.err = start(Options{})
	}
	if shared.err != nil {
		tb.Fatalf("pgtest: %v", shared.err)
	}
	return shared.server
}

// NewDB returns a new empty database on the package's shared server,
// dropped in t.Cleanup.
func NewDB(tb testing.TB) *DB {
	tb.Helper()
	return Shared(tb).CreateDB(tb)
}
