package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/infra/store/storetest"
)

func open(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), path)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func fresh(tb testing.TB) *Store {
	return open(tb, filepath.Join(tb.TempDir(), "deer.db"))
}

func TestContract(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T) store.Store { return fresh(t) },
		storetest.WithReopen(func(t *testing.T, s store.Store) store.Store {
			path := s.(*Store).path
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, path)
		}),
	)
}

func TestOpenRejectsNonFiles(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := Open(t.Context(), p); err == nil {
			t.Errorf("Open(%q) succeeded", p)
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestPragmasAndMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "deer.db")
	s := open(t, path)
	tests := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	}
	for _, tt := range tests {
		var got string
		if err := s.w.QueryRowContext(t.Context(), "PRAGMA "+tt.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tt.pragma, err)
		}
		if got != tt.want {
			t.Errorf("PRAGMA %s = %s, want %s", tt.pragma, got, tt.want)
		}
	}
	if _, err := s.r.ExecContext(t.Context(), `DELETE FROM threads`); err == nil {
		t.Error("the read pool accepted a write")
	}
	// Opening again must not re-apply migrations.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	var n int
	if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(migrations)-1 {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(migrations)-1)
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return fresh(b) })
}
