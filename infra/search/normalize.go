package search

import (
	"net/url"
	"strings"
)

// Normalize cleans results from any engine: it trims text, drops pages and
// images without a usable http(s) URL, removes duplicates (by URL with
// case-insensitive scheme/host, no fragment, no trailing slash), keeps at most
// max pages and max images (max <= 0 means no limit) and puts images after
// pages. The returned slice is never nil.
func Normalize(in []Result, max int) []Result {
	pages := make([]Result, 0, len(in))
	var images []Result
	seen := make(map[string]struct{}, len(in))
	for _, r := range in {
		typ := strings.ToLower(strings.TrimSpace(r.Type))
		switch typ {
		case "", TypePage:
			if max > 0 && len(pages) >= max {
				continue
			}
			key, ok := canonicalURL(r.URL)
			if !ok {
				continue
			}
			if _, dup := seen["p "+key]; dup {
				continue
			}
			seen["p "+key] = struct{}{}
			pages = append(pages, Result{
				Type:    TypePage,
				Title:   strings.TrimSpace(r.Title),
				URL:     strings.TrimSpace(r.URL),
				Content: strings.TrimSpace(r.Content),
				Score:   r.Score,
			})
		case TypeImage:
			if max > 0 && len(images) >= max {
				continue
			}
			key, ok := canonicalURL(r.ImageURL)
			if !ok {
				continue
			}
			if _, dup := seen["i "+key]; dup {
				continue
			}
			seen["i "+key] = struct{}{}
			images = append(images, Result{
				Type:             TypeImage,
				ImageURL:         strings.TrimSpace(r.ImageURL),
				ImageDescription: strings.TrimSpace(r.ImageDescription),
			})
		}
	}
	return append(pages, images...)
}

// canonicalURL returns the de-duplication key of raw, or false when raw is
// not an absolute http(s) URL.
func canonicalURL(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u.String(), true
}
