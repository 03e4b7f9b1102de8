package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/infra/store/storetest"
)

const urlEnv = "DEER_GO_TEST_DATABASE_URL"

// baseURL returns the test database, skipping without one, except in CI where a skip would hide the suite.
func baseURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set in CI; run .ci/postgres.sh first", urlEnv)
		}
		tb.Skip("set DEER_GO_TEST_DATABASE_URL to run the PostgreSQL store tests")
	}
	return u
}

// withSearchPath adds search_path to a URL or key=value connection string; pgx sends it to the server.
func withSearchPath(base, schema string) (string, error) {
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " search_path=" + schema, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// freshURL creates an empty schema, dropped at cleanup, and returns a URL that works inside it.
func freshURL(tb testing.TB) string {
	tb.Helper()
	base := baseURL(tb)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schema := "deergo_test_" + hex.EncodeToString(b[:])
	admin := func(sql string) {
		tb.Helper()
		ctx := context.WithoutCancel(tb.Context())
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Fatalf("connect to %s: %v", urlEnv, err)
		}
		defer func() {
			if err := conn.Close(ctx); err != nil {
				tb.Errorf("close admin connection: %v", err)
			}
		}()
		if _, err := conn.Exec(ctx, sql); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	admin("CREATE SCHEMA " + schema)
	tb.Cleanup(func() { admin("DROP SCHEMA " + schema + " CASCADE") })
	u, err := withSearchPath(base, schema)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func open(tb testing.TB, u string) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), u)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T) store.Store { return open(t, freshURL(t)) },
		storetest.WithReopen(func(t *testing.T, s store.Store) store.Store {
			u := s.(*Store).url
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, u)
		}),
	)
}

// TestConcurrentStart opens several stores on one empty schema at once, as servers starting together would.
func TestConcurrentStart(t *testing.T) {
	u := freshURL(t)
	const servers = 6
	stores := make([]*Store, servers)
	errs := make([]error, servers)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), u) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("server %d: %v", i, err)
			continue
		}
		t.Cleanup(func() {
			if err := stores[i].Close(); err != nil {
				t.Error(err)
			}
		})
	}
	if t.Failed() {
		return
	}
	var n int
	if err := stores[0].pool.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(migrations)-1 {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(migrations)-1)
	}
}

func TestWithSearchPath(t *testing.T) {
	tests := []struct{ base, want string }{
		{"postgres://u@h:1/db?sslmode=disable", "postgres://u@h:1/db?search_path=s&sslmode=disable"},
		{"postgresql://h/db", "postgresql://h/db?search_path=s"},
		{"host=h dbname=db", "host=h dbname=db search_path=s"},
	}
	for _, tt := range tests {
		got, err := withSearchPath(tt.base, "s")
		if err != nil || got != tt.want {
			t.Errorf("withSearchPath(%q) = %q, %v; want %q", tt.base, got, err, tt.want)
		}
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return open(b, freshURL(b)) })
}
