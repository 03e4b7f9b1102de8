package search

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// newEchoServer answers every request with status and the request body.
func newEchoServer(t *testing.T, status int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(status)
		if _, err := w.Write(body); err != nil {
			t.Errorf("echo write: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTavilyRequestShape(t *testing.T) {
	var (
		mu     sync.Mutex
		header http.Header
		body   map[string]any
		path   string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		header, path = r.Header.Clone(), r.URL.Path
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, `{"results":[],"images":[]}`); err != nil {
			t.Errorf("write: %v", err)
		}
	}))
	t.Cleanup(srv.Close)

	e, err := NewTavily(TavilyConfig{
		APIKey: " k1 ", BaseURL: srv.URL + "/", IncludeImages: true,
		IncludeDomains: []string{"go.dev"}, ExcludeDomains: []string{"spam.example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Search(t.Context(), "q", 50); err != nil {
		t.Fatalf("Search: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if path != "/search" {
		t.Errorf("path = %q", path)
	}
	if got := header.Get("Authorization"); got != "Bearer k1" {
		t.Errorf("Authorization = %q", got)
	}
	if got := header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	want := map[string]any{
		"api_key": "k1", "query": "q", "max_results": 20.0, "search_depth": "advanced",
		"include_images": true, "include_image_descriptions": true, "include_raw_content": false,
		"include_domains": []any{"go.dev"}, "exclude_domains": []any{"spam.example"},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("body = %v\nwant %v", body, want)
	}
}

func TestParseTavily(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []Result
		wantErr bool
	}{
		{
			name: "pages and both image shapes",
			body: `{"results":[{"title":"T","url":"https://a.example","content":"C","score":0.7,"raw_content":null}],
				"images":["https://i.example/1.png",{"url":"https://i.example/2.png","description":"two"},{"description":"no url"},42,""]}`,
			want: []Result{
				{Type: TypePage, Title: "T", URL: "https://a.example", Content: "C", Score: 0.7},
				{Type: TypeImage, ImageURL: "https://i.example/1.png"},
				{Type: TypeImage, ImageURL: "https://i.example/2.png", ImageDescription: "two"},
			},
		},
		{
			name: "raw content fills empty content",
			body: `{"results":[{"title":"T","url":"https://a.example","content":" ","raw_content":"full text"}]}`,
			want: []Result{{Type: TypePage, Title: "T", URL: "https://a.example", Content: "full text"}},
		},
		{name: "empty object", body: `{}`, want: []Result{}},
		{name: "not json", body: `<html>`, wantErr: true},
		{name: "wrong results type", body: `{"results":"x"}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTavily([]byte(tc.body))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestTavilyImagesThroughFake(t *testing.T) {
	fake := newFakeWithImages(t)
	e, err := New(Options{Engine: EngineTavily, TavilyAPIKey: "k", TavilyBaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Search(t.Context(), "gopher pictures", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Type: TypePage, Title: "Gopher", URL: "https://go.dev/gopher", Content: "The Go mascot.", Score: 0.9},
		{Type: TypeImage, ImageURL: "https://img.example.com/gopher.png", ImageDescription: "A blue gopher"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	noImg, err := New(Options{Engine: EngineTavily, TavilyAPIKey: "k", TavilyBaseURL: fake.URL, DisableImages: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err = noImg.Search(t.Context(), "gopher pictures", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.Type == TypeImage || strings.Contains(r.URL, "img.example") {
			t.Errorf("image returned with images disabled: %+v", r)
		}
	}
}
