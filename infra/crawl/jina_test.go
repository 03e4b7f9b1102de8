package crawl

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/deer-go/deer-go/internal/testkit"
)

// jinaCrawler builds a Jina-backed crawler that refuses private targets and
// resolves names from the given table instead of DNS.
func jinaCrawler(t *testing.T, base string, opts Options, names map[string][]netip.Addr) *Crawler {
	t.Helper()
	opts.Reader = ReaderJina
	opts.JinaBaseURL = base
	if err := opts.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	c := New(opts)
	publicView(c, names)
	return c
}

func TestJinaReader(t *testing.T) {
	reader := testkit.NewJinaReader(t)
	reader.RequireKey("jina_secret")
	reader.Add("https://public.test/paper?id=7", testkit.JinaPage{Title: "  A Paper ", Content: "# A Paper\n\nFindings."})
	names := map[string][]netip.Addr{
		"public.test":   {netip.MustParseAddr("203.0.113.7")},
		"internal.test": {netip.MustParseAddr("10.0.0.8")},
		"mixed.test":    {netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("127.0.0.1")},
	}
	c := jinaCrawler(t, reader.URL+"/", Options{JinaAPIKey: "jina_secret"}, names)

	tests := []struct {
		name       string
		url        string
		wantErr    error
		wantStatus int
		reachJina  bool
	}{
		{name: "public target", url: "https://public.test/paper?id=7#abstract", reachJina: true},
		{name: "loopback literal", url: "http://127.0.0.1:8080/admin", wantErr: ErrBlocked},
		{name: "metadata address", url: "http://169.254.169.254/latest/meta-data/", wantErr: ErrBlocked},
		{name: "name resolving private", url: "http://internal.test/", wantErr: ErrBlocked},
		{name: "mixed answers", url: "http://mixed.test/", wantErr: ErrBlocked},
		{name: "bad scheme", url: "file:///etc/passwd", wantErr: ErrBlocked},
		{name: "unknown name", url: "http://nxdomain.test/", wantErr: errAnyCrawl},
		{name: "reader cannot load", url: "https://public.test/missing", wantStatus: http.StatusUnprocessableEntity, reachJina: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(reader.Requests())
			page, err := c.Fetch(context.Background(), tt.url)
			reached := len(reader.Requests()) > before
			if reached != tt.reachJina {
				t.Errorf("reached reader = %v, want %v", reached, tt.reachJina)
			}
			switch {
			case tt.wantErr == errAnyCrawl:
				if err == nil {
					t.Fatal("want error")
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.wantStatus != 0:
				var se *StatusError
				if !errors.As(err, &se) || se.Code != tt.wantStatus {
					t.Fatalf("err = %v, want status %d", err, tt.wantStatus)
				}
			default:
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if page.Title != "A Paper" || page.Markdown != "# A Paper\n\nFindings." || page.ContentType != "text/markdown" {
					t.Errorf("page = %+v", page)
				}
				if page.URL != tt.url || page.FinalURL != "https://public.test/paper?id=7" {
					t.Errorf("URL %q FinalURL %q", page.URL, page.FinalURL)
				}
				last := reader.Requests()[len(reader.Requests())-1]
				if last.Target != "https://public.test/paper?id=7" || last.Authorization != "Bearer jina_secret" || last.Accept != "application/json" {
					t.Errorf("reader request = %+v", last)
				}
			}
		})
	}
}

// errAnyCrawl marks rows that expect some error, whatever its kind.
var errAnyCrawl = errors.New("any error")

func TestJinaReaderKeyAndCache(t *testing.T) {
	reader := testkit.NewJinaReader(t)
	reader.Add("http://203.0.113.9/doc", testkit.JinaPage{Title: "Doc", Content: "text"})
	reader.RequireKey("right")

	wrong := jinaCrawler(t, reader.URL, Options{JinaAPIKey: "wrong"}, nil)
	var se *StatusError
	_, err := wrong.Fetch(context.Background(), "http://203.0.113.9/doc")
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("err = %v, want 401", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error leaks the key: %v", err)
	}

	c := jinaCrawler(t, reader.URL, Options{JinaAPIKey: "right"}, nil).WithCache(NewCache(4, 0))
	for range 3 {
		if _, err := c.Fetch(context.Background(), "http://203.0.113.9/doc"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(reader.Requests()); n != 2 { // the 401 above plus one fetch
		t.Errorf("reader saw %d requests, want 2", n)
	}
}

func TestJinaTextFormat(t *testing.T) {
	tests := []struct {
		name, body         string
		wantTitle, wantURL string
		wantContent        string
		contentType        string
	}{
		{
			name:      "reader text format",
			body:      "Title: Example Domain\n\nURL Source: https://example.com/final\n\nPublished Time: 2024-01-01\n\nMarkdown Content:\nThis domain is for examples.\n",
			wantTitle: "Example Domain", wantURL: "https://example.com/final", wantContent: "This domain is for examples.",
			contentType: "text/plain; charset=utf-8",
		},
		{
			name: "plain markdown", body: "# Heading\n\nBody", wantURL: "http://203.0.113.9/x", wantContent: "# Heading\n\nBody",
			contentType: "text/markdown",
		},
		{
			name: "headers without content marker", body: "Title: Only\n\nSomething else", wantTitle: "Only",
			wantURL: "http://203.0.113.9/x", wantContent: "Title: Only\n\nSomething else", contentType: "text/plain",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				if _, err := w.Write([]byte(tt.body)); err != nil {
					t.Errorf("write: %v", err)
				}
			}))
			t.Cleanup(srv.Close)
			page, err := jinaCrawler(t, srv.URL, Options{}, nil).Fetch(context.Background(), "http://203.0.113.9/x")
			if err != nil {
				t.Fatal(err)
			}
			if page.Title != tt.wantTitle || page.FinalURL != tt.wantURL || page.Markdown != tt.wantContent {
				t.Errorf("page = %+v", page)
			}
		})
	}
}

func TestJinaJSONErrors(t *testing.T) {
	tests := []struct {
		name, body string
		max        int64
		wantErr    error
	}{
		{name: "error code in 200", body: `{"code":451,"message":"blocked","data":null}`, wantErr: errAnyCrawl},
		{name: "no data", body: `{"code":200}`, wantErr: errAnyCrawl},
		{name: "not json", body: `<html>`, wantErr: errAnyCrawl},
		{name: "cut json", body: `{"code":200,"data":{"content":"` + strings.Repeat("x", 500) + `"}}`, max: 100, wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if _, err := w.Write([]byte(tt.body)); err != nil {
					t.Errorf("write: %v", err)
				}
			}))
			t.Cleanup(srv.Close)
			_, err := jinaCrawler(t, srv.URL, Options{MaxBytes: tt.max}, nil).Fetch(context.Background(), "http://203.0.113.9/x")
			if err == nil || (tt.wantErr != errAnyCrawl && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestReaderOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{name: "default direct", opts: Options{}},
		{name: "explicit direct", opts: Options{Reader: " Direct "}},
		{name: "jina default base", opts: Options{Reader: "jina"}},
		{name: "unknown reader", opts: Options{Reader: "firecrawl"}, wantErr: true},
		{name: "jina bad base", opts: Options{Reader: "jina", JinaBaseURL: "ftp://r.jina.ai"}, wantErr: true},
		{name: "jina base with query", opts: Options{Reader: "jina", JinaBaseURL: "https://r.jina.ai/?x=1"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr {
				return
			}
			if !errors.Is(err, ErrBadOptions) {
				t.Errorf("err = %v, want ErrBadOptions", err)
			}
			// Fetch reports the same problem instead of guessing.
			if _, ferr := New(tt.opts).Fetch(context.Background(), "http://203.0.113.9/"); !errors.Is(ferr, ErrBadOptions) {
				t.Errorf("Fetch err = %v, want ErrBadOptions", ferr)
			}
		})
	}
	if c := New(Options{Reader: "jina"}); c.jinaBase != DefaultJinaBaseURL {
		t.Errorf("default base = %q", c.jinaBase)
	}
}
