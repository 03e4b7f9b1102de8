package crawl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestFetchContent(t *testing.T) {
	site := testkit.NewSite(t)
	site.Add("/notes.md", "text/markdown; charset=utf-8", "# Notes\n\n* one\n* two\n")
	site.Add("/untyped.html", "", "<!doctype html><html><head><title>Sniffed</title></head><body><p>Sniffed body text.</p></body></html>")
	site.Add("/short", "text/html", "<html><head><title>Tiny</title></head><body><nav><a href='/x'>Menu</a></nav><p>Only a line.</p></body></html>")
	site.Add("/mislabelled", "application/octet-stream", "<!DOCTYPE html><html><head><title>Mislabelled</title></head><body><p>Served as octet-stream.</p></body></html>")
	site.Add("/utf16.txt", "text/plain; charset=utf-16le", "h\x00i\x00 \x00\xe9\x00")

	tests := []struct {
		path      string
		wantType  string
		wantTitle string
		contains  []string
		excludes  []string
	}{
		{
			path:      "/article",
			wantType:  "text/html",
			wantTitle: testkit.SiteArticleTitle,
			contains: []string{
				"# " + testkit.SiteArticleTitle,
				"## The electrolyte problem",
				"### Manufacturing hurdles",
				"[2023 review of solid electrolytes](https://example.org/reviews/solid-electrolytes)",
				"[our dendrite coverage](" + site.URL + "/research/dendrites)",
				"- Higher energy density thanks to lithium-metal anodes",
				"| Property | Lithium-ion | Solid-state |",
				"| Energy density (Wh/kg) | 250 | 400 |",
			},
			excludes: []string{"Trending", "cookies", "Subscribe", "All rights reserved", "analytics", "font-family"},
		},
		{
			path:      "/article2",
			wantType:  "text/html",
			wantTitle: testkit.SiteArticle2Title,
			contains:  []string{"## From fires to lenses", "1. Open fires on hilltops", "4. Automated electric lights"},
			excludes:  []string{"Sponsored"},
		},
		{
			path:      "/latin1",
			wantType:  "text/html",
			wantTitle: "Café crème à Paris",
			contains:  []string{"Le café crème est une boisson très appréciée", "é, è, à, ç, ô, ü, ñ, Å"},
		},
		{
			path:      "/gbk",
			wantType:  "text/html",
			wantTitle: "深度研究简介",
			contains:  []string{"# 深度研究简介\n\n深度研究是一种结合搜索引擎", "本页面使用 GBK 编码"},
			excludes:  []string{"## 深度研究简介"},
		},
		{
			path:     "/plain.txt",
			wantType: "text/plain",
			contains: []string{"Plain text notes\n================"},
		},
		{
			path:     "/data.json",
			wantType: "application/json",
			contains: []string{`{"name":"deer-go","tags":["research","crawl"],"note":"naïve café"}`},
		},
		{
			path:     "/notes.md",
			wantType: "text/markdown",
			contains: []string{"# Notes\n\n* one\n* two"},
		},
		{
			path:      "/untyped.html",
			wantType:  "text/html",
			wantTitle: "Sniffed",
			contains:  []string{"Sniffed body text."},
		},
		{
			// Too little for readability: the whole page is converted.
			path:      "/short",
			wantType:  "text/html",
			wantTitle: "Tiny",
			contains:  []string{"Only a line.", "Menu"},
		},
		{
			path:      "/mislabelled",
			wantType:  "text/html",
			wantTitle: "Mislabelled",
			contains:  []string{"Served as octet-stream."},
		},
		{
			path:     "/utf16.txt",
			wantType: "text/plain",
			contains: []string{"hi é"},
		},
	}
	c := New(Options{AllowPrivate: true})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			page, err := c.Fetch(context.Background(), site.URL+tt.path)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if page.ContentType != tt.wantType {
				t.Errorf("ContentType = %q, want %q", page.ContentType, tt.wantType)
			}
			if !strings.HasPrefix(page.Title, tt.wantTitle) || (tt.wantTitle == "" && page.Title != "") {
				t.Errorf("Title = %q, want %q", page.Title, tt.wantTitle)
			}
			if page.Truncated {
				t.Error("unexpectedly truncated")
			}
			if page.URL != site.URL+tt.path || page.FinalURL != site.URL+tt.path {
				t.Errorf("URL/FinalURL = %q/%q", page.URL, page.FinalURL)
			}
			if !utf8.ValidString(page.Markdown) {
				t.Error("markdown is not valid UTF-8")
			}
			for _, want := range tt.contains {
				if !strings.Contains(page.Markdown, want) {
					t.Errorf("markdown lacks %q\n--- markdown ---\n%s", want, page.Markdown)
				}
			}
			for _, bad := range tt.excludes {
				if strings.Contains(page.Markdown, bad) {
					t.Errorf("markdown keeps clutter %q", bad)
				}
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	site := testkit.NewSite(t)
	site.Add("/blob", "", "\x00\x01\x02\x03PK\x03\x04binary")
	site.Add("/zip", "application/octet-stream", "PK\x03\x04\x14\x00\x00\x00")
	tests := []struct {
		path       string
		wantStatus int
		wantType   string
	}{
		{path: "/missing", wantStatus: 404},
		{path: "/image.png", wantType: "image/png"},
		{path: "/blob", wantType: "application/octet-stream"},
		{path: "/zip", wantType: "application/zip"},
	}
	c := New(Options{AllowPrivate: true})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := c.Fetch(context.Background(), site.URL+tt.path)
			if err == nil {
				t.Fatal("want error")
			}
			if tt.wantStatus != 0 {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != tt.wantStatus {
					t.Fatalf("err = %v, want StatusError %d", err, tt.wantStatus)
				}
				if !strings.Contains(err.Error(), "404") {
					t.Errorf("error %q lacks the status code", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsupportedContentType) || !strings.Contains(err.Error(), "unsupported content type "+tt.wantType) {
				t.Fatalf("err = %v, want unsupported content type %s", err, tt.wantType)
			}
		})
	}
}

func TestFetchLimits(t *testing.T) {
	site := testkit.NewSite(t)
	site.Add("/big.txt", "text/plain; charset=utf-8", strings.Repeat("0123456789abcdef", testkit.SiteLargeBytes/16))
	tests := []struct {
		name      string
		opts      Options
		path      string
		truncated bool
		check     func(t *testing.T, p *Page)
	}{
		{
			// Plain text keeps this fast under -race; the HTML path is
			// covered by the smaller cap below.
			name: "default body cap", opts: Options{MaxContentChars: 10 << 20}, path: "/big.txt", truncated: true,
			check: func(t *testing.T, p *Page) {
				if len(p.Markdown) != DefaultMaxBytes {
					t.Errorf("got %d bytes, want exactly the %d byte cap", len(p.Markdown), DefaultMaxBytes)
				}
			},
		},
		{
			name: "body cap cuts the large page", opts: Options{MaxBytes: 256 << 10}, path: "/large", truncated: true,
			check: func(t *testing.T, p *Page) {
				if strings.Contains(p.Markdown, "THE END OF THE LARGE PAGE") {
					t.Error("content past the byte cap leaked through")
				}
			},
		},
		{
			name: "small body cap", opts: Options{MaxBytes: 2000}, path: "/article", truncated: true,
			check: func(t *testing.T, p *Page) {
				if strings.Contains(p.Markdown, "premium models") {
					t.Error("content past the byte cap leaked through")
				}
			},
		},
		{
			name: "content chars cap on multibyte text", opts: Options{MaxContentChars: 25}, path: "/gbk", truncated: true,
			check: func(t *testing.T, p *Page) {
				if n := utf8.RuneCountInString(p.Markdown); n != 25 {
					t.Errorf("rune count = %d, want 25", n)
				}
				if !utf8.ValidString(p.Markdown) {
					t.Error("cut inside a rune")
				}
			},
		},
		{
			name: "content under both caps", opts: Options{MaxContentChars: 100000}, path: "/article2", truncated: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.AllowPrivate = true
			page, err := New(tt.opts).Fetch(context.Background(), site.URL+tt.path)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if page.Truncated != tt.truncated {
				t.Errorf("Truncated = %v, want %v", page.Truncated, tt.truncated)
			}
			if tt.check != nil {
				tt.check(t, page)
			}
		})
	}
}

func TestFetchTimeout(t *testing.T) {
	site := testkit.NewSite(t)
	tests := []struct {
		name   string
		opts   Options
		parent time.Duration
	}{
		{"crawler timeout", Options{AllowPrivate: true, Timeout: 150 * time.Millisecond}, 0},
		{"caller deadline", Options{AllowPrivate: true}, 150 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.parent > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.parent)
				defer cancel()
			}
			start := time.Now()
			_, err := New(tt.opts).Fetch(ctx, site.URL+"/slow")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want deadline exceeded", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v, timeout not enforced", d)
			}
		})
	}
}

func TestFetchRedirects(t *testing.T) {
	site := testkit.NewSite(t)
	tests := []struct {
		name         string
		maxRedirects int
		path         string
		wantErr      string
	}{
		{"single redirect", 0, "/redirect", ""},
		{"chain within default limit", 0, "/redirect-chain/4", ""}, // 5 redirects
		{"chain over default limit", 0, "/redirect-chain/5", "stopped after 5 redirects"},
		{"chain at custom limit", 2, "/redirect-chain/1", ""},
		{"chain over custom limit", 2, "/redirect-chain/2", "stopped after 2 redirects"},
		{"redirects disabled", -1, "/redirect", "stopped after 0 redirects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Options{AllowPrivate: true, MaxRedirects: tt.maxRedirects})
			page, err := c.Fetch(context.Background(), site.URL+tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if page.FinalURL != site.URL+"/article" || page.URL != site.URL+tt.path {
				t.Errorf("URL=%q FinalURL=%q", page.URL, page.FinalURL)
			}
			if !strings.HasPrefix(page.Title, testkit.SiteArticleTitle) {
				t.Errorf("Title = %q", page.Title)
			}
		})
	}
}

func TestTruncateRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"héllo", 2, "hé", true},
		{"深度研究", 3, "深度研", true},
		{"深度研究", 4, "深度研究", false},
		{"a😀b", 2, "a😀", true},
		{"", 0, "", false},
		{"abc", 0, "", true},
	}
	for _, tt := range tests {
		got, cut := truncateRunes(tt.in, tt.n)
		if got != tt.want || cut != tt.cut {
			t.Errorf("truncateRunes(%q, %d) = %q, %v; want %q, %v", tt.in, tt.n, got, cut, tt.want, tt.cut)
		}
	}
}
