package search

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"

	"github.com/deer-go/deer-go/internal/testkit"
)

var _ tool.InvokableTool = NewTool(nil, nil)

func newFakeWithImages(t *testing.T) *testkit.Search {
	t.Helper()
	fake := testkit.NewSearch(t)
	fake.Add("gopher",
		testkit.SearchHit{Title: "Gopher", URL: "https://go.dev/gopher", Content: "The Go mascot."},
		testkit.SearchHit{Title: "Gopher art", URL: "https://art.example/gopher", Content: "Drawings <of> gophers & friends."})
	fake.AddImages("gopher",
		testkit.SearchImage{URL: "https://img.example.com/gopher.png", Description: "A blue gopher"},
		testkit.SearchImage{URL: "https://img.example.com/plain.png"})
	return fake
}

func TestToolInfo(t *testing.T) {
	info, err := NewTool(nil, nil).Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "web_search" || info.Desc == "" {
		t.Errorf("info = %+v", info)
	}
	js, err := info.ToJSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"query"`, `"type":"string"`, `"required":["query"]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("schema %s lacks %s", raw, want)
		}
	}
}

// stubEngine is a minimal in-process engine for error paths the fake server
// cannot express.
type stubEngine struct {
	results []Result
	err     error
	gotMax  int
}

func (s *stubEngine) Name() string { return "stub" }
func (s *stubEngine) Search(_ context.Context, _ string, max int) ([]Result, error) {
	s.gotMax = max
	return s.results, s.err
}

func TestToolOutputShape(t *testing.T) {
	fake := newFakeWithImages(t)
	e, err := New(Options{Engine: EngineTavily, TavilyAPIKey: "k", TavilyBaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	tl := NewTool(e, func(context.Context) int { return 1 })
	out, err := tl.InvokableRun(t.Context(), `{"query":"gopher facts","extra":true}`)
	if err != nil {
		t.Fatalf("InvokableRun: %v", err)
	}
	const want = `[{"type":"page","title":"Gopher","url":"https://go.dev/gopher","content":"The Go mascot.","score":0.9},` +
		`{"type":"image","image_url":"https://img.example.com/gopher.png","image_description":"A blue gopher"}]`
	if out != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}

	// The web UI parses a list of objects keyed by "type".
	var decoded []map[string]any
	if err := json.Unmarshal([]byte(out), &decoded); err != nil {
		t.Fatalf("output is not a JSON array: %v", err)
	}

	tl = NewTool(e, nil)
	out, err = tl.InvokableRun(t.Context(), `{"query":"gopher"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"content":"Drawings <of> gophers & friends."`) {
		t.Errorf("HTML-escaped or missing content: %s", out)
	}
	if !strings.Contains(out, `{"type":"image","image_url":"https://img.example.com/plain.png"}`) {
		t.Errorf("string-shaped image missing: %s", out)
	}
}

func TestToolArgumentsAndErrors(t *testing.T) {
	engineErr := errors.New("backend exploded")
	tests := []struct {
		name    string
		engine  Engine
		max     func(context.Context) int
		args    string
		want    string
		wantErr error // specific error expected
		anyErr  bool  // some error expected
		wantMax int
	}{
		{name: "zero results", engine: &stubEngine{}, args: `{"query":"x"}`, want: "[]", wantMax: 5},
		{name: "nil max func", engine: &stubEngine{}, args: `{"query":"x"}`, want: "[]", wantMax: 5},
		{name: "non-positive max", engine: &stubEngine{}, max: func(context.Context) int { return -1 }, args: `{"query":"x"}`, want: "[]", wantMax: 5},
		{name: "custom max", engine: &stubEngine{}, max: func(context.Context) int { return 9 }, args: `{"query":"x"}`, want: "[]", wantMax: 9},
		{name: "caps engine output", engine: &stubEngine{results: []Result{{URL: "https://a.example"}, {URL: "https://b.example"}}},
			max: func(context.Context) int { return 1 }, args: `{"query":"x"}`, want: `[{"type":"page","url":"https://a.example"}]`, wantMax: 1},
		{name: "invalid json", engine: &stubEngine{}, args: `{query:`, anyErr: true},
		{name: "wrong type", engine: &stubEngine{}, args: `{"query":42}`, anyErr: true},
		{name: "missing query", engine: &stubEngine{}, args: `{"q":"x"}`, wantErr: ErrEmptyQuery},
		{name: "blank query", engine: &stubEngine{}, args: `{"query":"  "}`, wantErr: ErrEmptyQuery},
		{name: "null", engine: &stubEngine{}, args: `null`, wantErr: ErrEmptyQuery},
		{name: "engine error wrapped", engine: &stubEngine{err: engineErr}, args: `{"query":"x"}`, wantErr: engineErr},
		{name: "no engine", engine: nil, args: `{"query":"x"}`, anyErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := NewTool(tc.engine, tc.max).InvokableRun(t.Context(), tc.args)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			case tc.anyErr:
				if err == nil {
					t.Fatalf("expected error, got %q", out)
				}
				return
			case err != nil:
				t.Fatalf("InvokableRun: %v", err)
			}
			if out != tc.want {
				t.Errorf("out = %s, want %s", out, tc.want)
			}
			if got := tc.engine.(*stubEngine).gotMax; got != tc.wantMax {
				t.Errorf("engine got max %d, want %d", got, tc.wantMax)
			}
		})
	}
}

func TestToolThroughEveryEngine(t *testing.T) {
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			fake := testkit.NewSearchAll(t)
			e, err := New(engineOptions(fake, name))
			if err != nil {
				t.Fatal(err)
			}
			out, err := NewTool(e, func(context.Context) int { return 2 }).InvokableRun(t.Context(), `{"query":"solar power"}`)
			if err != nil {
				t.Fatal(err)
			}
			var got []Result
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("decode %s: %v", out, err)
			}
			if len(got) != 2 || got[0].Type != TypePage || !strings.HasPrefix(got[0].URL, "https://example.com/") {
				t.Errorf("got %+v", got)
			}
		})
	}
}
