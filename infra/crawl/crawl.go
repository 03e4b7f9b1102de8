// Package crawl fetches web pages and PDFs for the research agents and turns
// them into markdown. Every connection goes through an SSRF guard that vets
// the resolved IP at connect time, including on redirects. Optionally pages
// are read through the Jina reader API instead (the target is still vetted
// before it is handed over) and served from a per-run Cache.
package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by New for zero-valued Options fields.
const (
	DefaultTimeout         = 20 * time.Second
	DefaultMaxBytes        = 5 << 20
	DefaultMaxRedirects    = 5
	DefaultMaxContentChars = 30000
	DefaultUserAgent       = "Mozilla/5.0 (compatible; deer-go/1.0; +https://github.com/deer-go/deer-go)"
)

// Reader backends selectable through Options.Reader.
const (
	ReaderDirect = "direct"
	ReaderJina   = "jina"
)

// DefaultJinaBaseURL is the Jina reader endpoint used when Options.Reader is
// "jina" and no JinaBaseURL is set.
const DefaultJinaBaseURL = "https://r.jina.ai"

// Errors returned (wrapped) by Fetch.
var (
	// ErrUnsupportedContentType is returned for responses that are neither
	// HTML, PDF nor text-like (images, archives, ...).
	ErrUnsupportedContentType = errors.New("crawl: unsupported content type")
	// ErrTooLarge is returned for documents that cannot be cut short, such
	// as PDFs, when they exceed MaxBytes.
	ErrTooLarge = errors.New("crawl: document too large")
	// ErrInvalidPDF is returned when a PDF cannot be parsed.
	ErrInvalidPDF = errors.New("crawl: unreadable PDF")
	// ErrBadOptions reports an unusable Options value.
	ErrBadOptions = errors.New("crawl: bad options")
)

// StatusError reports a non-2xx HTTP response.
type StatusError struct {
	URL    string
	Code   int
	Status string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("crawl: %s returned HTTP status %d (%s)", e.URL, e.Code, e.Status)
}

// Options configures a Crawler. Zero values select the defaults above.
type Options struct {
	// AllowPrivate (CRAWL_ALLOW_PRIVATE) permits loopback, private,
	// link-local and other non-public targets. Needed for tests.
	AllowPrivate bool
	// Timeout bounds the whole fetch: connect, redirects and body.
	Timeout time.Duration
	// MaxBytes caps the body read; longer bodies are cut, not rejected.
	MaxBytes int64
	// MaxRedirects is the number of redirects followed; negative disables
	// redirects entirely.
	MaxRedirects int
	UserAgent    string
	// MaxContentChars caps the returned markdown, counted in runes.
	MaxContentChars int

	// Reader is "direct" (default, also for "") to fetch pages ourselves or
	// "jina" to read them through the Jina reader API.
	Reader string
	// JinaBaseURL is the reader endpoint; default https://r.jina.ai.
	JinaBaseURL string
	// JinaAPIKey (JINA_API_KEY) is optional; without it Jina applies a lower
	// rate limit.
	JinaAPIKey string
}

// Validate reports options that New would accept but Fetch could not use.
func (o Options) Validate() error {
	switch strings.ToLower(strings.TrimSpace(o.Reader)) {
	case "", ReaderDirect:
		return nil
	case ReaderJina:
		if _, err := jinaBase(o.JinaBaseURL); err != nil {
			return err
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown reader %q (want %q or %q)", ErrBadOptions, o.Reader, ReaderDirect, ReaderJina)
	}
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.MaxContentChars <= 0 {
		o.MaxContentChars = DefaultMaxContentChars
	}
	o.Reader = strings.ToLower(strings.TrimSpace(o.Reader))
	if o.Reader == "" {
		o.Reader = ReaderDirect
	}
	return o
}

// Page is a fetched and converted document.
type Page struct {
	URL         string // as requested
	FinalURL    string // after redirects
	Title       string
	Markdown    string
	ContentType string // media type without parameters
	// Truncated is set when the body hit MaxBytes or the markdown hit
	// MaxContentChars.
	Truncated bool
}

// Crawler is safe for concurrent use.
type Crawler struct {
	opts   Options
	dialer *guardedDialer
	client *http.Client
	// jina talks to the operator-configured reader endpoint, so it does not
	// go through the guarded dialer; targets are vetted before each call.
	jina     *http.Client
	jinaBase string
	jinaErr  error // invalid JinaBaseURL, reported by every Jina fetch
	cache    *Cache
}

// New builds a Crawler with its own transport. The transport ignores
// HTTP_PROXY and friends: a proxy would connect on our behalf and bypass the
// connect-time IP check.
func New(opts Options) *Crawler {
	opts = opts.withDefaults()
	nd := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c := &Crawler{
		opts: opts,
		dialer: &guardedDialer{
			allowPrivate: opts.AllowPrivate,
			lookup:       defaultLookup,
			dial:         nd.DialContext,
		},
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            c.dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	c.client = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	if opts.Reader == ReaderJina {
		// New cannot fail, so an invalid base URL is reported by Fetch
		// (and up front by Validate).
		c.jinaBase, c.jinaErr = jinaBase(opts.JinaBaseURL)
		c.jina = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: opts.Timeout,
		}}
	}
	return c
}

// WithCache returns a crawler that shares c's connections and settings and
// answers repeated URLs from cache. Only successful fetches are stored.
func (c *Crawler) WithCache(cache *Cache) *Crawler {
	cp := *c
	cp.cache = cache
	return &cp
}

func (c *Crawler) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > c.opts.MaxRedirects {
		return fmt.Errorf("crawl: stopped after %d redirects", max(c.opts.MaxRedirects, 0))
	}
	// The dialer re-checks the address; this catches scheme and credential
	// tricks in the Location header.
	return checkURL(req.URL)
}

// Fetch downloads rawURL and converts it to markdown. HTML goes through
// readability extraction first, PDFs through text extraction; text, markdown
// and JSON are returned as is.
func (c *Crawler) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	u, err := validateURL(rawURL)
	if err != nil {
		return nil, err
	}
	u.Fragment, u.RawFragment = "", ""
	key := c.cacheKey(u)
	if page, ok := c.cache.get(key); ok {
		slog.DebugContext(ctx, "crawl: cache hit", "url", u.Redacted())
		page.URL = rawURL
		return &page, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()

	var page *Page
	switch c.opts.Reader {
	case ReaderDirect:
		page, err = c.fetchDirect(ctx, rawURL, u)
	case ReaderJina:
		page, err = c.fetchJina(ctx, rawURL, u)
	default:
		err = fmt.Errorf("%w: unknown reader %q", ErrBadOptions, c.opts.Reader)
	}
	if err != nil {
		return nil, err
	}
	var shortened bool
	page.Markdown, shortened = truncateRunes(page.Markdown, c.opts.MaxContentChars)
	page.Truncated = page.Truncated || shortened
	c.cache.put(key, *page)
	return page, nil
}

// cacheKey includes everything that changes what a URL yields or whether it
// may be fetched at all, so crawlers with different policies can share a
// cache without one serving the other a page it would have refused.
func (c *Crawler) cacheKey(u *url.URL) string {
	return fmt.Sprintf("%s|%t|%d|%d|%s", c.opts.Reader, c.opts.AllowPrivate, c.opts.MaxBytes, c.opts.MaxContentChars, u.String())
}

func (c *Crawler) fetchDirect(ctx context.Context, rawURL string, u *url.URL) (*Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("crawl: build request: %w", err)
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1")

	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("crawl: fetch %s: %w", u.Redacted(), err)
	}
	defer func() {
		if cerr := resp.Body.Close(); cerr != nil {
			slog.DebugContext(ctx, "crawl: close body", "url", u.Redacted(), "err", cerr)
		}
	}()

	final := resp.Request.URL
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{URL: final.Redacted(), Code: resp.StatusCode, Status: http.StatusText(resp.StatusCode)}
	}

	header := resp.Header.Get("Content-Type")
	media := mediaType(header)
	if media == "application/octet-stream" {
		// Often a missing type in disguise; let the bytes decide.
		header, media = "", ""
	}
	if media != "" && classify(media) == kindUnsupported {
		return nil, fmt.Errorf("%w %s (%s)", ErrUnsupportedContentType, media, final.Redacted())
	}
	if classify(media) == kindPDF && resp.ContentLength > c.opts.MaxBytes {
		return nil, fmt.Errorf("%w: PDF %s is %d bytes, limit %d", ErrTooLarge, final.Redacted(), resp.ContentLength, c.opts.MaxBytes)
	}

	body, cut, err := readCapped(resp.Body, c.opts.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("crawl: read %s: %w", final.Redacted(), err)
	}
	if media == "" {
		header = http.DetectContentType(body)
		media = mediaType(header)
	}
	if classify(media) == kindPDF && cut {
		// A PDF's cross-reference table sits at the end: a cut file is
		// unreadable, so say why instead of reporting a parse error.
		return nil, fmt.Errorf("%w: PDF %s exceeds %d bytes", ErrTooLarge, final.Redacted(), c.opts.MaxBytes)
	}
	if classify(media) == kindUnsupported {
		return nil, fmt.Errorf("%w %s (sniffed, %s)", ErrUnsupportedContentType, media, final.Redacted())
	}

	page := &Page{URL: rawURL, FinalURL: final.String(), ContentType: media, Truncated: cut}
	switch classify(media) {
	case kindHTML:
		page.Title, page.Markdown, err = htmlToMarkdown(ctx, body, header, final)
		if err != nil {
			return nil, fmt.Errorf("crawl: convert %s: %w", final.Redacted(), err)
		}
	case kindPDF:
		var more bool
		page.Title, page.Markdown, more, err = pdfToText(body, c.opts.MaxContentChars)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrInvalidPDF, final.Redacted(), err)
		}
		page.Truncated = page.Truncated || more
	default:
		page.Markdown = decodeText(body, header, media)
	}

	slog.DebugContext(ctx, "crawl: fetched", "url", final.Redacted(), "type", media,
		"bytes", len(body), "chars", len(page.Markdown), "truncated", page.Truncated)
	return page, nil
}

// readCapped reads at most limit bytes and reports whether more were
// available.
func readCapped(r io.Reader, limit int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, fmt.Errorf("read body: %w", err)
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}

type contentKind int

const (
	kindUnsupported contentKind = iota
	kindHTML
	kindText
	kindJSON
	kindPDF
)

func mediaType(header string) string {
	if header == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		// Tolerate broken parameters; the type before ';' is what matters.
		mt, _, _ = strings.Cut(header, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

func classify(media string) contentKind {
	switch {
	case media == "text/html", media == "application/xhtml+xml":
		return kindHTML
	case media == "application/json", strings.HasSuffix(media, "+json"):
		return kindJSON
	case media == "application/pdf", media == "application/x-pdf":
		return kindPDF
	case strings.HasPrefix(media, "text/"):
		return kindText
	default:
		return kindUnsupported
	}
}

// truncateRunes keeps at most n runes of s, never splitting a rune.
func truncateRunes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}
