package search

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/deer-go/deer-go/internal/testkit"
)

// captureServer records the last request and answers with status and body.
type captureServer struct {
	URL string

	mu  sync.Mutex
	req *http.Request
}

func newCaptureServer(t *testing.T, status int, contentType, body string) *captureServer {
	t.Helper()
	c := &captureServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.req = r.Clone(r.Context())
		c.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		if _, err := io.WriteString(w, body); err != nil {
			t.Errorf("write: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *captureServer) last(t *testing.T) (string, url.Values, http.Header) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.req == nil {
		t.Fatal("no request reached the server")
	}
	return c.req.URL.Path, c.req.URL.Query(), c.req.Header
}

func TestBraveRequestShape(t *testing.T) {
	srv := newCaptureServer(t, http.StatusOK, "application/json", `{"type":"search"}`)
	e, err := NewBrave(BraveConfig{APIKey: " bsa-key ", BaseURL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Search(t.Context(), " rust vs go ", 50)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if got == nil || len(got) != 0 {
		t.Errorf("missing web section: got %#v, want empty non-nil", got)
	}
	path, q, h := srv.last(t)
	checks := []struct{ name, got, want string }{
		{"path", path, "/res/v1/web/search"},
		{"q", q.Get("q"), "rust vs go"},
		{"count", q.Get("count"), "20"},
		{"token header", h.Get("X-Subscription-Token"), "bsa-key"},
		{"accept", h.Get("Accept"), "application/json"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestParseBrave(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []Result
		wantErr bool
	}{
		{
			name: "markup stripped",
			body: `{"web":{"results":[{"title":"Go &amp; Rust","url":"https://a.example/x","description":"Fast <strong>compiled</strong> languages &lt;2024&gt;"}]}}`,
			want: []Result{{Type: TypePage, Title: "Go & Rust", URL: "https://a.example/x", Content: "Fast compiled languages <2024>"}},
		},
		{
			name: "extra snippets fill an empty description",
			body: `{"web":{"results":[{"title":"T","url":"https://a.example","description":"","extra_snippets":["one <b>two</b>","three"]}]}}`,
			want: []Result{{Type: TypePage, Title: "T", URL: "https://a.example", Content: "one two three"}},
		},
		{name: "no web section", body: `{"type":"search","query":{"original":"x"}}`, want: []Result{}},
		{name: "null web", body: `{"web":null}`, want: []Result{}},
		{name: "not json", body: `<html>`, wantErr: true},
		{name: "wrong shape", body: `{"web":{"results":{}}}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBrave([]byte(tc.body))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// TestKeyedEngines checks that each keyed engine sends its key the way the
// backend expects (the fake refuses other keys) and never leaks it.
func TestKeyedEngines(t *testing.T) {
	for _, name := range []string{EngineTavily, EngineBrave, EngineJina} {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name       string
				serverKey  string
				wantStatus int
			}{
				{name: "accepted", serverKey: testKey},
				{name: "rejected", serverKey: "another-key", wantStatus: http.StatusUnauthorized},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					fake := testkit.NewSearchAll(t)
					fake.RequireKey(tc.serverKey)
					e, err := New(engineOptions(fake, name))
					if err != nil {
						t.Fatal(err)
					}
					res, err := e.Search(t.Context(), "keys", 3)
					if tc.wantStatus == 0 {
						if err != nil || len(res) != 3 {
							t.Fatalf("Search = %d results, %v", len(res), err)
						}
						return
					}
					var se *StatusError
					if !errors.As(err, &se) || se.StatusCode != tc.wantStatus {
						t.Fatalf("err = %v, want StatusError %d", err, tc.wantStatus)
					}
					if strings.Contains(err.Error(), testKey) {
						t.Errorf("error leaks the key: %v", err)
					}
					if got := len(fake.Queries()); got != 1 {
						t.Errorf("4xx was retried: %d requests", got)
					}
				})
			}
		})
	}
}
