package crawl

import (
	"container/list"
	"sync"
)

// Defaults for NewCache arguments that are not positive.
const (
	DefaultCacheEntries = 256
	DefaultCacheBytes   = 32 << 20
)

// pageOverhead approximates the bookkeeping cost of one entry, so that many
// tiny pages still count against the byte budget.
const pageOverhead = 256

// Cache is an LRU of fetched pages bounded by entry count and by the bytes
// of their text. It is meant to live for one research run, so the same
// source cited by several steps is downloaded once. Safe for concurrent use;
// a nil *Cache caches nothing.
type Cache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // front is most recently used; values are *cacheEntry
	entries    map[string]*list.Element
}

type cacheEntry struct {
	key  string
	page Page
	size int64
}

// NewCache returns an empty cache holding at most maxEntries pages and
// maxBytes of page text.
func NewCache(maxEntries int, maxBytes int64) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{
		maxEntries: maxEntries,
		maxBytes:   maxBytes,
		order:      list.New(),
		entries:    make(map[string]*list.Element),
	}
}

// Len reports the number of cached pages.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Bytes reports the accounted size of the cached pages.
func (c *Cache) Bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func pageSize(p *Page) int64 {
	return int64(len(p.URL)+len(p.FinalURL)+len(p.Title)+len(p.Markdown)+len(p.ContentType)) + pageOverhead
}

// get returns a copy of the page stored under key and marks it recently used.
func (c *Cache) get(key string) (Page, bool) {
	if c == nil {
		return Page{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return Page{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).page, true
}

// put stores page under key, evicting least recently used pages until both
// bounds hold. A page larger than the whole byte budget is not stored.
func (c *Cache) put(key string, page Page) {
	if c == nil {
		return
	}
	size := pageSize(&page)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.removeLocked(el)
	}
	if size > c.maxBytes {
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, page: page, size: size})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.removeLocked(c.order.Back())
	}
}

func (c *Cache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
}
