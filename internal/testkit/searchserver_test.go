package testkit

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func searchDo(t *testing.T, method, target, contentType, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, strings.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer func() {
		if err := resp.Body.Close(); err != nil {
			t.Errorf("close body: %v", err)
		}
	}()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, string(b)
}

func TestSearchProtocols(t *testing.T) {
	s := NewSearch(t)
	s.Add("golang", SearchHit{Title: "The Go Programming Language", URL: "https://go.dev/", Content: "Go & golang <fast>"})
	s.AddImages("golang", SearchImage{URL: "https://img.example.com/gopher.png", Description: "a gopher"},
		SearchImage{URL: "https://img.example.com/plain.png"})

	tests := []struct {
		name     string
		method   string
		path     string
		ctype    string
		body     string
		wantCode int
		want     []string // substrings of the body
		notWant  []string
	}{
		{
			name: "tavily", method: http.MethodPost, path: "/search", ctype: "application/json",
			body:     `{"query":"about golang","max_results":5,"include_images":true}`,
			wantCode: http.StatusOK,
			want: []string{`"url":"https://go.dev/"`, `"score":0.9`, `"description":"a gopher"`,
				`"https://img.example.com/plain.png"`},
		},
		{
			name: "tavily without images", method: http.MethodPost, path: "/search", ctype: "application/json",
			body:     `{"query":"about golang"}`,
			wantCode: http.StatusOK,
			want:     []string{`"images":[]`},
			notWant:  []string{"gopher"},
		},
		{
			name: "tavily max_results caps default corpus", method: http.MethodPost, path: "/search", ctype: "application/json",
			body:     `{"query":"rust","max_results":1}`,
			wantCode: http.StatusOK,
			want:     []string{"https://example.com/articles/rust"},
			notWant:  []string{"docs.example.org"},
		},
		{
			name: "tavily bad json", method: http.MethodPost, path: "/search", ctype: "application/json",
			body: `{`, wantCode: http.StatusBadRequest,
		},
		{
			name: "searxng", method: http.MethodGet, path: "/search?q=golang+tips&format=json",
			wantCode: http.StatusOK,
			want:     []string{`"url":"https://go.dev/"`, `"unresponsive_engines":[]`},
		},
		{
			name: "searxng default corpus", method: http.MethodGet, path: "/search?q=Deep+Sea&format=json",
			wantCode: http.StatusOK,
			want:     []string{"https://example.com/articles/deep-sea", "https://news.example.net/deep-sea"},
		},
		{
			name: "searxng html format forbidden", method: http.MethodGet, path: "/search?q=x",
			wantCode: http.StatusForbidden,
		},
		{
			name: "ddg post", method: http.MethodPost, path: "/html/", ctype: "application/x-www-form-urlencoded",
			body:     "q=golang",
			wantCode: http.StatusOK,
			want: []string{`class="result__a"`, "//duckduckgo.com/l/?uddg=" + url.QueryEscape("https://go.dev/"),
				"result--ad", "Go &amp; <b>golang</b> &lt;fast&gt;"},
		},
		{
			name: "ddg get default corpus", method: http.MethodGet, path: "/html/?q=quantum",
			wantCode: http.StatusOK,
			want:     []string{url.QueryEscape("https://docs.example.org/guide/quantum")},
		},
		{
			name: "ddg empty query", method: http.MethodGet, path: "/html/",
			wantCode: http.StatusOK,
			want:     []string{"No results."},
			notWant:  []string{"result__a"},
		},
		{
			name: "ddg bad method", method: http.MethodDelete, path: "/html/",
			wantCode: http.StatusMethodNotAllowed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := searchDo(t, tc.method, s.URL+tc.path, tc.ctype, tc.body, nil)
			if code != tc.wantCode {
				t.Fatalf("status = %d, want %d; body %s", code, tc.wantCode, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(body, w) {
					t.Errorf("body unexpectedly contains %q", w)
				}
			}
		})
	}
}

func TestSearchLongestMatchWins(t *testing.T) {
	s := NewSearch(t)
	s.Add("", SearchHit{Title: "any", URL: "https://any.example/"})
	s.Add("go", SearchHit{Title: "go", URL: "https://go.example/"})
	s.Add("nothing here") // explicit zero results

	tests := []struct {
		query string
		want  []SearchHit
	}{
		{"about Go", []SearchHit{{Title: "go", URL: "https://go.example/"}}},
		{"python", []SearchHit{{Title: "any", URL: "https://any.example/"}}},
		{"nothing here at all", nil},
	}
	for _, tc := range tests {
		if got := s.hits(tc.query); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("hits(%q) = %+v, want %+v", tc.query, got, tc.want)
		}
	}
}

func TestSearchFailNextAndQueries(t *testing.T) {
	s := NewSearch(t)
	s.FailNext(2, http.StatusBadGateway)
	target := s.URL + "/search?format=json&q="
	for i, want := range []int{http.StatusBadGateway, http.StatusBadGateway, http.StatusOK} {
		if code, _ := searchDo(t, http.MethodGet, target+"q"+string(rune('0'+i)), "", "", nil); code != want {
			t.Errorf("request %d: status %d, want %d", i, code, want)
		}
	}
	if got, want := s.Queries(), []string{"q0", "q1", "q2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Queries() = %v, want %v", got, want)
	}

	s.FailNext(1, 0)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/html/", strings.NewReader("q=x"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		if cerr := resp.Body.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
		t.Fatalf("dropped connection produced a response: %s", resp.Status)
	}
}

func TestSearchRequireKey(t *testing.T) {
	s := NewSearch(t)
	s.RequireKey("tvly-secret")
	tests := []struct {
		name   string
		body   string
		header http.Header
		want   int
	}{
		{"missing", `{"query":"a"}`, nil, http.StatusUnauthorized},
		{"wrong bearer", `{"query":"a"}`, http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"bearer", `{"query":"a"}`, http.Header{"Authorization": {"Bearer tvly-secret"}}, http.StatusOK},
		{"body key", `{"query":"a","api_key":"tvly-secret"}`, nil, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := searchDo(t, http.MethodPost, s.URL+"/search", "application/json", tc.body, tc.header)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %s", code, tc.want, body)
			}
			if code == http.StatusOK {
				var resp struct {
					Results []map[string]any `json:"results"`
				}
				if err := json.Unmarshal([]byte(body), &resp); err != nil {
					t.Fatalf("decode: %v", err)
				}
				if len(resp.Results) != 3 {
					t.Errorf("got %d results, want 3", len(resp.Results))
				}
			}
		})
	}
}
