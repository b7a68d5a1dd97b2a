package pgtest

import (
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// TestSharedServer checks the settings the connectors depend on and that
// each test's database is its own.
func TestSharedServer(t *testing.T) {
	a, b := NewDB(t), NewDB(t)
	if a.Server != b.Server {
		t.Fatal("two databases of one package are on different servers")
	}
	if a.Name == b.Name {
		t.Fatalf("both databases are named %s", a.Name)
	}
	got := a.Query(t, "SELECT current_setting('max_prepared_transactions')::int > 0, current_setting('wal_level')")
	if len(got) != 1 || got[0] != "t|logical" {
		t.Fatalf("settings: got %q, want [t|logical]", got)
	}
	a.Exec(t, "CREATE TABLE x (k int PRIMARY KEY, v text); INSERT INTO x VALUES (1, 'a'), (2, 'b|c')")
	if got := strings.Join(a.Query(t, "SELECT k, v FROM x ORDER BY k"), ";"); got != "1|a;2|b|c" {
		t.Fatalf("rows: got %q", got)
	}
	if _, err := b.Psql(b.Name, "SELECT * FROM x"); err == nil || !strings.Contains(err.Error(), `relation "x" does not exist`) {
		t.Fatalf("table of database a seen from database b: err = %v", err)
	}
	// A prepared transaction left behind must not keep the database from
	// being dropped in Cleanup.
	a.Exec(t, "BEGIN; INSERT INTO x VALUES (3, 'p'); PREPARE TRANSACTION 'pgtest-left'")
	if got := a.Query(t, "SELECT gid FROM pg_prepared_xacts"); len(got) != 1 || got[0] != "pgtest-left" {
		t.Fatalf("pg_prepared_xacts: %q", got)
	}
}

// TestOwnServer starts a server with other settings and stops it.
func TestOwnServer(t *testing.T) {
	s := Start(t, Options{Settings: map[string]string{"max_prepared_transactions": "0"}})
	out, err := s.Psql("postgres", "SHOW max_prepared_transactions")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "0" {
		t.Fatalf("max_prepared_transactions = %q, want 0", out)
	}
	if s.Port == Shared(t).Port {
		t.Fatal("own server on the shared server's port")
	}
	s.Stop()
	if _, err := s.Psql("postgres", "SELECT 1"); err == nil {
		t.Fatal("server still answers after Stop")
	}
	s.Stop() // idempotent
}
