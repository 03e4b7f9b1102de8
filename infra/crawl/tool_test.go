package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestToolInfo(t *testing.T) {
	info, err := NewTool(New(Options{})).Info(context.Background())
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Name != "crawl_tool" {
		t.Errorf("Name = %q", info.Name)
	}
	if info.Desc == "" {
		t.Error("empty description")
	}
	js, err := info.ToJSONSchema()
	if err != nil {
		t.Fatalf("ToJSONSchema: %v", err)
	}
	raw, err := json.Marshal(js)
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	var got struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("unmarshal schema: %v", err)
	}
	if p, ok := got.Properties["url"]; !ok || p.Type != string(schema.String) || len(got.Properties) != 1 {
		t.Errorf("properties = %+v, want only url:string", got.Properties)
	}
	if len(got.Required) != 1 || got.Required[0] != "url" {
		t.Errorf("required = %v, want [url]", got.Required)
	}
}

func TestToolRun(t *testing.T) {
	site := testkit.NewSite(t)
	tests := []struct {
		name      string
		opts      Options
		args      string
		wantURL   string
		wantTitle string
		contains  []string
		wantErr   error
		errIs     func(error) bool
	}{
		{
			name:      "article via redirect reports final url",
			opts:      Options{AllowPrivate: true},
			args:      `{"url": "` + site.URL + `/redirect"}`,
			wantURL:   site.URL + "/article",
			wantTitle: testkit.SiteArticleTitle,
			contains:  []string{"## The electrolyte problem", "| Property | Lithium-ion | Solid-state |"},
		},
		{
			name:     "truncation is announced",
			opts:     Options{AllowPrivate: true, MaxContentChars: 40},
			args:     `{"url": "` + site.URL + `/plain.txt"}`,
			wantURL:  site.URL + "/plain.txt",
			contains: []string{"Plain text notes", "[content truncated"},
		},
		{
			name:    "guard refusal",
			opts:    Options{},
			args:    `{"url": "` + site.URL + `/article"}`,
			wantErr: ErrBlocked,
		},
		{
			name: "http error",
			opts: Options{AllowPrivate: true},
			args: `{"url": "` + site.URL + `/missing"}`,
			errIs: func(err error) bool {
				var se *StatusError
				return errors.As(err, &se) && se.Code == 404
			},
		},
		{name: "missing url", args: `{}`, wantErr: ErrBadArguments},
		{name: "blank url", args: `{"url": "  "}`, wantErr: ErrBadArguments},
		{name: "not json", args: `url=http://x`, wantErr: ErrBadArguments},
		{name: "bad scheme", args: `{"url": "file:///etc/passwd"}`, wantErr: ErrBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := NewTool(New(tt.opts)).InvokableRun(context.Background(), tt.args)
			if tt.wantErr != nil || tt.errIs != nil {
				if err == nil {
					t.Fatalf("want error, got %s", out)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.errIs != nil && !tt.errIs(err) {
					t.Fatalf("err = %v has the wrong cause", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("InvokableRun: %v", err)
			}
			var fields map[string]any
			if err := json.Unmarshal([]byte(out), &fields); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if len(fields) != 3 {
				t.Errorf("fields = %v, want exactly url, title, crawled_content", fields)
			}
			var res ToolResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if res.URL != tt.wantURL {
				t.Errorf("url = %q, want %q", res.URL, tt.wantURL)
			}
			if !strings.HasPrefix(res.Title, tt.wantTitle) {
				t.Errorf("title = %q, want prefix %q", res.Title, tt.wantTitle)
			}
			for _, want := range tt.contains {
				if !strings.Contains(res.CrawledContent, want) {
					t.Errorf("crawled_content lacks %q", want)
				}
			}
			for _, key := range []string{`"url":`, `"title":`, `"crawled_content":`} {
				if !strings.Contains(out, key) {
					t.Errorf("output lacks key %s", key)
				}
			}
		})
	}
}
