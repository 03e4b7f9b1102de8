package testkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// JinaPage is what the fake reader returns for one target URL.
type JinaPage struct {
	Title   string
	Content string // markdown
}

// JinaRequest records one call to the fake reader.
type JinaRequest struct {
	Target        string // the URL after the reader's base, query included
	Accept        string
	Authorization string
}

// JinaReader is a loopback fake of the Jina reader API (r.jina.ai):
// GET /<target URL> answers with the page registered for that target, as
// JSON when the client accepts application/json and in the reader's
// "Title: / URL Source: / Markdown Content:" text format otherwise.
// Unknown targets get 422, as when the reader cannot load a page.
type JinaReader struct {
	URL string

	mu       sync.Mutex
	pages    map[string]JinaPage
	requests []JinaRequest
	apiKey   string
}

// NewJinaReader starts the fake; it is closed when the test ends.
func NewJinaReader(t testing.TB) *JinaReader {
	t.Helper()
	j := &JinaReader{pages: make(map[string]JinaPage)}
	// No ServeMux: it would clean the "//" inside the embedded URL.
	srv := httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(srv.Close)
	j.URL = srv.URL
	return j
}

// Add registers the page returned for target (matched exactly).
func (j *JinaReader) Add(target string, page JinaPage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pages[target] = page
}

// RequireKey makes the reader answer 401 unless the request carries key as
// a Bearer token.
func (j *JinaReader) RequireKey(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.apiKey = key
}

// Requests returns every request received so far, in arrival order.
func (j *JinaReader) Requests() []JinaRequest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]JinaRequest(nil), j.requests...)
}

func (j *JinaReader) serve(w http.ResponseWriter, r *http.Request) {
	target := strings.TrimPrefix(r.RequestURI, "/")
	j.mu.Lock()
	j.requests = append(j.requests, JinaRequest{
		Target: target, Accept: r.Header.Get("Accept"), Authorization: r.Header.Get("Authorization"),
	})
	page, ok := j.pages[target]
	key := j.apiKey
	j.mu.Unlock()

	wantJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	switch {
	case r.Method != http.MethodGet:
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case key != "" && r.Header.Get("Authorization") != "Bearer "+key:
		jinaError(w, http.StatusUnauthorized, "AuthenticationFailedError", 40103, "Invalid API key, please get a new one from https://jina.ai")
	case target == "":
		jinaError(w, http.StatusBadRequest, "ParamValidationError", 40001, "No URL provided")
	case !ok:
		jinaError(w, http.StatusUnprocessableEntity, "AssertionFailureError", 42206,
			fmt.Sprintf("Failed to goto %s: net::ERR_NAME_NOT_RESOLVED", target))
	case wantJSON:
		searchWriteJSON(w, http.StatusOK, map[string]any{
			"code": 200, "status": 20000,
			"data": map[string]any{
				"title": page.Title, "description": "", "url": target, "content": page.Content,
				"publishedTime": "2024-05-01T00:00:00Z",
				"usage":         map[string]any{"tokens": len(strings.Fields(page.Content)) + 5},
			},
			"meta": map[string]any{"usage": map[string]any{"tokens": len(strings.Fields(page.Content)) + 5}},
		})
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if _, err := fmt.Fprintf(w, "Title: %s\n\nURL Source: %s\n\nMarkdown Content:\n%s\n", page.Title, target, page.Content); err != nil {
			return // client went away
		}
	}
}

func jinaError(w http.ResponseWriter, status int, name string, code int, msg string) {
	body := map[string]any{
		"data": nil, "code": status, "name": name, "status": code,
		"message": msg, "readableMessage": name + ": " + msg,
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(body); err != nil {
		return // client went away
	}
}
