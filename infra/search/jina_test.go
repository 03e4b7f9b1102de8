package search

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJinaRequestShape(t *testing.T) {
	srv := newCaptureServer(t, http.StatusOK, "application/json", `{"code":200,"status":20000,"data":[]}`)
	e, err := NewJina(JinaConfig{APIKey: "jina_abc", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Search(t.Context(), "what is a deer?", 3)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Search = %#v, %v", got, err)
	}
	path, q, h := srv.last(t)
	checks := []struct{ name, got, want string }{
		{"path", path, "/"},
		{"q", q.Get("q"), "what is a deer?"},
		{"accept", h.Get("Accept"), "application/json"},
		{"authorization", h.Get("Authorization"), "Bearer jina_abc"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestParseJina(t *testing.T) {
	long := strings.Repeat("ü", jinaMaxContentRunes+50)
	tests := []struct {
		name    string
		body    string
		want    []Result
		wantErr error
	}{
		{
			name: "content preferred",
			body: `{"code":200,"status":20000,"data":[{"title":"T","url":"https://a.example","description":"short","content":"full text"}]}`,
			want: []Result{{Type: TypePage, Title: "T", URL: "https://a.example", Content: "full text"}},
		},
		{
			name: "description fallback",
			body: `{"code":200,"data":[{"title":"T","url":"https://a.example","description":" short ","content":"  "}]}`,
			want: []Result{{Type: TypePage, Title: "T", URL: "https://a.example", Content: "short"}},
		},
		{name: "null data", body: `{"code":200,"data":null}`, want: []Result{}},
		{name: "error code in body", body: `{"data":null,"code":402,"name":"InsufficientBalanceError","message":"Account balance not enough"}`, wantErr: ErrBackend},
		{name: "not json", body: `Title: x`, wantErr: errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseJina([]byte(tc.body))
			switch {
			case tc.wantErr == errAny:
				if err == nil {
					t.Fatal("want error")
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "402") {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %#v\nwant %#v", got, tc.want)
				}
			}
		})
	}

	got, err := parseJina([]byte(`{"code":200,"data":[{"title":"L","url":"https://l.example","content":"` + long + `"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got[0].Content); n != jinaMaxContentRunes+1 || !strings.HasSuffix(got[0].Content, "…") {
		t.Errorf("long content kept %d runes", n)
	}
}
