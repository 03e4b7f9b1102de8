package search

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deer-go/deer-go/internal/testkit"
)

// fastRetry shortens the retry backoff so failure tests stay quick.
func fastRetry(t *testing.T, e Engine) Engine {
	t.Helper()
	switch v := e.(type) {
	case *Tavily:
		v.req.backoff = time.Millisecond
	case *SearXNG:
		v.req.backoff = time.Millisecond
	case *DuckDuckGo:
		v.req.backoff = time.Millisecond
	case *Brave:
		v.req.backoff = time.Millisecond
	case *Wikipedia:
		v.req.backoff = time.Millisecond
	case *Arxiv:
		v.req.backoff = time.Millisecond
	case *Jina:
		v.req.backoff = time.Millisecond
	default:
		t.Fatalf("unexpected engine type %T", e)
	}
	return e
}

const testKey = "tvly-test-secret-key"

// engineOptions returns options pointing every engine at the fake.
func engineOptions(fake *testkit.Search, engine string) Options {
	return Options{
		Engine:           engine,
		TavilyAPIKey:     testKey,
		TavilyBaseURL:    fake.URL,
		SearxHost:        fake.URL + "/",
		DDGBaseURL:       fake.URL,
		BraveAPIKey:      testKey,
		BraveBaseURL:     fake.URL,
		WikipediaBaseURL: fake.URL,
		ArxivBaseURL:     fake.URL,
		JinaAPIKey:       testKey,
		JinaBaseURL:      fake.JinaURL(),
		Timeout:          5 * time.Second,
	}
}

// allEngines are the engines that return the fake's URLs verbatim.
// Wikipedia builds article links from titles and is tested on its own.
var allEngines = []string{EngineTavily, EngineSearXNG, EngineDuckDuckGo, EngineBrave, EngineArxiv, EngineJina}

// everyEngine is every engine New knows.
var everyEngine = append(append([]string(nil), allEngines...), EngineWikipedia)

func TestEnginesAgainstFake(t *testing.T) {
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			fake := testkit.NewSearchAll(t)
			fake.RequireKey(testKey)
			fake.Add("golang", testkit.SearchHit{Title: " The Go Programming Language ", URL: "https://go.dev/", Content: "Build simple, secure golang software."},
				testkit.SearchHit{Title: "Go duplicate", URL: "https://GO.dev#top", Content: "same page"},
				testkit.SearchHit{Title: "Go blog", URL: "https://go.dev/blog", Content: "News & <updates>"},
				testkit.SearchHit{Title: "No URL", URL: "", Content: "dropped"})
			fake.Add("empty")

			e, err := New(engineOptions(fake, name))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if e.Name() != name {
				t.Errorf("Name() = %q, want %q", e.Name(), name)
			}

			got, err := e.Search(t.Context(), "  learn golang ", 5)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			wantURLs := []string{"https://go.dev/", "https://go.dev/blog"}
			if len(got) != len(wantURLs) {
				t.Fatalf("got %d results, want %d: %+v", len(got), len(wantURLs), got)
			}
			for i, r := range got {
				if r.Type != TypePage || r.URL != wantURLs[i] {
					t.Errorf("result %d = %+v, want page %s", i, r, wantURLs[i])
				}
			}
			if got[0].Title != "The Go Programming Language" {
				t.Errorf("title = %q", got[0].Title)
			}
			if !strings.Contains(got[0].Content, "secure golang software") {
				t.Errorf("content = %q", got[0].Content)
			}
			if got[1].Content != "News & <updates>" {
				t.Errorf("escaped content not decoded: %q", got[1].Content)
			}
			if qs := fake.Queries(); len(qs) != 1 || qs[0] != "learn golang" {
				t.Errorf("fake saw queries %q", qs)
			}

			def, err := e.Search(t.Context(), "deep sea mining", 2)
			if err != nil {
				t.Fatalf("Search default corpus: %v", err)
			}
			if len(def) != 2 || !strings.Contains(def[0].URL, "deep-sea-mining") {
				t.Errorf("default corpus capped at 2 = %+v", def)
			}

			none, err := e.Search(t.Context(), "empty results", 5)
			if err != nil || len(none) != 0 {
				t.Errorf("zero results: %+v, %v", none, err)
			}

			if _, err := e.Search(t.Context(), "   ", 5); !errors.Is(err, ErrEmptyQuery) {
				t.Errorf("blank query error = %v, want ErrEmptyQuery", err)
			}
		})
	}
}

func TestEngineRetries(t *testing.T) {
	tests := []struct {
		name        string
		failures    int
		status      int
		wantErr     bool
		wantStatus  int // StatusError code expected when wantErr
		wantQueries int
	}{
		{name: "one 5xx is retried", failures: 1, status: http.StatusBadGateway, wantQueries: 2},
		{name: "two 5xx give up", failures: 2, status: http.StatusServiceUnavailable, wantErr: true, wantStatus: http.StatusServiceUnavailable, wantQueries: 2},
		{name: "4xx is not retried", failures: 1, status: http.StatusTooManyRequests, wantErr: true, wantStatus: http.StatusTooManyRequests, wantQueries: 1},
		{name: "dropped connection is retried", failures: 1, status: 0, wantQueries: 2},
	}
	for _, name := range everyEngine {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				fake := testkit.NewSearchAll(t)
				e, err := New(engineOptions(fake, name))
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				fastRetry(t, e)
				fake.FailNext(tc.failures, tc.status)
				res, err := e.Search(t.Context(), "retry me", 3)
				if tc.wantErr {
					var se *StatusError
					if !errors.As(err, &se) {
						t.Fatalf("err = %v, want *StatusError", err)
					}
					if se.StatusCode != tc.wantStatus || se.Engine != name {
						t.Errorf("StatusError = %+v", se)
					}
					if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "HTTP") {
						t.Errorf("error lacks engine/status: %v", err)
					}
				} else {
					if err != nil {
						t.Fatalf("Search: %v", err)
					}
					if len(res) != 3 {
						t.Errorf("got %d results after retry", len(res))
					}
				}
				if got := len(fake.Queries()); got != tc.wantQueries {
					t.Errorf("fake saw %d requests, want %d", got, tc.wantQueries)
				}
			})
		}
	}
}

func TestTavilyErrorsNeverLeakKey(t *testing.T) {
	fake := testkit.NewSearchAll(t)
	fake.RequireKey("some-other-key")
	e, err := New(engineOptions(fake, EngineTavily))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Search(t.Context(), "q", 3)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want 401 StatusError", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks key: %v", err)
	}

	// A backend echoing the request must not leak the key either.
	echo := newEchoServer(t, http.StatusBadRequest)
	e2, err := NewTavily(TavilyConfig{APIKey: testKey, BaseURL: echo.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e2.Search(t.Context(), "q", 3)
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("echoed error = %v", err)
	}
}

func TestSearchHonoursContext(t *testing.T) {
	fake := testkit.NewSearchAll(t)
	fake.FailNext(5, http.StatusInternalServerError)
	e, err := New(engineOptions(fake, EngineSearXNG))
	if err != nil {
		t.Fatal(err)
	}
	e.(*SearXNG).req.backoff = time.Hour // only cancellation can end the wait
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = e.Search(ctx, "q", 3)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Search ignored cancellation")
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		wantErr  error
		wantType string
	}{
		{name: "unknown", opts: Options{Engine: "bing"}, wantErr: ErrUnknownEngine},
		{name: "tavily without key", opts: Options{Engine: "tavily"}, wantErr: ErrMissingAPIKey},
		{name: "default is tavily", opts: Options{TavilyAPIKey: "k"}, wantType: EngineTavily},
		{name: "tavily bad url", opts: Options{Engine: "tavily", TavilyAPIKey: "k", TavilyBaseURL: "ftp://x"}, wantErr: ErrInvalidURL},
		{name: "searxng without host", opts: Options{Engine: "searxng"}, wantErr: ErrMissingHost},
		{name: "searxng relative host", opts: Options{Engine: "searxng", SearxHost: "localhost:8080"}, wantErr: ErrInvalidURL},
		{name: "searxng", opts: Options{Engine: " SearXNG ", SearxHost: "http://127.0.0.1:8888"}, wantType: EngineSearXNG},
		{name: "duckduckgo default base", opts: Options{Engine: "duckduckgo"}, wantType: EngineDuckDuckGo},
		{name: "brave without key", opts: Options{Engine: "brave"}, wantErr: ErrMissingAPIKey},
		{name: "brave bad url", opts: Options{Engine: "brave", BraveAPIKey: "k", BraveBaseURL: "not a url"}, wantErr: ErrInvalidURL},
		{name: "brave", opts: Options{Engine: "Brave", BraveAPIKey: "k"}, wantType: EngineBrave},
		{name: "wikipedia default base", opts: Options{Engine: "wikipedia"}, wantType: EngineWikipedia},
		{name: "wikipedia bad url", opts: Options{Engine: "wikipedia", WikipediaBaseURL: "javascript:alert(1)"}, wantErr: ErrInvalidURL},
		{name: "arxiv default base", opts: Options{Engine: "arxiv"}, wantType: EngineArxiv},
		{name: "arxiv bad url", opts: Options{Engine: "arxiv", ArxivBaseURL: "//no-scheme"}, wantErr: ErrInvalidURL},
		{name: "jina without key", opts: Options{Engine: "jina"}, wantErr: ErrMissingAPIKey},
		{name: "jina", opts: Options{Engine: "jina", JinaAPIKey: "jina_k"}, wantType: EngineJina},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if e.Name() != tc.wantType {
				t.Errorf("Name() = %q, want %q", e.Name(), tc.wantType)
			}
		})
	}
}
