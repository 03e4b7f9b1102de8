package testkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, ctx context.Context, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() {
		if err := resp.Body.Close(); err != nil {
			t.Errorf("close body: %v", err)
		}
	}()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, body
}

func TestSitePages(t *testing.T) {
	s := NewSite(t)
	tests := []struct {
		path       string
		status     int
		typePrefix string
		contains   string
		minLen     int
	}{
		{"/article", 200, "text/html", SiteArticleTitle, 0},
		{"/article2", 200, "text/html", SiteArticle2Title, 0},
		{"/latin1", 200, "text/html; charset=ISO-8859-1", "Caf\xe9 cr\xe8me", 0},
		{"/gbk", 200, "text/html", "charset=gbk", 0},
		{"/plain.txt", 200, "text/plain", "Plain text notes", 0},
		{"/data.json", 200, "application/json", `"deer-go"`, 0},
		{"/redirect", 200, "text/html", SiteArticleTitle, 0},
		{"/redirect-chain/3", 200, "text/html", SiteArticleTitle, 0},
		{"/large", 200, "text/html", "THE END OF THE LARGE PAGE", SiteLargeBytes},
		{"/image.png", 200, "image/png", "\x89PNG", 0},
		{"/nope", 404, "text/plain", "404", 0},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, context.Background(), s.URL+tt.path)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.typePrefix) {
				t.Errorf("Content-Type = %q, want prefix %q", ct, tt.typePrefix)
			}
			if !strings.Contains(string(body), tt.contains) {
				t.Errorf("body lacks %q", tt.contains)
			}
			if len(body) < tt.minLen {
				t.Errorf("body is %d bytes, want >= %d", len(body), tt.minLen)
			}
			if got := s.Hits(tt.path); got != 1 {
				t.Errorf("Hits(%s) = %d, want 1", tt.path, got)
			}
		})
	}
	if got := s.Hits("/redirect-chain/0"); got != 1 {
		t.Errorf("chain end hits = %d, want 1", got)
	}
}

func TestSiteGBKIsNotUTF8(t *testing.T) {
	s := NewSite(t)
	_, body := get(t, context.Background(), s.URL+"/gbk")
	if strings.Contains(string(body), "深度研究") {
		t.Fatal("GBK page contains UTF-8 text; it was not encoded")
	}
}

func TestSiteAdd(t *testing.T) {
	s := NewSite(t)
	s.Add("/custom", "text/markdown", "# Hello")
	s.Add("/article", "text/plain", "replaced")
	s.Add("/untyped", "", "<html><body>hi</body></html>")

	tests := []struct{ path, ctype, body string }{
		{"/custom", "text/markdown", "# Hello"},
		{"/article", "text/plain", "replaced"},
		{"/untyped", "", "<html><body>hi</body></html>"},
	}
	for _, tt := range tests {
		resp, body := get(t, context.Background(), s.URL+tt.path)
		if got := resp.Header.Get("Content-Type"); got != tt.ctype {
			t.Errorf("%s Content-Type = %q, want %q", tt.path, got, tt.ctype)
		}
		if string(body) != tt.body {
			t.Errorf("%s body = %q, want %q", tt.path, body, tt.body)
		}
	}
	get(t, context.Background(), s.URL+"/custom")
	if got := s.Hits("/custom"); got != 2 {
		t.Errorf("Hits(/custom) = %d, want 2", got)
	}
	if got := s.Hits("/never"); got != 0 {
		t.Errorf("Hits(/never) = %d, want 0", got)
	}
}

func TestSiteSlowRespectsContext(t *testing.T) {
	s := NewSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		if cerr := resp.Body.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
		t.Fatal("slow page answered before the client deadline")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > SiteSlowDelay/2 {
		t.Errorf("took %v; the client deadline was not honoured", d)
	}
	// Cleanup (server Close) must not hang on the abandoned handler, which
	// the test's own timeout would reveal.
}
