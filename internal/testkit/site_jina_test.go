package testkit

import (
	"net/http"
	"strings"
	"testing"
)

func TestJinaReader(t *testing.T) {
	j := NewJinaReader(t)
	j.Add("https://example.com/a?b=c", JinaPage{Title: "Example", Content: "# Example\n\nBody text."})
	tests := []struct {
		name     string
		target   string
		header   http.Header
		key      string
		wantCode int
		want     []string
	}{
		{name: "json", target: "https://example.com/a?b=c", header: http.Header{"Accept": {"application/json"}}, wantCode: 200,
			want: []string{`"title":"Example"`, `"url":"https://example.com/a?b=c"`, `Body text.`}},
		{name: "text", target: "https://example.com/a?b=c", wantCode: 200,
			want: []string{"Title: Example\n", "URL Source: https://example.com/a?b=c\n", "Markdown Content:\n# Example"}},
		{name: "unknown target", target: "https://nowhere.example/", wantCode: 422, want: []string{"Failed to goto"}},
		{name: "no target", target: "", wantCode: 400},
		{name: "key required", target: "https://example.com/a?b=c", key: "jk", wantCode: 401},
		{name: "key given", target: "https://example.com/a?b=c", key: "jk", header: http.Header{"Authorization": {"Bearer jk"}}, wantCode: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j.RequireKey(tc.key)
			code, body := searchDo(t, http.MethodGet, j.URL+"/"+tc.target, "", "", tc.header)
			if code != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", code, tc.wantCode, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q: %s", w, body)
				}
			}
		})
	}
	reqs := j.Requests()
	if len(reqs) != len(tests) || reqs[0].Target != "https://example.com/a?b=c" || reqs[0].Accept != "application/json" {
		t.Errorf("requests = %+v", reqs)
	}
}
