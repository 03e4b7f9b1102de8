package crawl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestCacheLRU(t *testing.T) {
	page := func(s string) Page { return Page{URL: s, Markdown: s} }
	tests := []struct {
		name       string
		entries    int
		bytes      int64
		ops        []string // "+k" puts k, "?k" gets k
		wantKeys   []string
		wantGone   []string
		wantMaxLen int
	}{
		{name: "count bound evicts oldest", entries: 2, bytes: 1 << 20, ops: []string{"+a", "+b", "+c"},
			wantKeys: []string{"b", "c"}, wantGone: []string{"a"}},
		{name: "get refreshes recency", entries: 2, bytes: 1 << 20, ops: []string{"+a", "+b", "?a", "+c"},
			wantKeys: []string{"a", "c"}, wantGone: []string{"b"}},
		{name: "replacing a key keeps one entry", entries: 2, bytes: 1 << 20, ops: []string{"+a", "+a", "+b"},
			wantKeys: []string{"a", "b"}},
		{name: "byte bound evicts oldest", entries: 100, bytes: 2*pageOverhead + 10, ops: []string{"+a", "+b", "+c"},
			wantKeys: []string{"b", "c"}, wantGone: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache(tc.entries, tc.bytes)
			for _, op := range tc.ops {
				key := op[1:]
				switch op[0] {
				case '+':
					c.put(key, page(key))
				case '?':
					if _, ok := c.get(key); !ok {
						t.Fatalf("%s missing", key)
					}
				}
			}
			for _, k := range tc.wantKeys {
				if p, ok := c.get(k); !ok || p.Markdown != k {
					t.Errorf("get(%s) = %+v, %v", k, p, ok)
				}
			}
			for _, k := range tc.wantGone {
				if _, ok := c.get(k); ok {
					t.Errorf("%s should have been evicted", k)
				}
			}
			if c.Len() != len(tc.wantKeys) {
				t.Errorf("Len = %d, want %d", c.Len(), len(tc.wantKeys))
			}
			if c.Bytes() > tc.bytes {
				t.Errorf("Bytes = %d over the %d budget", c.Bytes(), tc.bytes)
			}
		})
	}
}

func TestCacheOversizedAndNil(t *testing.T) {
	c := NewCache(10, 1000)
	c.put("big", Page{Markdown: strings.Repeat("x", 2000)})
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("oversized page stored: len %d bytes %d", c.Len(), c.Bytes())
	}
	c.put("k", Page{Markdown: "small"})
	c.put("k", Page{Markdown: strings.Repeat("x", 2000)})
	if _, ok := c.get("k"); ok {
		t.Error("stale entry survived an oversized replacement")
	}
	if c.Bytes() != 0 {
		t.Errorf("Bytes = %d after removal", c.Bytes())
	}

	var nilCache *Cache
	nilCache.put("k", Page{})
	if _, ok := nilCache.get("k"); ok || nilCache.Len() != 0 || nilCache.Bytes() != 0 {
		t.Error("nil cache must cache nothing")
	}
	if d := NewCache(0, 0); d.maxEntries != DefaultCacheEntries || d.maxBytes != DefaultCacheBytes {
		t.Errorf("defaults not applied: %d %d", d.maxEntries, d.maxBytes)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(16, 64<<10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				key := fmt.Sprintf("k%d", (g*7+i)%40)
				if p, ok := c.get(key); ok && p.URL != key {
					t.Errorf("get(%s) returned page for %s", key, p.URL)
					return
				}
				c.put(key, Page{URL: key, Markdown: strings.Repeat("m", i%300)})
			}
		})
	}
	wg.Wait()
	if c.Len() > 16 || c.Bytes() > 64<<10 {
		t.Errorf("bounds broken: len %d bytes %d", c.Len(), c.Bytes())
	}
}

func TestWithCache(t *testing.T) {
	site := testkit.NewSite(t)
	base := New(Options{AllowPrivate: true})
	cache := NewCache(0, 0)
	cached := base.WithCache(cache)
	ctx := context.Background()

	first, err := cached.Fetch(ctx, site.URL+"/article")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		crawler  *Crawler
		url      string
		wantHits int
	}{
		{name: "repeat is served from cache", crawler: cached, url: site.URL + "/article", wantHits: 1},
		{name: "fragment is ignored", crawler: cached, url: site.URL + "/article#section-2", wantHits: 1},
		{name: "original crawler is uncached", crawler: base, url: site.URL + "/article", wantHits: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := tt.crawler.Fetch(ctx, tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := site.Hits("/article"); got != tt.wantHits {
				t.Errorf("site hits = %d, want %d", got, tt.wantHits)
			}
			if page.URL != tt.url {
				t.Errorf("URL = %q, want the requested %q", page.URL, tt.url)
			}
			if page.Markdown != first.Markdown || page.Title != first.Title {
				t.Error("cached page differs from the fetched one")
			}
		})
	}

	// A caller modifying its page must not corrupt the cache.
	first.Markdown = "scribbled"
	again, err := cached.Fetch(ctx, site.URL+"/article")
	if err != nil || again.Markdown == "scribbled" {
		t.Errorf("cache shares memory with callers: %v", err)
	}

	// Failures are not cached.
	for range 2 {
		if _, err := cached.Fetch(ctx, site.URL+"/missing"); err == nil {
			t.Fatal("want 404")
		}
	}
	if got := site.Hits("/missing"); got != 2 {
		t.Errorf("404 hits = %d, want 2", got)
	}

	// A stricter crawler sharing the cache still applies its own guard.
	strict := New(Options{}).WithCache(cache)
	if _, err := strict.Fetch(ctx, site.URL+"/article"); !errors.Is(err, ErrBlocked) {
		t.Errorf("strict crawler served a private page from the shared cache: %v", err)
	}
}
